#!/usr/bin/env bash
# The test command: installs dependencies, builds hone, provisions the real engine
# (llama.cpp's llama-server, built once into ~/.cache/hone) and runs every test with
# ctest. Slow tests use the real llama-server; here they must not skip.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
./build/src/cli/hone provision llama.cpp
export HONE_REQUIRE_LLAMA=1
ctest --test-dir build --output-on-failure -j 2 "$@"
