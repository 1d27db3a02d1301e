"""Long runs at the paper's setting (spec §3.2: d = 5, L = 40, σ² = 0.1, batch 256, Adam) trained
with the fused batched step (`train_batched`, fast stream, float32), evaluated at several context
lengths with the pattern metrics (spec §4.2); the recipes' `train()` path would take hours at
5·10⁵ steps. Runs of one H are trained together (R = number of seeds).

    python -m fastattn.experiments.he2025.batched_runs --steps 500000 --heads 1 2 4 8 \\
        --seeds 0 1 2 3 4 --out DIR

writes OUT/results.json (per run: risk ± standard error at each L, the theory's dGD risk, the
pattern metrics, the recorded batch losses, the group's wall and CPU time, and the risk of dGD
with the training length's step η*(40) at each L), OUT/H{h}_seed{s}.npz (final
wq, wk, wv `[H, D, D]`, wo `[H, D]` float32, and steps, losses) and OUT/progress.log.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fastattn.analysis.patterns import pattern_metrics
from fastattn.analysis.risk import monte_carlo_risk
from fastattn.experiments.he2025.settings import L_TRAIN, SIGMA2, D, task
from fastattn.models import MultiHeadSoftmax
from fastattn.theory.he2025 import eta_star, risk_dgd
from fastattn.training.batched import BatchedAdamConfig, train_batched
from fastattn.training.records import to_jsonable

LENGTHS = (10, 20, 40, 70, 100)


def run_group(heads: int, seeds: list[int], steps: int, lr: float, out: Path, n_prompts: int,
              threads: int, log) -> dict[str, Any]:
    """Train the runs (H = heads, init_seed s, data_seed 100 H + s) together; save and evaluate."""
    cfg = BatchedAdamConfig(lr=lr, steps=steps, batch_size=256, record_every=max(steps // 500, 1),
                            stream="fast", backend="fused", threads=threads)
    models = [MultiHeadSoftmax(D, heads, init_seed=s, dtype="float32") for s in seeds]
    start, cpu_start = time.perf_counter(), time.process_time()

    def progress(done, losses):
        log(f"H={heads}: {done}/{steps} steps, {time.perf_counter() - start:.0f} s, "
            f"batch losses {np.round(losses, 4).tolist()}")

    res = train_batched(models, [task(data_seed=100 * heads + s) for s in seeds], cfg,
                        progress=progress)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    log(f"H={heads}: trained in {wall:.0f} s wall, {cpu:.0f} s CPU (all threads)")
    runs = {}
    for r, (seed, model) in enumerate(zip(seeds, models, strict=True)):
        name = f"H{heads}_seed{seed}"
        np.savez(out / f"{name}.npz", **{n: getattr(model, n).detach().numpy() for n in
                                         ("wq", "wk", "wv", "wo")},
                 steps=res.steps, losses=res.losses[r])
        risks = {L: monte_carlo_risk(model, task(context=L), n_prompts, seed=L) for L in LENGTHS}
        metrics = pattern_metrics(model.extract_kq().detach().double().numpy(),
                                  model.extract_ov().detach().double().numpy())
        runs[name] = {
            "heads": heads, "init_seed": seed, "data_seed": 100 * heads + seed,
            "group_wall_s": wall, "group_cpu_s": cpu, "group_runs": len(seeds), "steps": steps, "lr": lr,
            "risk": {L: list(v[:2]) for L, v in risks.items()},
            # the trained model's step is fixed at training: dGD with η*(L_train) at every L
            "risk_dgd_train_eta": {L: float(risk_dgd(eta_star(D, L_TRAIN, SIGMA2), D, L, SIGMA2))
                                   for L in LENGTHS},
            "metrics": metrics, "loss_steps": res.steps, "losses": res.losses[r]}
        log(f"{name}: risk " + ", ".join(f"L={L}: {m:.4f}±{s:.4f}" for L, (m, s, *_) in
                                         risks.items())
            + f"; gamma {np.round(metrics['gamma'], 3)}, mu_plus {np.round(metrics['mu_plus'], 3)}")
    return runs


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=500_000)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--heads", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--n-prompts", type=int, default=20_000, help="Monte-Carlo prompts per risk")
    p.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    p.add_argument("--out", type=Path, required=True, help="directory for results and weights")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    log_path = args.out / "progress.log"

    def log(line: str) -> None:
        with open(log_path, "a") as fh:
            fh.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    doc: dict[str, Any] = {"steps": args.steps, "lr": args.lr, "n_prompts": args.n_prompts,
                           "threads": args.threads, "load_average_start": os.getloadavg(),
                           "runs": {}}
    for heads in args.heads:
        doc["runs"] |= run_group(heads, args.seeds, args.steps, args.lr, args.out,
                                 args.n_prompts, args.threads, log)
        doc["load_average_end"] = os.getloadavg()
        tmp = args.out / "results.json.tmp"
        with open(tmp, "w") as fh:
            json.dump(to_jsonable(doc), fh, indent=1)
        os.replace(tmp, args.out / "results.json")  # atomic: a reader never sees half a file


if __name__ == "__main__":
    main()
