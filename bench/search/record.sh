#!/usr/bin/env bash
# Records the response surface bench/search/surface-llama-small.json with real
# llama-server trials (`hone search record`). Run from the repository root on the
# machine to measure; with HONE_PORTABLE=DIR it first lays out a provisioned llama.cpp
# in a private cache from prebuilt binaries in DIR (hone, llama-server, llama-quantize,
# the llama-spm vocab, lib/ for shared libraries): how the recorded surface was made on
# a quiet 16-core host instead of the shared 2-core development machine.
#   bench/search/record.sh OUT.json [extra hone search record flags]
# SPEC (session spec), PARALLEL and UBATCH (axis values) select the variant:
#   surface-llama-small.json      defaults (c4 workload, parallel 1,4, ubatch 32,512)
#   surface-llama-small-c8.json   SPEC=bench/search/surface-llama-small-c8.spec.yaml PARALLEL=2,4,8 UBATCH=64,512
set -euo pipefail
out=${1:?usage: record.sh OUT.json}; shift
hone=${HONE:-build/src/cli/hone}
if [[ -n "${HONE_PORTABLE:-}" ]]; then
  d=$(cd "$HONE_PORTABLE" && pwd)
  export HONE_CACHE_DIR=${HONE_CACHE_DIR:-/tmp/hone-cache} HONE_DATA_DIR=$PWD LD_LIBRARY_PATH=$d/lib
  r=$HONE_CACHE_DIR/llama.cpp/v0.4.0-80fb11a
  mkdir -p "$r/build-cpu/bin" "$r/src/models"
  cp "$d/llama-server" "$d/llama-quantize" "$r/build-cpu/bin/"
  cp "$d/ggml-vocab-llama-spm.gguf" "$r/src/models/"
  version=$("$r/build-cpu/bin/llama-server" --version 2>&1 | sed -n 's/^version: //p')
  cat > "$r/build-cpu/hone-provision.json" <<JSON
{"origin": "built", "variant": "cpu", "root": "$r", "src_dir": "$r/src", "server": "$r/build-cpu/bin/llama-server",
 "quantize": "$r/build-cpu/bin/llama-quantize", "bench": "", "perplexity": "", "version": "$version",
 "tag": "v0.4.0", "commit": "80fb11ac73e66d89eae2c6a91d8a77428fa733ed", "build_seconds": 0}
JSON
  hone=$d/hone
fi
# llama-server's default thread count is the number of physical cores.
cores=$(lscpu -p=Core | grep -v '^#' | sort -u | wc -l)
threads=$(printf '%s\n' "$((cores / 4 > 0 ? cores / 4 : 1))" "$((cores / 2 > 0 ? cores / 2 : 1))" "$cores" "$((cores * 2))" \
  | sort -un | head -3 | paste -sd,)
echo "physical cores: $cores; threads axis $threads"
"$hone" search record --spec "${SPEC:-bench/search/surface-llama-small.spec.yaml}" --out "$out" \
  --axis weights=f16,q8_0,q4_0 --axis "threads=$threads" --axis "parallel=${PARALLEL:-1,4}" \
  --axis "ubatch_size=${UBATCH:-32,512}" --axis flash_attn=on,off \
  --stock weights=f16 --stock "threads=$cores" --stock parallel=4 --stock ubatch_size=512 --stock flash_attn=on \
  --repeat-fraction 0.25 "$@"
