#!/usr/bin/env bash
# Builds libhone_kernels.so for sm_90a plus one ptxas resource report per source
# (registers, stack, spills of every instantiation). Usage: kernels/build.sh OUT_DIR
# NVCC overrides the compiler; sources compile in parallel.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: build.sh OUT_DIR}"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
flags=(-std=c++17 -O3 -lineinfo -I "$here" -Xcompiler -fPIC
       -gencode=arch=compute_90a,code=sm_90a -Xptxas -v,--warn-on-spills)
mkdir -p "$out"
pids=()
for src in api rmsnorm_fp8 rope_kvcache paged_decode; do
  "$nvcc" "${flags[@]}" -c "$here/$src.cu" -o "$out/$src.o" 2> "$out/$src.ptxas.txt" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
if [ "$status" != 0 ]; then
  grep -h -i -B2 -A5 "error" "$out"/*.ptxas.txt >&2 || true
  exit 1
fi
"$nvcc" -shared -cudart shared -o "$out/libhone_kernels.so" \
  "$out/api.o" "$out/rmsnorm_fp8.o" "$out/rope_kvcache.o" "$out/paged_decode.o"
"$nvcc" --version | tail -n 2 | head -n 1 > "$out/nvcc_version.txt"
echo "$out/libhone_kernels.so"
