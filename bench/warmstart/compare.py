#!/usr/bin/env python3
"""Compares two hone sessions: trials and wall time until each one's best configuration
was first kept (the cold session's search vs the warm session's replay), and the gains."""
import json
import sys


def summary(run_dir):
    s = json.load(open(f"{run_dir}/state.json"))
    best = s["best"]
    kept = [c for c in s["candidates"] if c["verdict"] == "KEEP"]
    # The candidate that first reached the final best configuration.
    first = next((c for c in kept if c["config"] == best), None)
    # Trials run (of any role) before the verdict that first kept it, from the event log.
    trials, seconds = 0, 0.0
    if first:
        for line in open(f"{run_dir}/events.jsonl"):
            e = json.loads(line)
            if e["type"] == "trial_finished":
                trials += 1
            elif e["type"] == "verdict" and e.get("candidate") == first["id"] and e.get("verdict") == "KEEP":
                seconds = e["t"]
                break
    return {
        "best": " ".join(f"{k}={v}" for k, v in sorted(best.items())) or "(stock)",
        "trials_to_best": trials,
        "seconds_to_best": seconds,
        "total_trials": s["trials_run"],
        "validated_gain": s.get("validated_gain", 0.0),
        "validated": s.get("validated", False),
        "warm_replay": s.get("warm_replay", ""),
        "found_by": first["phase"] if first else "",
    }


cold, warm = summary(sys.argv[1]), summary(sys.argv[2])
for name, r in (("cold", cold), ("warm", warm)):
    print(f"{name}: best {r['best']} (found in {r['found_by']}), reached after {r['trials_to_best']} trials "
          f"and {r['seconds_to_best']:.0f} s; validated gain {r['validated_gain'] * 100:+.1f}% "
          f"({'validated' if r['validated'] else 'not validated'}); {r['total_trials']} trials in all")
print(f"warm replay: {warm['warm_replay']}")
if cold["trials_to_best"] and warm["trials_to_best"]:
    print(f"ratio warm/cold: trials {warm['trials_to_best'] / cold['trials_to_best']:.2f}, "
          f"wall time {warm['seconds_to_best'] / max(cold['seconds_to_best'], 1e-9):.2f} (goal <= 0.25)")
