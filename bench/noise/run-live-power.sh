#!/usr/bin/env bash
# The power on live trials (issue 18): `hone search noise --live SPEC --candidate CHANGE`
# runs N decisions of the session's protocol (A/A prelude, screen, sequential pairs,
# Decide) on real llama-server trials of bench/noise/live.yaml where the candidate is
# the stock with a real change. The change's effect is measured first, apart from the
# decisions (20 paired trials, no verdict), and again over the decisions' own pairs; the
# share of KEEPs is the power at that effect. Two changes of different size on the tiny
# model at c2 (2 CPU cores):
#   parallel=2    two slots instead of the automatic four: about +8%
#   weights=q8_0  8-bit weights instead of F16: about +30%
# About 8 s a decision (DECISIONS=120: about 35 minutes for both). Trials go to
# hone-runs/noise-power-* (removed first).
#   DECISIONS=N bench/noise/run-live-power.sh [--seed S]
set -euo pipefail
cd "$(dirname "$0")/../.."
HONE=${HONE:-./build/src/cli/hone}
N=${DECISIONS:-120}
for change in parallel=2 weights=q8_0; do
  name=${change//=/}
  rm -rf "hone-runs/noise-power-$name"
  $HONE search noise --live bench/noise/live.yaml --candidate "$change" --run-dir "hone-runs/noise-power-$name" \
    --decisions "$N" --out "bench/noise/result-live-power-$name.txt" "$@"
done
