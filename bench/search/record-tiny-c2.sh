#!/usr/bin/env bash
# Records the CPU response surface bench/search/surface-tiny-c2.json with real
# llama-server trials on this machine (`hone search record`), the way it was recorded:
# the tiny model at concurrency 2 (ISL 128, OSL 48), 7 knobs (precision, threads, slots,
# logical batch, flash attention, K-cache type, unified KV), 192 points, every point
# measured in a first pass and half of them again in a second shuffled pass, one
# accuracy check per numerics class, at raised priority when run as root
# (nice -n -10). About 5 minutes on 2 CPU cores with nothing else running.
#   bench/search/record-tiny-c2.sh [OUT.json] [extra hone search record flags]
# A run continues an existing OUT (every trial is saved as it ends).
# The committed file was then continued to four samples of every point (2026-12-07,
# against the winner's curse of single noisy trials; docs/search.md):
#   REPEATS=4 REPEAT_FRACTION=0 bench/search/record-tiny-c2.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/search/record-tiny-lib.sh
record_surface tiny-c2 "$@" -- \
  --axis weights=f16,q8_0 --axis threads=1,2 --axis parallel=1,2,4 --axis batch_size=128,2048 \
  --axis flash_attn=on,off --axis cache_type_k=f16,q8_0 --axis kv_unified=on,off \
  --stock weights=f16 --stock threads=2 --stock parallel=4 --stock batch_size=2048 \
  --stock flash_attn=on --stock cache_type_k=f16 --stock kv_unified=on
