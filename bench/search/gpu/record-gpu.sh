#!/usr/bin/env bash
# Records the GPU response surfaces (bench/search/gpu/surface-gpu-8b-{c64,c4}.json) on a
# host with several GPUs reached through the device tool, one recorder per GPU
# (`hone search record --shard K/N`), in slices under the device's 10-minute limit.
# c32 (one GPU) was recorded over two sessions of 2026-12-05, c4x1 (one GPU, its repeats
# not yet) in a third (bench/search/gpu/README.md); c16h100 is the one-GPU point for a
# session whose device is an H100 (a surface is recorded on one kind of card only; it was
# recorded over two sessions of 2026-12-06 and grown from 64 to 128 points in a third, to 256
# in a fourth and fifth, 2026-12-07, and to 320 (parallel=2) from a sixth);
# c32 grows to 128 points (parallel{8,16}) from a seventh session, when the card is an H200;
# c64h100 (started then) is the second H100 operating point, c16h100's grid at 64 in flight;
# c64 and c4 need a machine of several GPUs, not lent so far.
#
# Here, first:  scripts/gpu/pack.sh     (hone + pruned llama.cpp source into .device/)
# There (device tool, carry [".device"], timeout 600; the kind a point needs: nvidia-h100-x1
# for c16h100/c64h100, nvidia-h200 for c32/c4x1, nvidia-h200-x8 for c64/c4. Name it: after a
# refused call, a call without a kind asks for an H200 only, 2026-12-07; and a call naming
# nvidia-h200 may still get an H100, so name every point either card could take):
#   bench/search/gpu/record-gpu.sh OP[,OP...] [SLICE_S] [recheck|check]
# ("check" says which of the points the card there would record, and stops.)
# Several operating points are recorded in turn within the slice: one whose recording
# completes (its last repeat taken) leaves the rest of the slice to the next. Those recorded
# on another kind of card than the one lent are skipped at once (exit 3 when none is left).
# Each call provisions llama.cpp with CUDA and synthesizes the 8B model when the machine
# is fresh (4-5 min + 45 s), then records for the rest of the slice (default 540 s) on
# every GPU at once, stopping the recorders with SIGKILL at the end (a recording
# continues from its file: every trial is saved as it ends; the trial in flight is lost).
# Each operating point's part of the output ends with `hone search show` of its shards
# (counts, the stock, the best so far).
# The shard files come back under $OUT/surfaces/; copy them to .device/surfaces/ here
# before the next call (a fresh machine continues from them), and commit them beside
# this script at the end of a session: the next session continues from those. When every shard is
# complete the merged surface comes back as $OUT/surface-gpu-8b-OP.json: copy it to
# bench/search/gpu/ and run `hone search compare` on it.
#
# The grid (432 points, 7 interacting knobs; stock = llama-server's defaults spelled out,
# with the default 4 slots):
#   parallel{4,16,64} x ubatch_size{256,512,2048} x batch_size{2048,4096} x flash_attn{auto,off}
#   x cache_type_k{f16,q8_0} x weights{f16,q8_0,q4_k_m} x ggml_cuda_graph_opt{0,1}
# Every point twice (two shuffled passes: the noise of each point), one accuracy check per
# numerics class (weights x cache_type_k: 6). MMQ vs cuBLAS is a build option of
# llama.cpp (GGML_CUDA_FORCE_MMQ/FORCE_CUBLAS), not a runtime knob, so it is not an axis.
# Expected cost per operating point: 864 trials of ~45 s (start-up ~10 s, warm-up, ramp,
# 20 s window) = ~11 GPU-hours, ~1.4 h on 8 GPUs (about 10 calls); both points ~3 h.
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
ops=${1:?usage: bench/search/gpu/record-gpu.sh OP[,OP...] [SLICE_S] [recheck|check]  (OP: c64|c4|c32|c4x1|c16h100|c64h100)}
slice=${2:-540}
recheck=()  # "recheck": drop the recorded accuracy results and check every class again
[ "${3:-}" = recheck ] && recheck=(--recheck-accuracy)
check_only=0  # "check": say which of the points this card would record, and stop
[ "${3:-}" = check ] && check_only=1
IFS=, read -ra oplist <<< "$ops"
for op in "${oplist[@]}"; do
  [ -f "bench/search/gpu/surface-gpu-8b-$op.spec.yaml" ] || { echo "no bench/search/gpu/surface-gpu-8b-$op.spec.yaml" >&2; exit 2; }
done
start=$(date +%s)
log() { echo "[record-gpu +$(( $(date +%s) - start ))s] $*"; }
left() { echo $(( slice - ( $(date +%s) - start ) )); }

# 0. Only the operating points this card can continue, before anything is built: a surface
# is recorded on one kind of card (`hone search record` refuses another's file), and the
# device tool may lend an H100 for a call that named an H200 (2026-12-07: the build and the
# model came first, 5 minutes, then both recorders refused). The card's name as hone slugs
# it (sys::MachineInfo::SlugFor: lower case, every other run of characters one '-'); a
# point's recorded card is its newest shard's info.hardware (one that came back in this
# session, else the committed one). A point not started yet takes any card. So one call,
# e.g. `record-gpu.sh c4x1,c32,c64h100`, records what fits whichever card comes.
command -v nvidia-smi >/dev/null || { echo "record-gpu: no nvidia-smi here: this host has no NVIDIA GPU to record on" >&2; exit 2; }
# Where a point's shards are, newest first: what came back from an earlier call of this
# session, else what an earlier session committed beside this script.
shard_sources=("$root/.device/surfaces" "$root/bench/search/gpu")
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr '[:upper:]' '[:lower:]' | sed -E 's/[^a-z0-9]+/-/g; s/^-+//; s/-+$//')
fits=()
for op in "${oplist[@]}"; do
  shard=
  for from in "${shard_sources[@]}"; do
    f=$(ls "$from"/surface-gpu-8b-"$op".shard-0-of-*.json 2>/dev/null | head -1 || true)
    if [ -n "$f" ]; then shard=$f; break; fi
  done
  recorded=
  [ -n "$shard" ] && recorded=$(grep -o '"hardware": *"[^"]*"' "$shard" | head -1 | sed -E 's/.*"([^"]*)"$/\1/')
  if [ -z "$recorded" ] || [ "$recorded" = "$card" ]; then
    fits+=("$op")
  else
    log "skipping $op: recorded on $recorded, this card is $card"
  fi
done
if [ ${#fits[@]} -eq 0 ]; then
  log "nothing to record on $card: every point asked for ($ops) was recorded on another card"
  exit 3
fi
oplist=("${fits[@]}")
if [ "$check_only" = 1 ]; then
  log "would record ${oplist[*]} on $card"
  exit 0
fi
cache=$root/.device-cache
out=${OUT:-$cache/out}
mkdir -p "$cache" "$out/surfaces" "$cache/surfaces"
export HONE_CACHE_DIR=$cache HONE_DATA_DIR=$root

# 1. hone and llama.cpp with CUDA (as scripts/gpu-session.sh does).
if [ ! -x "$cache/hone-portable/bin/hone" ] || ! cmp -s "$root/.device/hone-portable.tar.gz" "$cache/hone-portable.tar.gz"; then
  [ -f "$root/.device/hone-portable.tar.gz" ] || { echo "no .device/hone-portable.tar.gz: run scripts/gpu/pack.sh here first" >&2; exit 2; }
  rm -rf "$cache/hone-portable"
  tar -C "$cache" -xzf "$root/.device/hone-portable.tar.gz"
  cp "$root/.device/hone-portable.tar.gz" "$cache/hone-portable.tar.gz"
fi
hone=$cache/hone-portable/bin/hone
gpus=$(nvidia-smi --list-gpus | wc -l)
log "hone $(cat "$cache/hone-portable/COMMIT"); $gpus x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); $(nproc) CPUs"
if [ ! -d "$cache/llama-src/.git" ]; then
  rm -rf "$cache/llama-src"
  tar -C "$cache" -xJf "$root/.device/llama-src.tar.xz"
  git -C "$cache/llama-src" init -q
  git -C "$cache/llama-src" add -A
  # As scripts/gpu-session.sh commits it: the same source is the same commit every session.
  GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z \
    git -C "$cache/llama-src" -c user.name=hone -c user.email=hone@localhost commit -qm \
    "llama.cpp $(cat "$cache/llama-src/HONE_PINNED_COMMIT"), pruned by scripts/gpu/pack.sh"
fi
"$hone" provision llama.cpp --cuda --source "$cache/llama-src" -j "$(nproc)" 2>&1 | grep -v '^\s*$' | tail -n 4
# The model once, before the recorders start (they would race to synthesize it).
"$hone" model synth --preset llama-3.1-8b --seed 42 | tail -n 1

# Each operating point in turn, while the slice lasts (one whose recording completes
# leaves the rest of the slice to the next).
for op in "${oplist[@]}"; do
name=surface-gpu-8b-$op
spec=bench/search/gpu/$name.spec.yaml
# 2. Shards: continue from what came back from earlier calls.
for ((k = 0; k < gpus; k++)); do
  f=$name.shard-$k-of-$gpus.json
  for from in "${shard_sources[@]}"; do
    if [ ! -f "$cache/surfaces/$f" ] && [ -f "$from/$f" ]; then cp "$from/$f" "$cache/surfaces/$f"; fi
  done
done
case $op in
  c32)  # one H200: 64 points, 6 knobs, once each and a quarter of them twice (two sessions of
    # 2026-12-05), grown to 128 from a seventh GPU session (parallel{8,16} between the two)
    axes=(--axis parallel=4,8,16,32 --axis ubatch_size=512,2048 --axis flash_attn=auto,off --axis cache_type_k=f16,q8_0
          --axis weights=f16,q8_0 --axis ggml_cuda_graph_opt=0,1
          --stock parallel=4 --stock ubatch_size=512 --stock flash_attn=auto --stock cache_type_k=f16
          --stock weights=f16 --stock ggml_cuda_graph_opt=0)
    repeats=(--repeats 1 --repeat-fraction 0.25) ;;
  c4x1)  # one GPU, one session, decode-bound: 64 points, 6 knobs, once each and a quarter twice
    axes=(--axis weights=f16,q8_0 --axis flash_attn=auto,off --axis cache_type_k=f16,q8_0
          --axis ggml_cuda_disable_fusion=0,1 --axis ggml_cuda_graph_opt=0,1 --axis ubatch_size=512,2048
          --stock weights=f16 --stock flash_attn=auto --stock cache_type_k=f16 --stock ggml_cuda_disable_fusion=0
          --stock ggml_cuda_graph_opt=0 --stock ubatch_size=512)
    repeats=(--repeats 1 --repeat-fraction 0.25) ;;
  c16h100)  # one H100: 64 points over two sessions (parallel{4,16}), grown to 128 in a third
    # (parallel{4,8,16,32}: the recorded points are kept, `hone search record` measures the
    # new ones), to 256 from the fourth (kv_unified{off,on}: off is what an explicit --parallel
    # gives, on is the server's own default with auto slots) and to 320 in the sixth
    # (parallel=2: fewer slots than requests in flight, which queue); once each and a quarter twice
    axes=(--axis parallel=2,4,8,16,32 --axis ubatch_size=512,2048 --axis cache_type_k=f16,q8_0 --axis weights=f16,q8_0
          --axis ggml_cuda_graph_opt=0,1 --axis backend_sampling=off,on --axis kv_unified=off,on
          --stock parallel=4 --stock ubatch_size=512 --stock cache_type_k=f16 --stock weights=f16
          --stock ggml_cuda_graph_opt=0 --stock backend_sampling=off --stock kv_unified=off)
    repeats=(--repeats 1 --repeat-fraction 0.25) ;;
  c64h100)  # one H100, 64 requests in flight: c16h100's 320-point grid with slots up to 64
    # (started in a seventh GPU session); once each and a quarter twice
    axes=(--axis parallel=4,8,16,32,64 --axis ubatch_size=512,2048 --axis cache_type_k=f16,q8_0 --axis weights=f16,q8_0
          --axis ggml_cuda_graph_opt=0,1 --axis backend_sampling=off,on --axis kv_unified=off,on
          --stock parallel=4 --stock ubatch_size=512 --stock cache_type_k=f16 --stock weights=f16
          --stock ggml_cuda_graph_opt=0 --stock backend_sampling=off --stock kv_unified=off)
    repeats=(--repeats 1 --repeat-fraction 0.25) ;;
  *)
    axes=(--axis parallel=4,16,64 --axis ubatch_size=256,512,2048 --axis batch_size=2048,4096 --axis flash_attn=auto,off
          --axis cache_type_k=f16,q8_0 --axis weights=f16,q8_0,q4_k_m --axis ggml_cuda_graph_opt=0,1
          --stock parallel=4 --stock ubatch_size=512 --stock batch_size=2048 --stock flash_attn=auto
          --stock cache_type_k=f16 --stock weights=f16 --stock ggml_cuda_graph_opt=0)
    repeats=(--repeats 2 --repeat-fraction 0) ;;
esac
budget=$(( $(left) - 30 ))
pids=()
if [ "$budget" -gt 60 ]; then
  log "recording $name on $gpus GPUs for ${budget}s"
  for ((k = 0; k < gpus; k++)); do
    f=$cache/surfaces/$name.shard-$k-of-$gpus.json
    CUDA_VISIBLE_DEVICES=$k timeout -s KILL "$budget" "$hone" search record --spec "$spec" --out "$f" \
      "${axes[@]}" "${repeats[@]}" "${recheck[@]}" --shard "$k/$gpus" >> "$cache/surfaces/$name.shard-$k.log" 2>&1 &
    pids+=($!)
  done
  done_all=1
  for ((k = 0; k < gpus; k++)); do
    rc=0
    wait "${pids[$k]}" || rc=$?
    [ "$rc" = 0 ] || done_all=0
    log "shard $k/$gpus: exit $rc; $(tail -n 1 "$cache/surfaces/$name.shard-$k.log")"
  done
else
  done_all=0
  log "no time left in this slice for recording"
fi

# 3. What comes back: the shards (to continue), and the merged surface once all are done.
# (The glob takes the recorders' own logs too, shard-K.log: every trial's line, and what a slow
# or failed trial printed; a later call on the same machine appends to it.)
cp "$cache/surfaces/$name".shard-* "$out/surfaces/" 2>/dev/null || true
# Where the recording stands (counts, the stock, the best so far), in the call's output.
"$hone" search show --top 3 "$cache/surfaces/$name".shard-*-of-"$gpus".json 2>&1 || true
if [ "$done_all" = 1 ]; then
  "$hone" search merge --out "$out/$name.json" "$cache/surfaces/$name".shard-*-of-"$gpus".json
  log "complete: $out/$name.json"
fi
ls -la "$out" "$out/surfaces"
done
log "done"
