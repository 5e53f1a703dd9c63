"""The three kernel families as the device driver sees them.

Each family knows, for one task case: how to draw a fresh random input set (and its
poisoned output buffers), the closed-form bytes and FLOPs, the higher-precision
reference, the correctness check (tolerances from the task spec), how to launch a
candidate config of libhone_kernels.so, and the production baselines (PyTorch paths).
Only torch and the ctypes library handle are used; nothing here times anything.
"""
import math

import torch

BF16_NAN = -1  # 0xFFFF as int16: a NaN bit pattern in bf16
FP8_NAN = 0xFF  # e4m3fn NaN


def snr_db(ref, got):
    ref = ref.double()
    err = (got.double() - ref).pow(2).sum().item()
    sig = ref.pow(2).sum().item()
    if err == 0.0:
        return 200.0
    if not math.isfinite(err):
        return -200.0
    return 10.0 * math.log10(sig / err)


def close_metrics(ref, got, tol):
    """allclose-style check plus SNR; ref/got any float dtype."""
    got64 = got.double()
    ref64 = ref.double()
    finite = bool(torch.isfinite(got64).all().item())
    diff = (got64 - ref64).abs()
    max_abs = diff.max().item() if diff.numel() else 0.0
    bound = tol.get("atol", 0.0) + tol.get("rtol", 0.0) * ref64.abs()
    allclose = bool((diff <= bound).all().item()) if "atol" in tol or "rtol" in tol else True
    s = snr_db(ref64, got64)
    ok = finite and allclose and s >= tol.get("min_snr_db", -1e9)
    return ok, {"max_abs_err": max_abs, "snr_db": round(s, 2), "finite": finite, "allclose": allclose}


class Family:
    op = ""
    fid = -1

    def __init__(self, lib, case, task):
        self.lib = lib
        self.case = case
        self.dims = case["dims"]
        self.params = case.get("params", {})
        self.tol = task["tolerances"]

    def bytes(self):
        return self.cost(self.dims, self.params)[0]

    def flops(self):
        return self.cost(self.dims, self.params)[1]

    # Input sets are dicts of tensors; input_names lists the ones a kernel must not modify.
    def inputs(self, st):
        return [st[k] for k in self.input_names]

    def split_candidates(self, config_name):
        return [1]


# ---------------------------------------------------------------------------------
class RmsnormFp8(Family):
    op = "rmsnorm_fp8_quant"
    fid = 0
    input_names = ["x", "res", "w", "scale_in"]

    def __init__(self, lib, case, task):
        super().__init__(lib, case, task)
        self.T = int(self.dims["tokens"])
        self.H = int(self.dims["hidden"])
        self.per_token = self.params.get("quant", "per_token") == "per_token"
        self.eps = float(self.params.get("eps", 1e-6))

    @staticmethod
    def cost(dims, params):
        """Closed-form (DRAM bytes, FLOPs) of one call: each input read once, each output written once."""
        T, H = int(dims["tokens"]), int(dims["hidden"])
        per_token = params.get("quant", "per_token") == "per_token"
        return 3 * T * H * 2 + H * 2 + T * H + (T * 4 if per_token else 4), 8 * T * H

    def make_set(self, gen):
        T, H = self.T, self.H
        d = "cuda"
        st = {
            "x": torch.randn(T, H, device=d, dtype=torch.bfloat16, generator=gen),
            "res": torch.randn(T, H, device=d, dtype=torch.bfloat16, generator=gen),
            "w": (1.0 + 0.2 * torch.randn(H, device=d, generator=gen)).to(torch.bfloat16),
            # Static scale sized for the activations (|y| rarely exceeds ~6).
            "scale_in": torch.full((1,), 6.0 / 448.0, device=d, dtype=torch.float32),
            "res_out": torch.empty(T, H, device=d, dtype=torch.bfloat16),
            "q": torch.empty(T, H, device=d, dtype=torch.uint8),
            "scale_out": torch.empty(T, device=d, dtype=torch.float32),
        }
        return st

    def refill(self, st, gen):
        st["x"].copy_(torch.randn(self.T, self.H, device="cuda", dtype=torch.bfloat16, generator=gen))
        st["res"].copy_(torch.randn(self.T, self.H, device="cuda", dtype=torch.bfloat16, generator=gen))
        st["w"].copy_((1.0 + 0.2 * torch.randn(self.H, device="cuda", generator=gen)).to(torch.bfloat16))

    def poison(self, st):
        st["res_out"].view(torch.int16).fill_(BF16_NAN)
        st["q"].fill_(FP8_NAN)
        st["scale_out"].fill_(float("nan"))

    def launch(self, cfg, splits, st, stream):
        scale = st["scale_out"] if self.per_token else st["scale_in"]
        return self.lib.hone_kb_rmsnorm_fp8(
            cfg, st["x"].data_ptr(), st["res"].data_ptr(), st["w"].data_ptr(), st["res_out"].data_ptr(),
            st["q"].data_ptr(), scale.data_ptr(), 1 if self.per_token else 0, self.T, self.H, self.eps, stream)

    def candidate_outputs(self, st):
        q = st["q"].view(torch.float8_e4m3fn)
        s = st["scale_out"].view(-1, 1) if self.per_token else st["scale_in"]
        return q, st["res_out"], s

    def reference(self, st):
        r = (st["x"].double() + st["res"].double()).to(torch.bfloat16)
        rd = r.double()
        y = rd * torch.rsqrt(rd.pow(2).mean(-1, keepdim=True) + self.eps) * st["w"].double()
        if self.per_token:
            s = (y.abs().amax(-1, keepdim=True) / 448.0).clamp(min=1e-12)
        else:
            s = st["scale_in"].double()
        return {"r": r, "y": y, "s": s}

    def check(self, st, ref, outs):
        q, r, s = outs
        ok_r, m_r = close_metrics(ref["r"], r, self.tol["bf16"])
        deq = q.double() * s.double()
        # Saturated values are clipped by design: compare against the clipped reference.
        y_clip = torch.maximum(torch.minimum(ref["y"], 448.0 * s.double()), -448.0 * s.double())
        ok_q, m_q = close_metrics(y_clip, deq, self.tol["fp8_e4m3"])
        metrics = {"residual": m_r, "quant": m_q}
        ok = ok_r and ok_q
        if self.per_token:
            rel = ((s.double().view(-1) - ref["s"].view(-1)).abs() / ref["s"].view(-1)).max().item()
            metrics["scale_max_rel_err"] = rel
            ok = ok and rel <= 1e-3
        return ok, metrics

    def baselines(self):
        eps, per_token = self.eps, self.per_token

        def fn(x, res, w, scale_in):
            r = (x.float() + res.float()).to(torch.bfloat16)
            rf = r.float()
            y = rf * torch.rsqrt(rf.pow(2).mean(-1, keepdim=True) + eps) * w.float()
            if per_token:
                s = (y.abs().amax(-1, keepdim=True) / 448.0).clamp(min=1e-12)
            else:
                s = scale_in
            q = (y / s).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
            return q, r, s

        return fn, lambda st: (st["x"], st["res"], st["w"], st["scale_in"])


# ---------------------------------------------------------------------------------
class RopeKvCache(Family):
    op = "rope_kvcache"
    fid = 1
    input_names = ["pos", "q", "k", "v", "cos_sin", "slots"]

    def __init__(self, lib, case, task):
        super().__init__(lib, case, task)
        d = self.dims
        self.T = int(d["tokens"])
        self.Hq = int(d["num_q_heads"])
        self.Hkv = int(d["num_kv_heads"])
        self.D = int(d["head_dim"])
        self.P = int(d["page_size"])
        self.max_pos = int(self.params.get("max_position", 8192))
        self.pages = (self.T + self.P - 1) // self.P
        self.num_blocks = self.pages + 1  # one page no slot maps to: stray writes show up
        inv = 1.0 / (10000.0 ** (torch.arange(0, self.D, 2, dtype=torch.float64, device="cuda") / self.D))
        ang = torch.arange(self.max_pos, dtype=torch.float64, device="cuda")[:, None] * inv[None, :]
        self.cos_sin = torch.cat([ang.cos(), ang.sin()], dim=-1).to(torch.bfloat16).contiguous()

    @staticmethod
    def cost(dims, params):
        T, Hq, Hkv, D = (int(dims[k]) for k in ["tokens", "num_q_heads", "num_kv_heads", "head_dim"])
        read = T * (Hq + 2 * Hkv) * D * 2 + T * D * 2 + T * 16  # q, k, v, cos/sin rows, positions + slots
        write = T * Hq * D * 2 + 2 * T * Hkv * D * 2  # q_out, k and v cache rows
        return read + write, 3 * T * (Hq + Hkv) * D

    def _slots(self, gen):
        perm = torch.randperm(self.num_blocks, device="cuda", generator=gen)[: self.pages]
        tok = torch.arange(self.T, device="cuda")
        return (perm[tok // self.P] * self.P + tok % self.P).to(torch.int64)

    def make_set(self, gen):
        d = "cuda"
        T, Hq, Hkv, D = self.T, self.Hq, self.Hkv, self.D
        st = {
            "pos": torch.randint(0, self.max_pos, (T,), device=d, dtype=torch.int64, generator=gen),
            "q": torch.randn(T, Hq, D, device=d, dtype=torch.bfloat16, generator=gen),
            "k": torch.randn(T, Hkv, D, device=d, dtype=torch.bfloat16, generator=gen),
            "v": torch.randn(T, Hkv, D, device=d, dtype=torch.bfloat16, generator=gen),
            "cos_sin": self.cos_sin,
            "slots": self._slots(gen),
            "q_out": torch.empty(T, Hq, D, device=d, dtype=torch.bfloat16),
            "k_cache": torch.empty(self.num_blocks, self.P, Hkv, D, device=d, dtype=torch.bfloat16),
            "v_cache": torch.empty(self.num_blocks, self.P, Hkv, D, device=d, dtype=torch.bfloat16),
        }
        return st

    def refill(self, st, gen):
        fresh = self.make_set(gen)
        for k in ["pos", "q", "k", "v", "slots"]:
            st[k].copy_(fresh[k])

    def poison(self, st):
        st["q_out"].view(torch.int16).fill_(BF16_NAN)
        st["k_cache"].view(torch.int16).fill_(BF16_NAN)
        st["v_cache"].view(torch.int16).fill_(BF16_NAN)

    def launch(self, cfg, splits, st, stream):
        return self.lib.hone_kb_rope_kvcache(
            cfg, st["pos"].data_ptr(), st["q"].data_ptr(), st["k"].data_ptr(), st["v"].data_ptr(),
            st["cos_sin"].data_ptr(), st["slots"].data_ptr(), st["q_out"].data_ptr(), st["k_cache"].data_ptr(),
            st["v_cache"].data_ptr(), self.T, self.Hq, self.Hkv, self.D, stream)

    def candidate_outputs(self, st):
        return st["q_out"], st["k_cache"], st["v_cache"]

    def reference(self, st):
        cs = st["cos_sin"][st["pos"]].double()
        half = self.D // 2
        cos, sin = cs[:, None, :half], cs[:, None, half:]

        def rot(x):
            x = x.double()
            x1, x2 = x[..., :half], x[..., half:]
            return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

        return {"q": rot(st["q"]), "k": rot(st["k"]), "v": st["v"]}

    def check(self, st, ref, outs):
        q_out, kc, vc = outs
        slots = st["slots"]
        kflat = kc.view(-1, self.Hkv, self.D)
        vflat = vc.view(-1, self.Hkv, self.D)
        ok_q, m_q = close_metrics(ref["q"], q_out, self.tol["bf16"])
        ok_k, m_k = close_metrics(ref["k"], kflat[slots], self.tol["bf16"])
        ok_v = bool(torch.equal(vflat[slots], ref["v"]))
        mask = torch.ones(kflat.shape[0], dtype=torch.bool, device="cuda")
        mask[slots] = False
        untouched = bool((kflat[mask].view(torch.int16) == BF16_NAN).all().item()) and bool(
            (vflat[mask].view(torch.int16) == BF16_NAN).all().item())
        metrics = {"q": m_q, "k_cache": m_k, "v_cache_exact": ok_v, "other_slots_untouched": untouched}
        return ok_q and ok_k and ok_v and untouched, metrics

    def baselines(self):
        Hkv, D = self.Hkv, self.D
        half = D // 2

        def fn(pos, q, k, v, cos_sin, slots, k_cache, v_cache):
            cs = cos_sin[pos].float()
            cos, sin = cs[:, None, :half], cs[:, None, half:]

            def rot(x):
                xf = x.float()
                x1, x2 = xf[..., :half], xf[..., half:]
                return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)

            q_out = rot(q)
            k_cache.view(-1, Hkv, D).index_copy_(0, slots, rot(k))
            v_cache.view(-1, Hkv, D).index_copy_(0, slots, v)
            return q_out, k_cache, v_cache

        return fn, lambda st: (st["pos"], st["q"], st["k"], st["v"], st["cos_sin"], st["slots"], st["k_cache"],
                               st["v_cache"])


# ---------------------------------------------------------------------------------
class PagedDecode(Family):
    op = "paged_decode_attention"
    fid = 2
    input_names = ["q", "k_cache", "v_cache", "tables", "lens", "k_dense", "v_dense"]

    def __init__(self, lib, case, task):
        super().__init__(lib, case, task)
        d = self.dims
        self.B = int(d["batch"])
        self.L = int(d["seq_len"])
        self.Hq = int(d["num_q_heads"])
        self.Hkv = int(d["num_kv_heads"])
        self.D = int(d["head_dim"])
        self.P = int(d["page_size"])
        self.G = self.Hq // self.Hkv
        self.nb = (self.L + self.P - 1) // self.P
        self.num_blocks = self.B * self.nb + 1
        self.scale = 1.0 / math.sqrt(self.D)
        self.max_splits = 128
        ws = lib.hone_kb_paged_decode_workspace_bytes(self.B, self.Hq, self.D, self.max_splits)
        self.workspace = torch.empty(max(ws, 16) // 4 + 4, device="cuda", dtype=torch.float32)

    @staticmethod
    def cost(dims, params):
        B, L, Hq, Hkv, D, P = (int(dims[k]) for k in ["batch", "seq_len", "num_q_heads", "num_kv_heads",
                                                       "head_dim", "page_size"])
        nb = (L + P - 1) // P
        # K and V once per kv head, q in, out; page table and lengths. Split partials are
        # the kernel's own overhead and are not counted.
        return 2 * B * L * Hkv * D * 2 + 2 * B * Hq * D * 2 + B * nb * 4 + B * 4, 4 * B * Hq * L * D

    def split_candidates(self, config_name):
        wt = 16
        for part in config_name.split(","):
            if part.startswith("warp_tile="):
                wt = int(part.split("=")[1])
        tiles = (self.L + wt - 1) // wt
        return [s for s in [1, 2, 4, 8, 16, 32, 64, 128] if s <= tiles and s <= self.max_splits]

    def default_splits(self, config_name):
        ctas = self.B * self.Hkv
        want = max(1, math.ceil(2 * 132 / ctas))
        cands = self.split_candidates(config_name)
        return min(cands, key=lambda s: abs(math.log2(s) - math.log2(want)))

    def _fill(self, st, gen):
        B, L, Hkv, D, P = self.B, self.L, self.Hkv, self.D, self.P
        st["q"].copy_(torch.randn(B, self.Hq, D, device="cuda", dtype=torch.bfloat16, generator=gen))
        st["k_dense"].copy_(torch.randn(B, L, Hkv, D, device="cuda", dtype=torch.bfloat16, generator=gen))
        st["v_dense"].copy_(torch.randn(B, L, Hkv, D, device="cuda", dtype=torch.bfloat16, generator=gen))
        perm = torch.randperm(self.num_blocks, device="cuda", generator=gen)[: B * self.nb].to(torch.int32)
        st["tables"].copy_(perm.view(B, self.nb))
        st["k_cache"].zero_()
        st["v_cache"].zero_()
        pad = self.nb * P - L
        kp = torch.nn.functional.pad(st["k_dense"], (0, 0, 0, 0, 0, pad)).view(B * self.nb, P, Hkv, D)
        vp = torch.nn.functional.pad(st["v_dense"], (0, 0, 0, 0, 0, pad)).view(B * self.nb, P, Hkv, D)
        idx = st["tables"].view(-1).long()
        st["k_cache"][idx] = kp
        st["v_cache"][idx] = vp

    def make_set(self, gen):
        B, L, Hkv, D, P = self.B, self.L, self.Hkv, self.D, self.P
        d = "cuda"
        st = {
            "q": torch.empty(B, self.Hq, D, device=d, dtype=torch.bfloat16),
            "k_dense": torch.empty(B, L, Hkv, D, device=d, dtype=torch.bfloat16),
            "v_dense": torch.empty(B, L, Hkv, D, device=d, dtype=torch.bfloat16),
            "k_cache": torch.empty(self.num_blocks, P, Hkv, D, device=d, dtype=torch.bfloat16),
            "v_cache": torch.empty(self.num_blocks, P, Hkv, D, device=d, dtype=torch.bfloat16),
            "tables": torch.empty(B, self.nb, device=d, dtype=torch.int32),
            "lens": torch.full((B,), L, device=d, dtype=torch.int32),
            "out": torch.empty(B, self.Hq, D, device=d, dtype=torch.bfloat16),
        }
        self._fill(st, gen)
        return st

    def refill(self, st, gen):
        self._fill(st, gen)

    def poison(self, st):
        st["out"].view(torch.int16).fill_(BF16_NAN)

    def launch(self, cfg, splits, st, stream):
        return self.lib.hone_kb_paged_decode(
            cfg, splits, st["q"].data_ptr(), st["k_cache"].data_ptr(), st["v_cache"].data_ptr(),
            st["tables"].data_ptr(), st["lens"].data_ptr(), st["out"].data_ptr(), self.workspace.data_ptr(),
            self.B, self.Hq, self.Hkv, self.D, self.P, self.nb, self.scale, stream)

    def candidate_outputs(self, st):
        return (st["out"],)

    def reference(self, st):
        B, L, Hkv, G, D = self.B, self.L, self.Hkv, self.G, self.D
        out = torch.empty(B, self.Hq, D, device="cuda", dtype=torch.float32)
        step = max(1, (1 << 28) // max(1, L * Hkv * D))
        for b0 in range(0, B, step):
            b1 = min(B, b0 + step)
            q = st["q"][b0:b1].float().view(b1 - b0, Hkv, G, D)
            k = st["k_dense"][b0:b1].float().permute(0, 2, 1, 3)  # [b, Hkv, L, D]
            v = st["v_dense"][b0:b1].float().permute(0, 2, 1, 3)
            s = torch.matmul(q, k.transpose(-1, -2)) * self.scale  # [b, Hkv, G, L]
            p = torch.softmax(s, dim=-1)
            out[b0:b1] = torch.matmul(p, v).reshape(b1 - b0, self.Hq, D)
        return {"out": out}

    def check(self, st, ref, outs):
        ok, m = close_metrics(ref["out"], outs[0], self.tol["bf16"])
        return ok, {"out": m}

    def baseline_variants(self):
        from torch.nn.attention import SDPBackend
        return {"sdpa_flash": SDPBackend.FLASH_ATTENTION, "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION,
                "sdpa_efficient": SDPBackend.EFFICIENT_ATTENTION}

    def baselines(self):
        B, Hq, D, scale = self.B, self.Hq, self.D, self.scale

        def fn(q, k_dense, v_dense):
            qq = q.view(B, Hq, 1, D)
            k = k_dense.transpose(1, 2)  # [B, Hkv, L, D] view of the [B, L, Hkv, D] cache
            v = v_dense.transpose(1, 2)
            o = torch.nn.functional.scaled_dot_product_attention(qq, k, v, scale=scale, enable_gqa=True)
            return (o.view(B, Hq, D),)

        return fn, lambda st: (st["q"], st["k_dense"], st["v_dense"])


FAMILIES = {c.op: c for c in [RmsnormFp8, RopeKvCache, PagedDecode]}
