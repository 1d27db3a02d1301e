"""Speed items of Musat et al. 2025 (issue 18): `python bench/musat2025_speed.py`.

1. `emergence_times` for N = 4, 8, ..., 4096 (11 values), 3-parameter exact flow.
2. The exact 19-parameter flow (Gram space, q = N, strict) through emergence at N = 256, by the
   methods `stabilized` (the default), `auto` and `stiff_krylov` (Hessian-vector products).
3. Sampled SGD of the full disentangled transformer at App. C/D sizes: seconds per step of
   `DisentangledTransformer` (layer 2 on the query row only) against the literal torch model
   (`fastattn.models.reference.disentangled_transformer`, every layer on every row), same weights,
   same batches, float64, one thread.
"""

from __future__ import annotations

import time

import torch

from fastattn.models.disentangled import DisentangledTransformer, disentangled_forward
from fastattn.models.reference import disentangled_transformer
from fastattn.population import emergence
from fastattn.tasks import InductionPairs


def sgd_seconds(forward, params, task, batch: int, steps: int) -> float:
    t0 = time.perf_counter()
    for step in range(steps):
        b = task.sample(batch, step)
        loss = (((forward(b.X, *params) - b.y) ** 2).sum(-1) / task.dim).mean()
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                p -= g
    return (time.perf_counter() - t0) / steps


def main() -> None:
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    res = [emergence.emergence_times(4 * 2**k) for k in range(11)]
    print(f"emergence_times, N = 4..4096 (11 values): {time.perf_counter() - t0:.3f} s; "
          f"t_ICL(4096)/N^2 = {res[-1]['t_icl'] / 4096**2:.6f}")
    for method in ("stabilized", "auto", "stiff_krylov"):
        t0 = time.perf_counter()
        r = emergence.gram19_emergence_times(256, method=method)
        print(f"19-parameter exact flow through emergence, N = 256, {method}: "
              f"{time.perf_counter() - t0:.2f} s; {r}")
    for D, N, B in ((16, 4, 512), (16, 16, 512), (32, 16, 256)):
        task = InductionPairs(D, N, data="gaussian", reduction="mean")
        model = DisentangledTransformer(dim=D, mask="inclusive", init_scale=0.01)
        params = [p.detach().clone().requires_grad_(True) for p in (model.W1, model.W2, model.W3)]
        fast = sgd_seconds(lambda X, *W: disentangled_forward(X, *W, "inclusive"), params, task, B, 10)
        params = [p.detach().clone().requires_grad_(True) for p in (model.W1, model.W2, model.W3)]
        ref = sgd_seconds(lambda X, *W: disentangled_transformer(X, *W, "inclusive"), params, task, B, 10)
        print(f"SGD step D={D} N={N} B={B}: fastattn {1e3 * fast:.1f} ms, literal torch {1e3 * ref:.1f} ms "
              f"({ref / fast:.2f}x)")


if __name__ == "__main__":
    main()
