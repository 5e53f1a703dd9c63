#!/usr/bin/env bash
# One command for a GPU session on a host reached through the device tool (or any GPU
# host without Debian's packages or the npm registry): provisions llama.cpp with CUDA
# (cached), runs `hone run SPEC` (the spec's model preset is synthesized on the GPU
# host), and copies the run's files to $OUT. A session longer than one call continues
# in the next: the same command resumes it (`hone resume`) from its state on disk.
#
# Here, first:  scripts/gpu/pack.sh            (hone + pruned llama.cpp source into .device/)
# There:        scripts/gpu-session.sh SPEC [SLICE_S]
#   SLICE_S     seconds this call may take in all (default 540, under the device's
#               10-minute limit); hone is stopped with SIGKILL at the end of the slice,
#               which a session survives by design (its guard stops the server; the
#               next call resumes, losing at most the trial in flight)
# Caches live in .device-cache/ (git-ignored; kept while the machine stays warm).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
spec=${1:?usage: scripts/gpu-session.sh SPEC [SLICE_S]}
slice=${2:-540}
start=$(date +%s)
cache=$root/.device-cache
out=${OUT:-$cache/out}
mkdir -p "$cache" "$out"
export HONE_CACHE_DIR=$cache HONE_DATA_DIR=$root
log() { echo "[gpu-session +$(( $(date +%s) - start ))s] $*"; }
left() { echo $(( slice - ( $(date +%s) - start ) )); }

# 1. hone: the packed portable build.
if [ ! -x "$cache/hone-portable/bin/hone" ] || ! cmp -s "$root/.device/hone-portable.tar.gz" "$cache/hone-portable.tar.gz"; then
  [ -f "$root/.device/hone-portable.tar.gz" ] || { echo "no .device/hone-portable.tar.gz: run scripts/gpu/pack.sh here first" >&2; exit 2; }
  rm -rf "$cache/hone-portable"
  tar -C "$cache" -xzf "$root/.device/hone-portable.tar.gz"
  cp "$root/.device/hone-portable.tar.gz" "$cache/hone-portable.tar.gz"
fi
hone=$cache/hone-portable/bin/hone
log "hone $(cat "$cache/hone-portable/COMMIT"); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1); $(nproc) CPUs"

# 2. llama.cpp with CUDA, from the carried source (a git work tree, as the patch lane needs).
if [ ! -d "$cache/llama-src/.git" ]; then
  rm -rf "$cache/llama-src"
  tar -C "$cache" -xJf "$root/.device/llama-src.tar.xz"
  git -C "$cache/llama-src" init -q
  git -C "$cache/llama-src" add -A
  # A fixed author, date and message: the same pruned source is the same commit in every
  # session, so the engine version a surface or recipe records does not change with the day.
  GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z \
    git -C "$cache/llama-src" -c user.name=hone -c user.email=hone@localhost commit -qm \
    "llama.cpp $(cat "$cache/llama-src/HONE_PINNED_COMMIT"), pruned by scripts/gpu/pack.sh"
fi
log "provisioning llama.cpp (CUDA)"
"$hone" provision llama.cpp --cuda --source "$cache/llama-src" -j "$(nproc)" 2>&1 | grep -v '^\s*$' | tail -n 8
# The catalog's flags and variables against the CUDA build (its --help kept).
"$hone" catalog check --cuda --quick --save-help "$out/llama-server-cuda-help.txt" || true

# 3. The session: run, or resume the one this spec started.
name=$(basename "$spec" .yaml)
run_dir=$cache/runs/$name
if [ -f "$run_dir/state.json" ]; then
  cmd=(resume "$run_dir")
else
  cmd=(run "$spec" --out "$run_dir")
fi
budget=$(( $(left) - 25 ))
if [ "$budget" -gt 30 ]; then
  log "hone ${cmd[*]} (for at most ${budget}s this call)"
  rc=0
  timeout -s KILL "$budget" "$hone" "${cmd[@]}" || rc=$?
  [ "$rc" = 137 ] && log "slice over: hone stopped; the next call resumes the session" || log "hone exited $rc"
else
  log "no time left in this slice for the session"
fi

# 4. What comes back: the session's files and a tarball of its trials.
"$hone" status "$run_dir" || true
for f in report.md report.html summary.json state.json events.jsonl; do
  [ -f "$run_dir/$f" ] && cp "$run_dir/$f" "$out/$name.$f"
done
tar -C "$run_dir" -czf "$out/$name.trials.tar.gz" --exclude='*.kld' --exclude='records.jsonl' trials accuracy 2>/dev/null || true
ls -la "$out"
log "done"
