#!/usr/bin/env bash
# Two identical sessions, end to end (issue 18): `hone run bench/noise/identical.yaml`
# twice, one after the other, on the real llama-server, then what each ended with: its
# best configuration, its validated gain and 95% interval, its A/A noise floor, and
# whether the two agree (the same best; each validated gain inside the other's
# interval). About 12 minutes on 2 CPU cores. Runs go to hone-runs/identical-{1,2}
# (removed first); the comparison is also written to bench/noise/result-identical.txt.
#   bench/noise/identical.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
HONE=${HONE:-./build/src/cli/hone}
for i in 1 2; do
  rm -rf "hone-runs/identical-$i"
  $HONE run bench/noise/identical.yaml --out "hone-runs/identical-$i" > "hone-runs/identical-$i.log" 2>&1 ||
    { echo "session $i failed: hone-runs/identical-$i.log" >&2; tail -20 "hone-runs/identical-$i.log" >&2; exit 1; }
  echo "session $i: $(grep -E '^  validated' "hone-runs/identical-$i.log" | sed 's/^ *//')"
done
python3 - hone-runs/identical-1/summary.json hone-runs/identical-2/summary.json <<'PY' | tee bench/noise/result-identical.txt
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
def best(s):
    c = s.get("best", {}).get("config", {})
    return " ".join(f"{k}={v}" for k, v in sorted(c.items())) or "(stock)"
def ratio(s): return 1 + s.get("validated", {}).get("gain", 0)
def ci(s): return s.get("validated", {}).get("ci", [0, 0])
for i, s in enumerate(runs, 1):
    v, b = s.get("validated", {}), s.get("baseline", {})
    print(f"session {i}: best {best(s)}; validated {v.get('verdict')} {100 * v.get('gain', 0):+.1f}% "
          f"[{ci(s)[0]:.3f}, {ci(s)[1]:.3f}]; stock {b.get('value', 0):.1f} tok/s, "
          f"A/A noise floor {100 * b.get('noise_floor', 0):.2f}%; {s.get('trials_run', 0)} trials")
same = best(runs[0]) == best(runs[1])
r1, r2 = ratio(runs[0]), ratio(runs[1])
inside = ci(runs[1])[0] <= r1 <= ci(runs[1])[1] and ci(runs[0])[0] <= r2 <= ci(runs[0])[1]
print(f"same best: {'yes' if same else 'NO'}; validated ratios {r1:.3f} and {r2:.3f} "
      f"(difference {100 * abs(r1 - r2) / min(r1, r2):.1f}%), each inside the other's interval: {'yes' if inside else 'NO'}")
PY
