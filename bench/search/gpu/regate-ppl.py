#!/usr/bin/env python3
"""Re-gates a recorded surface's accuracy results on the PPL ratio over the stock's.

surface-gpu-8b-c32 was checked (2026-12-05) by a hone whose gate took llama-perplexity's
PPL(Q)/PPL(base) as it printed it. That ratio's base perplexity is recomputed from the
base file's 16-bit logits and carries a bias of its own: on this random 8B model (128k
vocabulary) the stock against itself printed 1184.98, so all 64 points failed. hone now
divides a candidate's ratio by the stock's own (src/measure/server_executor.cc,
StockPplRatio); this script applies the same division to the recorded numbers (every
other figure of the check is kept) and re-evaluates each class's pass with the
thresholds printed in its detail. Usage: regate-ppl.py SURFACE.json  (rewrites it)
"""
import json, re, sys

path = sys.argv[1]
s = json.load(open(path))
stock = s["stock"]
ratio_re = re.compile(r"PPL ratio ([0-9.]+) \(max delta ([0-9.eE+-]+)\)")
def ratio(acc):
    m = ratio_re.search(acc["detail"])
    return (float(m.group(1)), float(m.group(2))) if m else (None, None)
stock_points = [p for p in s["points"] if p["config"] == stock and p.get("accuracy")]
r0, _ = ratio(stock_points[0]["accuracy"])
assert r0 and r0 > 0, "the stock carries no PPL ratio"
changed = 0
for p in s["points"]:
    acc = p.get("accuracy")
    if not acc or "re-gated" in acc["detail"]:
        continue
    r, delta = ratio(acc)
    agree_min = float(re.search(r"min ([0-9.]+)%\)", acc["detail"]).group(1)) / 100
    kld_max = float(re.search(r"\(max ([0-9.]+)\), same top", acc["detail"]).group(1))
    ok = acc["token_agreement"] >= agree_min and (acc.get("kld_mean") is None or acc["kld_mean"] <= kld_max)
    if r is not None:
        ok = ok and abs(r / r0 - 1) <= delta
        acc["detail"] += (" [re-gated by bench/search/gpu/regate-ppl.py: PPL ratio %.4f over the stock's, "
                          "the base file's own ratio %.4f divided out]" % (r / r0, r0))
    changed += acc["passed"] != ok
    acc["passed"] = ok
json.dump(s, open(path, "w"), indent=1)
print("%s: stock's own PPL ratio %.4f; %d points change their verdict; %d of %d pass" %
      (path, r0, changed, sum(1 for p in s["points"] if p.get("accuracy", {}).get("passed")), len(s["points"])))
