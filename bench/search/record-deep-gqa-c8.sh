#!/usr/bin/env bash
# Records the CPU response surface bench/search/surface-deep-gqa-c8.json with real
# llama-server trials on this machine (`hone search record`), the way it was recorded:
# the deep-gqa model at c8 (bench/search/surface-deep-gqa-c8.spec.yaml), 7 knobs,
# weights{f16,q8_0} x threads{1,2} x threads_batch{1,2} x parallel{2,4,8} x
# ubatch_size{64,512} x flash_attn{on,off} x repack{on,off} = 192 points, every point
# once and a quarter of them again (its trials take 7-27 s), one accuracy check per
# numerics class.
#   bench/search/record-deep-gqa-c8.sh [OUT.json] [extra hone search record flags]
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/search/record-tiny-lib.sh
export REPEAT_FRACTION=${REPEAT_FRACTION:-0.25}
record_surface deep-gqa-c8 "$@" -- \
  --axis weights=f16,q8_0 --axis threads=1,2 --axis threads_batch=1,2 --axis parallel=2,4,8 \
  --axis ubatch_size=64,512 --axis flash_attn=on,off --axis repack=on,off \
  --stock weights=f16 --stock threads=2 --stock threads_batch=2 --stock parallel=4 --stock ubatch_size=512 \
  --stock flash_attn=on --stock repack=on
