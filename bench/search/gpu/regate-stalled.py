#!/usr/bin/env python3
"""Applies hone's rule for a window without a token to a recorded surface.

surface-gpu-8b-c4x1 was recorded (2026-12-05) by a hone that took a measurement window
in which no token streamed as a valid 0 tokens/s when a request had finished before it:
llama-server with flash attention off, 4 requests in flight, served its first requests
during the 2 s ramp and then none for 10 s (trial s0006: 1 finished, 4 cut at the
window's end, 0 tokens inside). hone now calls such a run invalid ("no token arrived
inside the measurement window", src/bench/metrics.cc), and the recorder keeps an invalid
trial as a failed point. This script does the same with the recorded numbers: a point
whose every sample is 0 tokens/s becomes a failed point with that reason (its trial
ids and times are kept). Usage: regate-stalled.py SURFACE.json  (rewrites it)
"""
import json, sys

path = sys.argv[1]
s = json.load(open(path))
reason = "invalid: no token arrived inside the measurement window"
changed = 0
for p in s["points"]:
    if p.get("failure_kind") or not p.get("samples") or any(x != 0 for x in p["samples"]):
        continue
    p["failure_kind"] = reason
    p["samples"] = []
    p.pop("metrics", None)
    changed += 1
json.dump(s, open(path, "w"), indent=1)
print("%s: %d points re-classified as failed (%s); %d of %d failed in all" %
      (path, changed, reason, sum(1 for p in s["points"] if p.get("failure_kind")), len(s["points"])))
