#!/usr/bin/env bash
# The test command: installs dependencies, builds hone, provisions the real engine
# (llama.cpp's llama-server, built once into ~/.cache/hone), starts the services the
# fleet tests use (a PostgreSQL server and a one-node Slurm cluster, in build/ and on
# free ports: scripts/test-services.sh), runs every test with ctest, and stops the
# services. Slow tests use the real llama-server and the services; here they must not
# skip.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
./build/src/cli/hone provision llama.cpp
services=build/test-services
trap './scripts/test-services.sh stop "$services"' EXIT
./scripts/test-services.sh start "$services" >/dev/null
# shellcheck disable=SC1091
source "$services/env.sh"
export HONE_REQUIRE_LLAMA=1 HONE_REQUIRE_SERVICES=1
ctest --test-dir build --output-on-failure -j 2 "$@"
