#!/usr/bin/env bash
# False keeps on live trials (issue 18): `hone search noise --live` runs N A/A decisions
# (default 200) of the session's protocol on real llama-server trials of bench/noise/live.yaml
# and prints the false-keep rate with its 95% interval. About 8 s a decision (25 minutes for 200) on 2 CPU
# cores. Trials go to hone-runs/noise-live (removed first).
#   DECISIONS=N bench/noise/run-live.sh [--seed S]
set -euo pipefail
cd "$(dirname "$0")/../.."
HONE=${HONE:-./build/src/cli/hone}
rm -rf hone-runs/noise-live
$HONE search noise --live bench/noise/live.yaml --run-dir hone-runs/noise-live --decisions "${DECISIONS:-200}" \
  --out bench/noise/result-live.txt "$@"
