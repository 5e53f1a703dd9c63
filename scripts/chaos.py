#!/usr/bin/env python3
"""The chaos suite: hone meets every fault of docs/reliability.md, and the table.

Run it with scripts/chaos.sh (which builds hone and provisions llama.cpp first). Each
scenario runs real `hone run` / `hone resume` processes:

  proxy and server faults  sessions against a real llama-server (tiny synthesized
                           model) whose trials meet the faults of a chaos plan
                           (HONE_CHAOS_PLAN): dropped streams, stalls, 429/500/503
                           bursts, malformed and truncated SSE, slow-loris responses,
                           a SIGKILLed or SIGSTOPped server, an out-of-memory launch, a
                           port taken between the check and the bind
  hone's own faults        scripted sessions (HONE_TEST_EXECUTOR: deterministic
                           measurements, stand-in servers): kill -9 of hone at random
                           moments, each followed by `hone resume`, against an
                           uninterrupted session; a full disk (a small tmpfs, in a
                           mount namespace); a knowledge base locked by another
                           process; a damaged state.json and event log

It prints the table (Markdown) and writes it, with details, to OUT/reliability.md.
Every process it starts it stops by pid; it kills nothing by name. Loopback only.
"""

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HONE = os.path.join(ROOT, "build", "src", "cli", "hone")

REAL_SPEC = """name: chaos-{name}
target:
  adapter: llama.cpp
  model: {{preset: tiny, seed: 42}}
workload: {{kind: fixed, isl: 64, osl: 24, concurrency: 2, num_prompts: 16, warmups: 1}}
objective: {{metric: total_tps_per_gpu}}
accuracy: {{enabled: false}}
budget: {{wall: 20m, max_cycles: 1}}
measurement: {{min_pairs: 2, max_pairs: 2, aa_pairs: 2, screen: false, request_timeout: 5s}}
search: {{knobs: [poll]}}
kb: {{enabled: false}}
"""

SCRIPTED_SPEC = """name: scripted
target:
  adapter: llama.cpp
  model: {{preset: tiny, seed: 42}}
workload: {{kind: fixed, isl: 64, osl: 16, concurrency: 1, num_prompts: 4, warmups: 0}}
objective: {{metric: total_tps_per_gpu}}
budget: {{wall: 2h, max_cycles: 2}}
measurement: {{min_pairs: 3, max_pairs: 6, aa_pairs: 2}}
search: {{knobs: [threads, poll, ubatch_size, flash_attn]}}
{kb}
"""

MEASUREMENTS = {"base": 100, "noise": 0.01, "seed": 7, "trial_ms": 250,
                "factors": {"threads=1": 0.6, "poll=0": 1.12, "ubatch_size=64": 0.97, "flash_attn=off": 1.05}}

# fault -> (plan rule parameters, what a correct classification looks like)
PROXY_FAULTS = [
    ("drop_mid_stream", {"after_events": 2, "count": 2}, ["connection_reset"]),
    ("stall", {"after_events": 2, "stall_s": 12}, ["stalled"]),
    ("http_error 429 burst", {"fault": "http_error", "status": 429, "count": 4}, ["http_429"]),
    ("http_error 500 burst", {"fault": "http_error", "status": 500, "count": 4}, ["http_500"]),
    ("http_error 503 burst", {"fault": "http_error", "status": 503, "count": 4}, ["http_503"]),
    ("malformed_sse", {"after_events": 2, "count": 2}, ["malformed"]),
    ("truncated_sse", {"after_events": 2, "count": 2}, ["truncated"]),
    ("slow_loris", {"after_events": 3, "count": 2, "drip_bytes": 4, "drip_ms": 15}, ["slow_stream"]),
]
SERVER_FAULTS = [
    ("kill_server", {"at_request": 3}, ["server_exited", "connection_reset", "connection_refused"]),
    ("stop_server", {"at_request": 3}, ["stalled"]),
    ("oom_at_launch", {}, ["launch:out_of_memory"]),
    ("port_taken", {}, ["relaunch:port_in_use"]),
]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def alive(pid):
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return ") Z " not in f.read()
    except OSError:
        return False


def hone(args, env=None, timeout=1800):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([HONE] + args, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout


def trials_of(run):
    out = {}
    d = os.path.join(run, "trials")
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        t = read_json(os.path.join(d, name, "outcome.json"))
        if t:
            out[t["id"]] = t
    return out


def used_in_verdicts(state):
    used = set()
    for k in ("baseline_trials", "aa_trials", "validation_trials"):
        used.update(state.get(k, []))
    for c in state.get("candidates", []):
        used.update(c.get("incumbent_trials", []))
        used.update(c.get("candidate_trials", []))
    for p in state.get("sweep", []):
        used.update(p.get("stock_trials", []))
        used.update(p.get("best_trials", []))
    return used


def injected_count(text):
    # "drop_mid_stream x2"
    try:
        return int(text.rsplit(" x", 1)[1])
    except (IndexError, ValueError):
        return 1 if text else 0


def classified(t, expected):
    faults = " ".join(t.get("faults", []))
    for e in expected:
        if e.startswith("launch:"):
            if not t.get("launched") and t.get("failure_kind") == e.split(":", 1)[1]:
                return True
        elif e.startswith("relaunch:"):
            if t.get("launched") and any(e.split(":", 1)[1] in r for r in t.get("relaunches", [])):
                return True
        elif e in faults:
            return True
    return False


def decided(state):
    out = {}
    for c in (state or {}).get("candidates", []):
        if c.get("verdict", "PENDING") != "PENDING":
            out[c["id"]] = json.dumps(c.get("delta")) + ": " + c["verdict"]
    return out


# ---------------------------------------------------------------- real-server faults

def real_fault_row(out, name, params, expected):
    fault = params.get("fault", name)
    rule = {k: v for k, v in params.items() if k != "fault"}
    plan = {"faults": [dict(rule, role="aa", nth=1, fault=fault), dict(rule, role="candidate", nth=1, fault=fault)]}
    slug = name.replace(" ", "-")
    work = os.path.join(out, "real-" + slug)
    os.makedirs(work, exist_ok=True)
    write(os.path.join(work, "plan.json"), json.dumps(plan, indent=1))
    write(os.path.join(work, "spec.yaml"), REAL_SPEC.format(name=slug))
    run = os.path.join(work, "run")
    t0 = time.time()
    rc, text = hone(["run", os.path.join(work, "spec.yaml"), "--out", run],
                    {"HONE_CHAOS_PLAN": os.path.join(work, "plan.json")})
    write(os.path.join(work, "hone.log"), text)
    state = read_json(os.path.join(run, "state.json")) or {}
    trials = trials_of(run)
    used = used_in_verdicts(state)
    injected = [t for t in trials.values() if t.get("injected")]
    times = sum(injected_count(t["injected"]) for t in injected)
    ok = sum(1 for t in injected if classified(t, expected))
    unsound = sum(1 for t in injected if t["id"] in used and t.get("faults"))
    # What followed each injected trial: a faulted one is measured again (retry_of); a
    # failed stock launch is measured again by the prelude; a failed candidate launch
    # is its verdict (LAUNCH_FAILED); a port race is relaunched inside the same trial.
    def followed(t):
        if t.get("faults"):
            return any(u.get("retry_of") == t["id"] for u in trials.values())
        if not t.get("launched"):
            if t["role"] in ("aa", "baseline", "warmup"):
                return any(u["id"] > t["id"] and u["role"] in ("aa", "baseline") and u.get("launched")
                           for u in trials.values())
            return any(t["id"] in ([c.get("screen_trial")] + c.get("candidate_trials", []))
                       or c.get("verdict") == "LAUNCH_FAILED" for c in state.get("candidates", []))
        return bool(t.get("relaunches")) and t.get("launched")
    retried = sum(1 for t in injected if followed(t))
    keeps_from_faulted = sum(1 for c in state.get("candidates", []) if c.get("verdict") == "KEEP"
                             and any(trials.get(i, {}).get("faults") for i in c.get("candidate_trials", [])
                                     + c.get("incumbent_trials", [])))
    completed = rc == 0 and state.get("phase") == "done" and os.path.exists(os.path.join(run, "report.html"))
    report = open(os.path.join(run, "report.md")).read() if os.path.exists(os.path.join(run, "report.md")) else ""
    named = all(t["id"] in report for t in injected) and "## Faults" in report
    time.sleep(1)
    orphans = [t.get("server_pid") for t in trials.values() if alive(t.get("server_pid", 0))]
    return {"fault": name, "injected": times, "trials": len(injected), "classified": ok, "sessions": 1,
            "completed": int(completed), "lost": unsound, "orphans": len(orphans),
            "notes": "%d of %d handled by the rules (measured again / relaunched / LAUNCH_FAILED); %d KEEP from a "
                     "faulted trial; report names them: %s; %.0f s"
                     % (retried, len(injected), keeps_from_faulted, "yes" if named else "NO", time.time() - t0)}


# ---------------------------------------------------------------- scripted sessions

def scripted_setup(work, kb=None):
    os.makedirs(work, exist_ok=True)
    write(os.path.join(work, "measurements.json"), json.dumps(MEASUREMENTS))
    write(os.path.join(work, "spec.yaml"),
          SCRIPTED_SPEC.format(kb="kb: {path: %s}" % kb if kb else "kb: {enabled: false}"))
    return {"HONE_TEST_EXECUTOR": os.path.join(work, "measurements.json")}


def stand_in_survivors(run, grace_s):
    deadline = time.time() + grace_s
    while True:
        try:
            pids = [int(x) for x in open(os.path.join(run, "scripted-servers.pids")).read().split()]
        except OSError:
            pids = []
        left = [p for p in pids if alive(p)]
        if not left or time.time() > deadline:
            return left
        time.sleep(0.05)


def start_hone(args, env):
    e = dict(os.environ)
    e.update(env)
    return subprocess.Popen([HONE] + args, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def kill_row(out, kills, seed):
    work = os.path.join(out, "kill9")
    env = scripted_setup(work)
    spec = os.path.join(work, "spec.yaml")
    t0 = time.time()
    rc, text = hone(["run", spec, "--out", os.path.join(work, "reference")], env)
    want = read_json(os.path.join(work, "reference", "state.json")) or {}
    if rc != 0:
        log(text)
    run = os.path.join(work, "killed")
    rng = random.Random(seed)
    seen, done, killed, orphans, rounds, moments = {}, False, 0, 0, 0, []
    while not done and rounds < 400:
        args = ["run", spec, "--out", run] if rounds == 0 else ["resume", run]
        rounds += 1
        before = (read_json(os.path.join(run, "state.json")) or {}).get("trials_run", -1)
        p = start_hone(args, env)
        t_start = time.time()
        if killed >= kills:
            p.wait(timeout=1800)
            p.stderr.close()
            done = True
            continue
        # Every fourth kill lands while hone is still wiring (engine, model, probes);
        # the others once the session has moved on since the last kill, a random
        # moment later: between trials, inside one, while saving.
        if killed % 4 == 3:
            deadline = t_start + rng.uniform(0.2, 2.0)
        else:
            while p.poll() is None and (read_json(os.path.join(run, "state.json")) or {}).get("trials_run", -1) <= before:
                time.sleep(0.02)
            deadline = time.time() + rng.uniform(0.0, 1.5)
        while p.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        if p.poll() is not None:
            done = p.returncode == 0  # finished before its kill
            p.stderr.close()
            continue
        os.kill(p.pid, signal.SIGKILL)  # by pid: the hone we started
        p.wait()
        p.stderr.close()
        killed += 1
        moments.append(round(time.time() - t_start, 1))
        orphans += len(stand_in_survivors(run, 8))
        for cid, v in decided(read_json(os.path.join(run, "state.json"))).items():
            seen[cid] = v
    got = read_json(os.path.join(run, "state.json")) or {}
    final = decided(got)
    lost = sum(1 for cid, v in seen.items() if final.get(cid) != v)
    if want.get("validated"):
        lost += 0 if got.get("validated") else 1
    events = []
    for line in open(os.path.join(run, "events.jsonl")):
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    started = {e["trial"] for e in events if e.get("type") == "trial_started"}
    finished = {e["trial"] for e in events if e.get("type") == "trial_finished"}
    twice = len(started - finished)
    same = (final == decided(want) and got.get("best") == want.get("best")
            and got.get("validation_verdict") == want.get("validation_verdict"))
    diff = ""
    if not same:
        diff = "; differences: %s vs %s" % (json.dumps(final), json.dumps(decided(want)))
    return {"fault": "kill -9 of hone run, then hone resume", "injected": killed, "trials": killed,
            "classified": killed, "sessions": 1, "completed": int(got.get("phase") == "done"), "lost": lost,
            "orphans": orphans + len(stand_in_survivors(run, 0)),
            "notes": "%d resumes; %d trials cut by a kill and measured again; %d trials in all (reference %d); "
                     "final verdicts %s the uninterrupted session's (%d candidates, best %s, close %s)%s; "
                     "kill moments (s after each start): %s; %.0f s"
                     % (rounds - 1, twice, got.get("trials_run", 0), want.get("trials_run", 0),
                        "equal to" if same else "DIFFERENT from", len(final), json.dumps(got.get("best")),
                        got.get("validation_verdict"), diff, " ".join(str(m) for m in moments), time.time() - t0)}


def disk_inner(work, result_path):
    """Runs inside `unshare -m`: a small tmpfs is the run directory's disk."""
    env = scripted_setup(work)
    disk = os.path.join(work, "disk")
    os.makedirs(disk, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", disk], check=True)
    run = os.path.join(disk, "run")
    filler = os.path.join(disk, "filler")
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - 120 * 1024))
    rc, text = hone(["run", os.path.join(work, "spec.yaml"), "--out", run], env)
    before = read_json(os.path.join(run, "state.json"))
    clear = rc != 0 and "No space left on device" in text
    os.unlink(filler)
    rc2, text2 = hone(["resume", run], env)
    after = read_json(os.path.join(run, "state.json")) or {}
    lost = sum(1 for cid, v in decided(before).items() if decided(after).get(cid) != v)
    res = {"first_rc": rc, "first_tail": text[-600:], "clear": clear, "resume_rc": rc2, "resume_tail": text2[-300:],
           "done": after.get("phase") == "done", "lost": lost, "orphans": len(stand_in_survivors(run, 5))}
    write(result_path, json.dumps(res))


def disk_row(out):
    work = os.path.join(out, "disk")
    os.makedirs(work, exist_ok=True)
    result = os.path.join(work, "result.json")
    if shutil.which("unshare") is None:
        return None
    p = subprocess.run(["unshare", "-m", sys.executable, os.path.abspath(__file__), "--disk-inner", work, result],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    r = read_json(result)
    if p.returncode != 0 or not r:
        log("full-disk scenario could not run (needs root for a mount namespace): " + p.stdout[-400:])
        return None
    tail = r["first_tail"].strip().splitlines()
    return {"fault": "full disk under the run directory (2 MB tmpfs)", "injected": 1, "trials": 1,
            "classified": int(r["clear"]), "sessions": 1, "completed": int(r["done"]), "lost": r["lost"],
            "orphans": r["orphans"],
            "notes": "hone stopped with exit %d: `%s`; after space was freed, `hone resume` %s"
                     % (r["first_rc"], tail[-1] if tail else "", "closed the session" if r["done"] else "FAILED")}


def kb_row(out):
    work = os.path.join(out, "kb-locked")
    kb = os.path.join(work, "kb.sqlite")
    env = scripted_setup(work, kb)
    holder = sqlite3.connect(kb, isolation_level=None)
    holder.execute("CREATE TABLE IF NOT EXISTS x(a)")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("INSERT INTO x VALUES (1)")
    run = os.path.join(work, "run")
    rc, text = hone(["run", os.path.join(work, "spec.yaml"), "--out", run], env)
    state = read_json(os.path.join(run, "state.json")) or {}
    holder.execute("COMMIT")
    holder.close()
    kept = "kb-pending.jsonl" in state.get("kb_result", "")
    pending = os.path.join(run, "kb-pending.jsonl")
    rc2, text2 = hone(["kb", "import", pending, "--kb", kb]) if os.path.exists(pending) else (1, "no pending file")
    return {"fault": "knowledge base locked by another process", "injected": 1, "trials": 1,
            "classified": int(kept), "sessions": 1, "completed": int(rc == 0 and state.get("phase") == "done"),
            "lost": 0 if rc2 == 0 and "1 added" in text2 else 1, "orphans": len(stand_in_survivors(run, 5)),
            "notes": "report: \"%s\"; `hone kb import` afterwards: %s" % (state.get("kb_result", "")[:150],
                                                                         text2.strip().splitlines()[-1][:120])}


def killed_scripted_run(work, env, after_trials):
    run = os.path.join(work, "run")
    p = start_hone(["run", os.path.join(work, "spec.yaml"), "--out", run], env)
    while p.poll() is None and (read_json(os.path.join(run, "state.json")) or {}).get("trials_run", 0) < after_trials:
        time.sleep(0.02)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    p.stderr.close()
    stand_in_survivors(run, 8)
    return run


def state_row(out):
    work = os.path.join(out, "state-damaged")
    env = scripted_setup(work)
    run = killed_scripted_run(work, env, 20)
    whole = read_json(os.path.join(run, "state.json"))
    with open(os.path.join(run, "state.json")) as f:
        text = f.read()
    write(os.path.join(run, "state.json"), text[:len(text) // 2])
    rc, log_text = hone(["resume", run], env)
    after = read_json(os.path.join(run, "state.json")) or {}
    loud = "state.json is damaged" in log_text and "state.json.prev" in log_text
    lost = sum(1 for cid, v in decided(whole).items() if decided(after).get(cid) != v)
    # And with no whole previous save: a clear error.
    write(os.path.join(run, "state.json"), "{\"version\":")
    write(os.path.join(run, "state.json.prev"), "garbage")
    rc2, text2 = hone(["resume", run], env)
    clear = rc2 != 0 and "cannot be resumed" in text2
    return {"fault": "truncated state.json (and, second, no whole state.json.prev)", "injected": 2, "trials": 2,
            "classified": int(loud) + int(clear), "sessions": 1, "completed": int(rc == 0 and after.get("phase") == "done"),
            "lost": lost, "orphans": len(stand_in_survivors(run, 5)),
            "notes": "resumed from state.json.prev with a warning; both damaged: exit %d, `%s`"
                     % (rc2, text2.strip().splitlines()[-1][:140] if text2.strip() else "")}


def events_row(out):
    work = os.path.join(out, "events-damaged")
    env = scripted_setup(work)
    run = killed_scripted_run(work, env, 20)
    path = os.path.join(run, "events.jsonl")
    lines = open(path).read().split("\n")
    lines[4] = lines[4][: len(lines[4]) // 2] + "\x01garbage"
    write(path, "\n".join(lines) + "{\"seq\": 99999, \"ty")  # and a torn last line
    whole = read_json(os.path.join(run, "state.json"))
    rc, text = hone(["resume", run], env)
    after = read_json(os.path.join(run, "state.json")) or {}
    loud = "events.jsonl: line 5" in text
    rc2, status = hone(["status", run])
    lost = sum(1 for cid, v in decided(whole).items() if decided(after).get(cid) != v)
    return {"fault": "damaged line and torn last line in events.jsonl", "injected": 2, "trials": 1,
            "classified": int(loud), "sessions": 1, "completed": int(rc == 0 and after.get("phase") == "done"),
            "lost": lost, "orphans": len(stand_in_survivors(run, 5)),
            "notes": "resume named the lines and skipped them; `hone status`: %s"
                     % ("warns" if "not whole events" in status else "silent")}


def table(rows):
    out = ["| fault | times injected | classified correctly | sessions completed | results lost | orphans left | notes |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append("| %s | %d | %d/%d | %d/%d | %d | %d | %s |" % (
            r["fault"], r["injected"], r["classified"], r["trials"], r["completed"], r["sessions"], r["lost"],
            r["orphans"], r["notes"].replace("|", "\\|")))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="", help="work directory (default: a new temp dir)")
    ap.add_argument("--kills", type=int, default=24, help="kill -9s of hone in the kill scenario (>= 20)")
    ap.add_argument("--seed", type=int, default=23, help="seed of the kill moments")
    ap.add_argument("--only", default="", help="comma list: proxy,server,kill,disk,kb,state,events")
    ap.add_argument("--disk-inner", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.disk_inner:
        disk_inner(*a.disk_inner)
        return 0
    if not os.path.exists(HONE):
        log("build hone first (scripts/chaos.sh does)")
        return 2
    out = os.path.abspath(a.out) if a.out else tempfile.mkdtemp(prefix="hone-chaos-")
    os.makedirs(out, exist_ok=True)
    only = set(a.only.split(",")) if a.only else {"proxy", "server", "kill", "disk", "kb", "state", "events"}
    rows = []
    t0 = time.time()
    if "proxy" in only:
        for name, params, expected in PROXY_FAULTS:
            log("chaos: %s ..." % name)
            rows.append(real_fault_row(out, name, params, expected))
    if "server" in only:
        for name, params, expected in SERVER_FAULTS:
            log("chaos: %s ..." % name)
            rows.append(real_fault_row(out, name, params, expected))
    if "kill" in only:
        log("chaos: kill -9 x%d ..." % a.kills)
        rows.append(kill_row(out, a.kills, a.seed))
    if "disk" in only:
        log("chaos: full disk ...")
        r = disk_row(out)
        if r:
            rows.append(r)
    if "kb" in only:
        log("chaos: locked knowledge base ...")
        rows.append(kb_row(out))
    if "state" in only:
        log("chaos: damaged state.json ...")
        rows.append(state_row(out))
    if "events" in only:
        log("chaos: damaged events.jsonl ...")
        rows.append(events_row(out))
    text = table(rows)
    print(text)
    write(os.path.join(out, "reliability.md"),
          "Produced by `scripts/chaos.sh %s` in %.0f s (work directory %s).\n\n%s\n"
          % (" ".join(sys.argv[1:]), time.time() - t0, out, text))
    log("chaos: table in %s" % os.path.join(out, "reliability.md"))
    bad = sum(r["lost"] + r["orphans"] + (r["sessions"] - r["completed"]) + (r["trials"] - r["classified"])
              for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
