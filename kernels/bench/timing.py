"""CUDA-graph timing for the device driver.

A "launch" is a callable launch(i) that enqueues one call of the op on the current
stream using rotating input set i (0 <= i < n_sets) and returns whatever must stay
alive (outputs a baseline allocated). GraphTimer captures calls_per_graph launches per
graph, sized so one replay lasts about target_ms, cycling the rotating sets across
graphs (n_sets sized by the caller to >= 2x L2 bytes, so each call reads cold data), and
times whole replays with CUDA events on the replay stream. Per-call samples are replay
time / calls_per_graph. Not thread-safe; one timer per (case, method).
"""
import math

import torch

MAX_CALLS_PER_GRAPH = 1000
MAX_GRAPHS = 24


class GraphTimer:
    def __init__(self, launch, n_sets, stream, target_ms=1.0):
        self.launch = launch
        self.n_sets = max(1, n_sets)
        self.stream = stream
        self.target_ms = target_ms
        self.graphs = []
        self.calls_per_graph = 0

    def _capture(self, first, count):
        g = torch.cuda.CUDAGraph()
        keep = []
        with torch.cuda.graph(g, stream=self.stream):
            for c in range(count):
                keep.append(self.launch((first + c) % self.n_sets))
        return g, keep

    def _replay_ms(self, g):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(self.stream):
            s.record(self.stream)
            g.replay()
            e.record(self.stream)
        self.stream.synchronize()
        return s.elapsed_time(e)

    def capture(self):
        """Warms up, estimates the per-call time, and captures the graphs."""
        with torch.cuda.stream(self.stream):
            for i in range(min(self.n_sets, 2)):
                self.launch(i)
        self.stream.synchronize()
        probe_calls = 8
        g, keep = self._capture(0, probe_calls)
        self._replay_ms(g)
        est = min(self._replay_ms(g) for _ in range(3)) / probe_calls
        del g, keep
        k = int(max(1, min(MAX_CALLS_PER_GRAPH, round(self.target_ms / max(est, 1e-4)))))
        n_graphs = int(max(1, min(MAX_GRAPHS, math.ceil(self.n_sets / k))))
        self.calls_per_graph = k
        self.graphs = [self._capture(gi * k, k) for gi in range(n_graphs)]
        for g, _ in self.graphs:  # first replay uploads the graph
            self._replay_ms(g)
        return est

    def replay(self, replays):
        events = []
        with torch.cuda.stream(self.stream):
            for _ in range(replays):
                for g, _ in self.graphs:
                    s = torch.cuda.Event(enable_timing=True)
                    e = torch.cuda.Event(enable_timing=True)
                    s.record(self.stream)
                    g.replay()
                    e.record(self.stream)
                    events.append((s, e))
        self.stream.synchronize()
        return [s.elapsed_time(e) / self.calls_per_graph for s, e in events]

    def release(self):
        self.graphs = []


def percentile(xs, p):
    ys = sorted(xs)
    if not ys:
        return 0.0
    k = (len(ys) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return ys[lo] + (ys[hi] - ys[lo]) * (k - lo)


def summarize(xs):
    return {"median": percentile(xs, 50), "p20": percentile(xs, 20), "p80": percentile(xs, 80), "n": len(xs)}
