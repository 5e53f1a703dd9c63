#!/usr/bin/env bash
# Records the CPU response surface bench/search/surface-tiny-prefill.json with real
# llama-server trials on this machine (`hone search record`), the way it was recorded:
# the tiny model at concurrency 6 (ISL 256, OSL 16), 7 knobs (precision, threads, batch
# threads, slots, logical batch, micro-batch, flash attention), 192 points, every point
# measured in a first pass and half of them again in a second shuffled pass, one
# accuracy check per numerics class, at raised priority when run as root
# (nice -n -10). About 5 minutes on 2 CPU cores with nothing else running.
#   bench/search/record-tiny-prefill.sh [OUT.json] [extra hone search record flags]
# A run continues an existing OUT (every trial is saved as it ends).
# The committed file was then continued to four samples of every point (2026-12-07,
# against the winner's curse of single noisy trials; docs/search.md):
#   REPEATS=4 REPEAT_FRACTION=0 bench/search/record-tiny-prefill.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/search/record-tiny-lib.sh
record_surface tiny-prefill "$@" -- \
  --axis weights=f16,q8_0 --axis threads=1,2 --axis threads_batch=1,2 --axis parallel=1,4,6 \
  --axis batch_size=256,2048 --axis ubatch_size=64,512 --axis flash_attn=on,off \
  --stock weights=f16 --stock threads=2 --stock threads_batch=2 --stock parallel=4 --stock batch_size=2048 \
  --stock ubatch_size=512 --stock flash_attn=on
