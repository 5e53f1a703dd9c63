#!/usr/bin/env bash
# The device-side entry of hone's kernel lane: exactly what runs on the GPU machine.
#   kernels/bench/device_run.sh lane   PACKAGE WORKDIR OUTDIR   # build, tune, write claims
#   kernels/bench/device_run.sh verify PACKAGE WORKDIR OUTDIR   # re-measure claims, print table
# WORKDIR keeps the lane's build and tuning files between the two stages; OUTDIR gets
# the few small files worth keeping (claims, tuning logs, raw numbers, logs).
set -uo pipefail
stage=$1 pkg=$2 work=$3 out=$4
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$work" "$out"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
  "${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}" --version | tail -n 2
} > "$out/env-$stage.txt" 2>&1
case "$stage" in
  lane)
    python3 "$here/kbench.py" lane --package "$pkg" --result "$work/result.json" --workdir "$work/lane" 2>&1 |
      tee "$work/lane.log"
    rc=${PIPESTATUS[0]}
    cp "$work/result.json" "$work"/lane/tune-*.json "$out/" 2>/dev/null
    tail -c 300000 "$work/lane.log" > "$out/lane.log"
    ;;
  verify)
    python3 "$here/kbench.py" verify --package "$pkg" --claims "$work/result.json" --out "$work/raw.json" 2>&1 |
      tee "$work/verify.log"
    rc=${PIPESTATUS[0]}
    cp "$work/raw.json" "$out/" 2>/dev/null
    tail -c 300000 "$work/verify.log" > "$out/verify.log"
    ;;
  *) echo "usage: device_run.sh lane|verify PACKAGE WORKDIR OUTDIR" >&2; exit 2 ;;
esac
exit "$rc"
