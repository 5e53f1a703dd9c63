#!/usr/bin/env bash
# A scripted stand-in for a coding-agent CLI (`claude -p`, `codex exec`), for running
# bench/agents/specialist.yaml on a machine with no agent installed. hone runs it as
# `agents.command: [.../scripted-coder.sh, "{prompt_file}"]`, in the specialist's own
# worktree of the provisioned llama.cpp checkout; it answers by role, as a real agent
# would be asked:
#   specialist: edits tools/server/server.cpp so that llama-server's automatic slot
#               count (`--parallel` unset: 4) is HONE_SCRIPTED_SLOTS (default 8), and
#               says what it did; hone turns the edit into a diff, has the critic review
#               it, rebuilds llama-server in a worktree and measures it in paired trials.
#   critic:     approves (the critic can only make an outcome more conservative; the
#               measured verdict stands on its own).
#   anything else: refuses (exit 2), so a role it does not play is a recorded failure.
# It claims a speedup on purpose: hone strips numbers from a specialist's summary and
# shows them as claims only.
set -euo pipefail
prompt_file=${1:?usage: scripted-coder.sh PROMPT_FILE}
prompt=$(cat "$prompt_file")
slots=${HONE_SCRIPTED_SLOTS:-8}
case "$prompt" in
  *"You are a specialist engineer"*)
    file=tools/server/server.cpp
    [[ -f $file ]] || { echo "no $file in $(pwd)" >&2; exit 1; }
    grep -q 'params.n_parallel = 4;' "$file" || { echo "the auto slot default is not where expected" >&2; exit 1; }
    sed -i "s/params.n_parallel = 4;/params.n_parallel = ${slots};/;
            s/using n_parallel = 4 and kv_unified = true/using n_parallel = ${slots} and kv_unified = true/" "$file"
    echo "Raised llama-server's automatic slot count (--parallel unset) from 4 to ${slots}, so a client" \
         "running more concurrent requests than 4 is batched instead of queued. Expect 2x throughput."
    ;;
  *"You are the critic of hone"*)
    echo '{"approve": true, "reason": "a small, contained change to a server default; the paired measurement decides", "learning": "a default that queues requests beyond the slot count is worth measuring against the workload concurrency"}'
    ;;
  *)
    echo "scripted-coder.sh plays the specialist and the critic only" >&2
    exit 2
    ;;
esac
