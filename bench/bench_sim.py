"""Benchmark: one simulated step (``scaleout.sim.simulate``) of the planner's presets and of
the 1T model on 3,072 A100s, with and without stragglers.

Per case this prints the best of three runs, the operations simulated, events per second,
the time over the issue's 2 s target (a ratio, not an assertion: the machine is shared) and
the step beside the planner's closed form. Without stragglers the d replicas are symmetric
and simulated once; one straggler splits off its replica (two simulated); lognormal jitter
makes every replica distinct (d simulated). Then a DeepSeek-V3-like mixture of experts
(chapter 16's: every layer split into attention, experts and four all-to-alls) under 1F1B
and DualPipe-V, with its exposed all-to-all. Last, tensor parallelism per layer (``tp_ops``)
on a small GPT-3-like configuration: "layer" (closed form inside each operation) beside "op"
(each layer's GEMMs and collectives as operations), events and events per second side by side.

    PYTHONPATH=lib .venv/bin/python bench/bench_sim.py
"""

from __future__ import annotations

import time

from scaleout import planner as PL
from scaleout import sim
from scaleout.moe import published as MP

TARGET_S = 2.0
ONE_T = PL.Plan(t=8, p=64, d=6, b=1, sp=True, recompute="selective")  # Narayanan et al. Table 1
GPT3 = PL.Plan(t=8, p=16, d=8, b=1, sp=True, recompute="selective")
CASES = [
    ("GPT-3 175B, 1,024 A100", "GPT-3 175B, 1,024 A100", GPT3, None),
    ("GPT-3, 1 straggler", "GPT-3 175B, 1,024 A100", GPT3, {5: 1.1}),
    ("GPT-3, lognormal", "GPT-3 175B, 1,024 A100", GPT3, sim.Lognormal(0.05)),
    ("1T, 3,072 A100", "1T, 3,072 A100", ONE_T, None),
    ("1T, 1 straggler", "1T, 3,072 A100", ONE_T, {5: 1.1}),
]


def best_of(runs, *args, **kwargs):
    best, out = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        out = sim.simulate(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> int:
    print(f"{'case':<24} {'ops':>8} {'s':>7} {'ops/s':>10} {'/target':>8} {'sim/planner':>12}")
    for label, preset, plan, stragglers in CASES:
        model, cluster, batch = PL.PRESETS[preset]
        secs, tr = best_of(3, model, cluster, batch, plan, stragglers=stragglers)
        ops = len(tr._arrays["start"])
        ratio = tr.step_s / PL.predict(model, cluster, batch, plan).step_s
        print(f"{label:<24} {ops:>8} {secs:>7.3f} {ops / secs:>10.0f} {secs / TARGET_S:>8.2f} "
              f"{ratio:>12.3f}")  # fmt: skip
    v3 = MP.DEEPSEEK_V3
    ds = PL.Model("DeepSeek-V3-like", layers=64, hidden=v3.hidden, heads=128, seq=4096,
                  vocab=v3.vocab, ffn=(v3.k + v3.shared_experts) * v3.expert_ffn, swiglu=True,
                  tied_embeddings=False, positions=False)  # fmt: skip
    plan = PL.Plan(t=1, p=16, d=128, b=1, recompute="none", zero=1)
    spec = sim.MoE(v3.experts, v3.k, 64, 1 + MP.FP8_SCALE_BYTES_PER_ELEMENT)
    print(f"{'MoE case':<24} {'ops':>8} {'s':>7} {'ops/s':>10} {'/target':>8} {'a2a exposed':>12}")
    for name in ("1f1b", "dualpipe-v"):
        secs, tr = best_of(3, ds, PL.h100_cluster(2048), 15360, plan, schedule=name, moe=spec)
        ops = len(tr._arrays["start"])
        print(f"{'V3-like MoE, ' + name:<24} {ops:>8} {secs:>7.3f} {ops / secs:>10.0f} "
              f"{secs / TARGET_S:>8.2f} {tr.exposed_s('ep', 0):>10.2f} s")  # fmt: skip
    model, cluster, batch = PL.PRESETS["GPT-3 175B, 1,024 A100"]
    model = PL.Model("GPT-3, 8 layers", layers=8, hidden=model.hidden, heads=model.heads,
                     seq=model.seq, vocab=model.vocab)  # fmt: skip
    plan = PL.Plan(t=8, p=4, d=1, b=1, sp=True, recompute="selective", overlap="megatron")
    row = {}
    for mode in ("layer", "op"):
        secs, tr = best_of(3, model, PL.a100_cluster(32), 16, plan, tp_ops=mode)
        row[mode] = (len(tr._arrays["start"]), secs, tr.step_s)
    (n_l, s_l, st_l), (n_o, s_o, st_o) = row["layer"], row["op"]
    print(f"{'TP case (8 layers, t 8)':<24} {'events':>8} {'events/s':>10} {'events':>8} "
          f"{'events/s':>10} {'op/layer s':>10} {'step op/layer':>13}")  # fmt: skip
    print(f"{'layer | op':<24} {n_l:>8} {n_l / s_l:>10.0f} {n_o:>8} {n_o / s_o:>10.0f} "
          f"{s_o / s_l:>10.1f} {st_o / st_l:>13.4f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
