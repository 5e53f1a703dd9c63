"""Measures a Llama-3.1-8B-shaped model's prefill and decode on one GPU with plain
PyTorch kernels (random bf16 weights, no serving engine), plus the GPU's copy, read and
matmul ceilings, and records small profiler traces. hone's roofline is checked against
these numbers in docs/roofline.md; the traces become src/roofline/testdata/.

Run on the GPU machine: python3 src/roofline/tools/llama_step_probe.py  (writes to $OUT)
"""
import gzip
import json
import os
import time

import torch
import torch.nn.functional as F

DEV = "cuda"
OUT = os.environ.get("OUT", "/tmp")
DT = torch.bfloat16


def timed(fn, iters=10, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(iters):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / 1e3 / iters


def ceilings():
    n = 1 << 30
    a = torch.ones(n, dtype=DT, device=DEV)
    b = torch.empty_like(a)
    copy_s = timed(lambda: b.copy_(a), 20)
    read_s = timed(lambda: torch.sum(a, dtype=torch.float32), 20)
    del a, b
    m = 8192
    x = torch.randn(m, m, dtype=DT, device=DEV)
    y = torch.randn(m, m, dtype=DT, device=DEV)
    gemm_s = timed(lambda: x @ y, 20)
    res = {"copy_rw_gbs": 2 * n * 2 / copy_s / 1e9, "read_gbs": n * 2 / read_s / 1e9,
           "bf16_gemm_tflops": 2 * m ** 3 / gemm_s / 1e12}
    try:
        xf = x.to(torch.float8_e4m3fn)
        yf = y.to(torch.float8_e4m3fn).t().contiguous().t()
        one = torch.ones((), device=DEV)
        fp8_s = timed(lambda: torch._scaled_mm(xf, yf, scale_a=one, scale_b=one, out_dtype=DT), 20)
        res["fp8_gemm_tflops"] = 2 * m ** 3 / fp8_s / 1e12
    except Exception as ex:  # noqa: BLE001
        res["fp8_gemm_error"] = str(ex)[:200]
    return res


class Llama:
    def __init__(self, hidden, layers, heads, kv, hd, inter, vocab):
        self.h, self.L, self.H, self.KV, self.hd, self.I, self.V = hidden, layers, heads, kv, hd, inter, vocab
        s = 0.02
        self.wqkv = [torch.randn(hidden, (heads + 2 * kv) * hd, dtype=DT, device=DEV) * s for _ in range(layers)]
        self.wo = [torch.randn(heads * hd, hidden, dtype=DT, device=DEV) * s for _ in range(layers)]
        self.wgu = [torch.randn(hidden, 2 * inter, dtype=DT, device=DEV) * s for _ in range(layers)]
        self.wd = [torch.randn(inter, hidden, dtype=DT, device=DEV) * s for _ in range(layers)]
        self.n1 = [torch.ones(hidden, dtype=DT, device=DEV) for _ in range(layers)]
        self.n2 = [torch.ones(hidden, dtype=DT, device=DEV) for _ in range(layers)]
        self.head = torch.randn(hidden, vocab, dtype=DT, device=DEV) * s
        self.nf = torch.ones(hidden, dtype=DT, device=DEV)

    def params(self):
        per = self.h * (self.H + 2 * self.KV) * self.hd + self.H * self.hd * self.h + 3 * self.h * self.I
        return self.L * per + 2 * self.h * self.V

    def block_mlp(self, l, x):
        hn = F.rms_norm(x, (self.h,), self.n2[l])
        g, u = (hn @ self.wgu[l]).chunk(2, dim=-1)
        return x + (F.silu(g) * u) @ self.wd[l]

    def prefill(self, x):  # x: [b, T, hidden]
        b, t, _ = x.shape
        for l in range(self.L):
            hn = F.rms_norm(x, (self.h,), self.n1[l])
            q, k, v = (hn @ self.wqkv[l]).split([self.H * self.hd, self.KV * self.hd, self.KV * self.hd], dim=-1)
            q = q.view(b, t, self.H, self.hd).transpose(1, 2)
            k = k.view(b, t, self.KV, self.hd).transpose(1, 2)
            v = v.view(b, t, self.KV, self.hd).transpose(1, 2)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            x = x + o.transpose(1, 2).reshape(b, t, self.H * self.hd) @ self.wo[l]
            x = self.block_mlp(l, x)
        return F.rms_norm(x[:, -1], (self.h,), self.nf) @ self.head  # logits of the last token only

    def decode(self, x, kc, vc, pos):  # x: [b, hidden]; kc/vc[l]: [b, KV, ctx, hd]; pos: [1] long
        b = x.shape[0]
        for l in range(self.L):
            hn = F.rms_norm(x, (self.h,), self.n1[l])
            q, k, v = (hn @ self.wqkv[l]).split([self.H * self.hd, self.KV * self.hd, self.KV * self.hd], dim=-1)
            kc[l].index_copy_(2, pos, k.view(b, self.KV, 1, self.hd))
            vc[l].index_copy_(2, pos, v.view(b, self.KV, 1, self.hd))
            o = F.scaled_dot_product_attention(q.view(b, self.H, 1, self.hd), kc[l], vc[l], enable_gqa=True)
            x = x + o.reshape(b, self.H * self.hd) @ self.wo[l]
            x = self.block_mlp(l, x)
        return F.rms_norm(x, (self.h,), self.nf) @ self.head


def decode_graph_time(m, batch, ctx):
    kc = [torch.randn(batch, m.KV, ctx, m.hd, dtype=DT, device=DEV) for _ in range(m.L)]
    vc = [torch.randn(batch, m.KV, ctx, m.hd, dtype=DT, device=DEV) for _ in range(m.L)]
    x = torch.randn(batch, m.h, dtype=DT, device=DEV)
    pos = torch.tensor([ctx - 1], device=DEV)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            m.decode(x, kc, vc, pos)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        m.decode(x, kc, vc, pos)
    t_graph = timed(g.replay, 20)
    t_eager = timed(lambda: m.decode(x, kc, vc, pos), 5, 1)
    del kc, vc, g
    torch.cuda.empty_cache()
    return t_graph, t_eager


def keep_events(trace, max_cpu_ops):
    ev = trace["traceEvents"] if isinstance(trace, dict) else trace
    kept, cpu = [], 0
    for e in ev:
        cat = str(e.get("cat", "")).lower()
        if e.get("ph") == "M" or cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            kept.append(e)
        elif cat == "cpu_op" and cpu < max_cpu_ops:
            cpu += 1
            kept.append({k: e[k] for k in ("ph", "cat", "name", "pid", "tid", "ts", "dur") if k in e})
    for e in kept:  # trim bulky args (correlation ids stay)
        if "args" in e and isinstance(e["args"], dict):
            e["args"] = {k: v for k, v in e["args"].items() if k in ("device", "stream", "correlation", "grid", "block")}
    return {"schemaVersion": 1, "traceEvents": kept}


def profile(m, fn, name, max_cpu_ops=40):
    from torch.profiler import ProfilerActivity, profile as prof
    fn()
    torch.cuda.synchronize()
    with prof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    raw = os.path.join("/tmp", name + ".raw.json")
    p.export_chrome_trace(raw)
    with open(raw) as f:
        small = keep_events(json.load(f), max_cpu_ops)
    path = os.path.join(OUT, name + ".trace.json")
    with open(path, "w") as f:
        json.dump(small, f, separators=(",", ":"))
    return path


def main():
    torch.manual_seed(0)
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    res["ceilings"] = ceilings()
    print(json.dumps(res, indent=1), flush=True)

    m = Llama(4096, 32, 32, 8, 128, 14336, 128256)
    res["params"] = m.params()
    pre = {}
    for b, t in [(1, 1024), (8, 1024), (1, 8192)]:
        x = torch.randn(b, t, m.h, dtype=DT, device=DEV)
        with torch.no_grad():
            pre[f"b{b}_t{t}_ms"] = timed(lambda: m.prefill(x), 5, 2) * 1e3
        del x
    res["prefill"] = pre
    print(json.dumps(pre), flush=True)
    dec = {}
    with torch.no_grad():
        for b in [1, 16, 64, 256]:
            tg, te = decode_graph_time(m, b, 1024)
            dec[f"b{b}_ctx1024_graph_ms"] = tg * 1e3
            dec[f"b{b}_ctx1024_eager_ms"] = te * 1e3
            print(b, tg * 1e3, te * 1e3, flush=True)
    res["decode"] = dec
    # A realistic kernel mix: one eager decode step of the 8B shape at batch 64.
    with torch.no_grad():
        b, ctx = 64, 1024
        kc = [torch.randn(b, m.KV, ctx, m.hd, dtype=DT, device=DEV) for _ in range(m.L)]
        vc = [torch.randn(b, m.KV, ctx, m.hd, dtype=DT, device=DEV) for _ in range(m.L)]
        x = torch.randn(b, m.h, dtype=DT, device=DEV)
        pos = torch.tensor([ctx - 1], device=DEV)
        profile(m, lambda: m.decode(x, kc, vc, pos), "llama8b_decode_b64_h200", 20)
        del kc, vc
        xp = torch.randn(1, 512, m.h, dtype=DT, device=DEV)
        profile(m, lambda: m.prefill(xp), "llama8b_prefill_512_h200", 20)
    del m
    torch.cuda.empty_cache()
    tiny = Llama(256, 2, 4, 2, 64, 512, 1024)
    with torch.no_grad():
        xp = torch.randn(1, 16, 256, dtype=DT, device=DEV)
        p = profile(tiny, lambda: tiny.prefill(xp), "llama_tiny_prefill_h200", 40)
    with open(p, "rb") as f, gzip.open(p + ".gz", "wb") as g:
        g.write(f.read())
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    t0 = time.time()
    main()
    print("total_s", time.time() - t0)
