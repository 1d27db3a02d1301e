"""Where the time of one large flow goes: the run cut into stretches of time, each stretch integrated
from the same state by several integrators (steps, rejections, evaluations, HVPs, seconds); the
trajectory goes on from the first method's end state. Produces the D = 256 table of docs/sweeps.md.

Setting: the sweep benchmark's point (separate rank 1, H = D, linear spectrum, init 1e-2·√D, seed
applied to init, rotation and data), rtol 1e-5, atol 1e-9, stop at L ≤ 1.05·L*.

Run: python bench/flow_stretches.py --dim 256 --context 512 --methods rk45,stiff_krylov
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fastattn import population
from fastattn.cli_options import build_run
from fastattn.sweep.grid import resolve
from fastattn.sweep.runner import Horizon, plan_flow


def main(dim: int, context: int, seed: int, methods: list[str], stretches: int, t_first: float) -> None:
    spec = resolve({"model": "separate", "dim": dim, "context": context, "heads": dim, "rank": 1,
                    "init": 1e-2 * dim ** 0.5, "spectrum": "linear", "init_seed": seed,
                    "rotation_seed": seed, "data_seed": seed})
    spec, theory = plan_flow(spec, Horizon())
    task, model, cfg = build_run(spec)[:3]
    config, moments = model.config, task.moments()
    levels = np.asarray(theory["theory_levels"])
    p, t = model.to_flat(), 0.0
    print(f"D={dim} N={context} seed={seed}: target L <= {cfg.target_loss:.6g}, horizon {cfg.t_end:.3g}")
    for t_stop in np.geomspace(t_first, cfg.t_end, stretches):
        cells, first = [], None
        for method in methods:
            start = time.perf_counter()
            r = population.integrate(population.LinearAttentionObjective(config, moments), p,
                                     method=method, t_end=t_stop - t, rtol=1e-5, atol=1e-9,
                                     target_loss=cfg.target_loss)
            cells.append(f"{method}: {r.n_steps} steps / {r.n_rejected} rejected / {r.n_evals} evals / "
                         f"{r.n_hvp} HVPs / {time.perf_counter() - start:.1f} s")
            first = first or r
        p, t = first.final_params, t + first.t_final
        loss = population.loss_and_grad(config, p, moments)[0]
        learned = int(np.sum(levels > loss * (1 + 1e-9))) - 1   # Eq. 19 levels above the loss
        head = f"t={t:.3g} L/L*={loss / theory['theory_Lstar']:.4f} directions~{learned}"
        print(" | ".join([head, *cells]), flush=True)
        if first.status == "target_loss":
            break


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--context", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", default="rk45,stiff_krylov")
    ap.add_argument("--stretches", type=int, default=30,
                    help="log-spaced stretches from --t-first to the horizon")
    ap.add_argument("--t-first", type=float, default=1e4)
    a = ap.parse_args()
    main(a.dim, a.context, a.seed, a.methods.split(","), a.stretches, a.t_first)
