#!/usr/bin/env bash
# Records the CPU response surface bench/search/surface-tiny-decode.json with real
# llama-server trials on this machine (`hone search record`), the way it was recorded:
# the tiny model at concurrency 6 with a decode-heavy load (ISL 32, OSL 96), 7 knobs
# (precision, threads, slots, micro-batch, flash attention, K-cache type, weight
# repacking), 192 points, every point measured in a first pass and half of them again
# in a second shuffled pass, one accuracy check per numerics class, at raised priority
# when run as root (nice -n -10). About 8 minutes on 2 CPU cores with nothing else
# running.
#   bench/search/record-tiny-decode.sh [OUT.json] [extra hone search record flags]
# A run continues an existing OUT (every trial is saved as it ends).
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/search/record-tiny-lib.sh
record_surface tiny-decode "$@" -- \
  --axis weights=f16,q8_0 --axis threads=1,2 --axis parallel=1,4,6 --axis ubatch_size=32,512 \
  --axis flash_attn=on,off --axis cache_type_k=f16,q8_0 --axis repack=on,off \
  --stock weights=f16 --stock threads=2 --stock parallel=4 --stock ubatch_size=512 \
  --stock flash_attn=on --stock cache_type_k=f16 --stock repack=on
