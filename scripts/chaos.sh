#!/usr/bin/env bash
# The chaos suite (docs/reliability.md): builds hone, provisions llama.cpp, then runs
# every fault scenario against real `hone run`/`hone resume` processes and a real
# llama-server, and prints the reliability table. About 20-30 minutes on 2 cores.
#   scripts/chaos.sh [--out DIR] [--kills N] [--only proxy,server,kill,disk,kb,state,events]
# The full-disk scenario mounts a small tmpfs in a private mount namespace (root).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
./build/src/cli/hone provision llama.cpp
exec /usr/bin/python3 scripts/chaos.py "$@"
