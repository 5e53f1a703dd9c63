#!/usr/bin/env bash
# Records the CPU response surface bench/search/surface-deep-gqa-c4.json with real
# llama-server trials on this machine (`hone search record`), the way it was recorded:
# the deep-gqa model (24 layers, 2 KV heads for 8 query heads), 6 interacting knobs,
# 192 points, every point measured in a first pass and half of them again in a second
# shuffled pass (plus the stock twice more), one accuracy check per numerics class
# (weights x cache_type_k), each trial started in a quiet moment of the shared machine
# when one comes within a minute (--quiet 0), at raised priority so that other
# processes' compile jobs yield to the measured server (nice -n -10; root only).
#   bench/search/record-deep-gqa.sh [OUT.json] [extra hone search record flags]
# A run continues an existing OUT (every trial is saved as it ends).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-bench/search/surface-deep-gqa-c4.json}
[ $# -gt 0 ] && shift
hone=${HONE:-build/src/cli/hone}
nice=()
[ "$(id -u)" = 0 ] && nice=(nice -n "${NICE:--10}")
"${nice[@]}" "$hone" search record --spec "${SPEC:-bench/search/surface-deep-gqa-c4.spec.yaml}" --out "$out" \
  --axis weights=f16,q8_0,q4_0 --axis threads=1,2 --axis parallel=1,4 --axis ubatch_size=32,512 \
  --axis flash_attn=on,off --axis cache_type_k=f16,q8_0 --axis repack=on,off \
  --stock weights=f16 --stock threads=2 --stock parallel=4 --stock ubatch_size=512 --stock flash_attn=on \
  --stock cache_type_k=f16 --stock repack=on \
  --repeats 1 --repeat-fraction 0.5 --quiet 0 --quiet-wait 60 "$@"
