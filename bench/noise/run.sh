#!/usr/bin/env bash
# False keeps, measured (issue 18): how often hone's decision protocol keeps a candidate
# identical to its incumbent (A/A), and how often it keeps a real +3% / +10% gain (power).
# Every decision runs the session's own code (A/A prelude -> noise floor, screening
# trial, sequential paired looks, Decide) on RECORDED noise: the residuals of real
# repeated llama-server trials in bench/search/surface-*.json (see bench/noise/README.md).
#   bench/noise/run.sh [--decisions N] [--effect 0.03 ...] [--seed S]
set -euo pipefail
cd "$(dirname "$0")/../.."
HONE=${HONE:-./build/src/cli/hone}
$HONE search noise \
  --surface bench/search/surface-llama-small.json \
  --surface bench/search/surface-llama-small-c8.json \
  --decisions 400 --out bench/noise/result.txt "$@"
