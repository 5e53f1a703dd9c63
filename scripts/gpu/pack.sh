#!/usr/bin/env bash
# Packs what a GPU host without Debian's packages or the npm registry needs to run a
# hone session (scripts/gpu-session.sh), into .device/ (git-ignored):
#   hone-portable.tar.gz  hone, every shared library it loads and the dynamic loader
#                         itself, so it runs on any x86-64 Linux whatever its libc;
#                         bin/hone starts it through the bundled loader (nothing leaks
#                         into the servers hone starts: no LD_LIBRARY_PATH)
#   llama-src.tar.xz      the pinned llama.cpp source hone provisions, without the
#                         parts a server build never reads (docs, tests, examples, the
#                         vocab files of other model families): ~10 MB instead of 35
# Usage: scripts/gpu/pack.sh   (builds hone and provisions llama.cpp here first if needed)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/.device
mkdir -p "$out"

[ -x build/src/cli/hone ] || ./scripts/build.sh
hone=build/src/cli/hone
# The pinned source, as `hone provision llama.cpp` fetches it (<cache>/llama.cpp/<tag>-<commit7>/src).
tag=$(awk '$1 == "tag:" {print $2}' data/llama.cpp.yaml)
commit=$(awk '$1 == "commit:" {print $2}' data/llama.cpp.yaml)
src=${HONE_CACHE_DIR:-$HOME/.cache/hone}/llama.cpp/$tag-${commit:0:7}/src
[ -f "$src/CMakeLists.txt" ] || { echo "pack: no llama.cpp source in $src: run hone provision llama.cpp" >&2; exit 1; }
[ "$(git -C "$src" rev-parse HEAD)" = "$commit" ] || { echo "pack: $src is not at the pinned commit" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# hone, its libraries and the loader.
mkdir -p "$stage/hone-portable/bin" "$stage/hone-portable/lib"
cp "$hone" "$stage/hone-portable/bin/hone.bin"
strip "$stage/hone-portable/bin/hone.bin"
ldd "$hone" | awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}' | while read -r lib; do
  cp -L "$lib" "$stage/hone-portable/lib/"
done
loader=$(basename "$(ldd "$hone" | awk '/ld-linux/ {print $1}')")
cat > "$stage/hone-portable/bin/hone" <<WRAP
#!/bin/sh
# hone through its own loader and libraries (packed by scripts/gpu/pack.sh).
here=\$(dirname "\$(readlink -f "\$0")")
exec "\$here/../lib/$loader" --library-path "\$here/../lib" "\$here/hone.bin" "\$@"
WRAP
chmod +x "$stage/hone-portable/bin/hone"
git -C "$root" rev-parse --short HEAD > "$stage/hone-portable/COMMIT"
tar -C "$stage" -czf "$out/hone-portable.tar.gz" hone-portable

# llama.cpp source, pruned; the commit it came from is recorded beside it.
mkdir -p "$stage/llama-src"
git -C "$src" archive --format=tar HEAD -- . ':!docs' ':!models' ':!tests' ':!benches' ':!examples' \
  ':!gguf-py' ':!conversion' ':!tools/server/webui' | tar -x -C "$stage/llama-src"
mkdir -p "$stage/llama-src/models"
cp "$src"/models/ggml-vocab-llama-spm.gguf "$src"/models/ggml-vocab-llama-bpe.gguf "$stage/llama-src/models/"
git -C "$src" rev-parse HEAD > "$stage/llama-src/HONE_PINNED_COMMIT"
tar -C "$stage" -cf - llama-src | xz -T0 -6 > "$out/llama-src.tar.xz"
ls -la "$out"/hone-portable.tar.gz "$out"/llama-src.tar.xz
echo "pack: done; carry .device with the device tool (scripts/gpu-session.sh)"
