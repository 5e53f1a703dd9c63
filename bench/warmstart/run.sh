#!/usr/bin/env bash
# The warm-start benchmark (issue: recipe knowledge base). Runs a cold session, then a
# warm session on a related workload with the knowledge base the first one wrote, and
# prints, for each, the trials and wall time until its best configuration was first
# kept, and the ratios. Uses a private knowledge base file.
#   bench/warmstart/run.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-hone-runs/warmstart-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"
kb="$out/kb.sqlite"
HONE=./build/src/cli/hone
for s in cold warm; do
  sed "s|^name: .*|&\nkb: {path: $kb}|" "bench/warmstart/$s.yaml" > "$out/$s.yaml"
  $HONE run "$out/$s.yaml" --out "$out/$s"
done
python3 bench/warmstart/compare.py "$out/cold" "$out/warm"
