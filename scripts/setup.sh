#!/usr/bin/env bash
# Installs what hone needs to build and run, from Debian packages only. Idempotent:
# packages already present are not touched, so a second run takes a second.
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build ccache pkg-config git
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libsqlite3-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  zlib1g-dev  # roofline: reads the gzipped profiler traces vLLM and SGLang write
  libcurl4-openssl-dev  # agent: https:// LLM endpoints (api.anthropic.com, api.openai.com)
  clang-16 libclang-rt-16-dev  # patch: libFuzzer for the diff parser (clang-14 cannot compile std::expected)
  libpq-dev  # kb: the PostgreSQL backend of the shared knowledge base (libpq, the C client)
)
# Services the tests start in their own directories and ports (scripts/test-services.sh),
# installed without Debian's recommends (Slurm's would pull in every optional plugin):
# a PostgreSQL server for the shared knowledge base, a one-node Slurm cluster and
# munge (Slurm's authentication) for the fleet's slurm executor.
SERVICE_PACKAGES=(postgresql slurmctld slurmd slurm-client munge)
# Commands that may come from elsewhere than Debian (e.g. nodesource's nodejs bundles
# npm): install the Debian package only when the command is missing.
declare -A COMMANDS=(
  [npm]=npm            # `npm pack` fetches llama.cpp's source (node-llama-cpp's git bundle)
  [python3]=python3    # the reference client of the benchmark-client speed check
)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done
missing_services=()
for p in "${SERVICE_PACKAGES[@]}"; do
  installed "$p" || missing_services+=("$p")
done
for c in "${!COMMANDS[@]}"; do
  command -v "$c" >/dev/null || missing+=("${COMMANDS[$c]}")
done
if ((${#missing[@]} + ${#missing_services[@]})); then
  echo "setup: installing ${missing[*]} ${missing_services[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  if ((${#missing[@]})); then $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null; fi
  if ((${#missing_services[@]})); then
    $SUDO apt-get install -y -qq --no-install-recommends "${missing_services[@]}" >/dev/null
  fi
fi
echo "setup: all packages present"
