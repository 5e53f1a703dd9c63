#!/usr/bin/env bash
# The main job: installs, builds, provisions llama.cpp, synthesizes the `small` model,
# serves a streamed completion from it, then runs a short optimization session
# (examples/demo.yaml) that ends with a report.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
HONE=./build/src/cli/hone
$HONE provision llama.cpp
model=$($HONE model synth --preset small | awk 'NR==1 {print $2}')
# A served streamed completion first (the engine works), then the optimization session.
$HONE serve --model "$model" --smoke --max-tokens 32
run="hone-runs/demo-$(date -u +%Y%m%dT%H%M%SZ)"
$HONE run examples/demo.yaml --out "$run"
echo "report: $run/report.md (and report.html, summary.json)"
