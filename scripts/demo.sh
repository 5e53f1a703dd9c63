#!/usr/bin/env bash
# The main job: installs, builds, provisions llama.cpp, synthesizes the `small` model
# and serves a streamed completion from it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
HONE=./build/src/cli/hone
$HONE provision llama.cpp
model=$($HONE model synth --preset small --quant q8_0,q4_0 | awk 'NR==1 {print $2}')
$HONE serve --model "$model" --smoke --max-tokens 48
