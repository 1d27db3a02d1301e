"""§11.4: emergence with a uniform query position, t_ICL ≈ N²/(0.622 ln N + 0.143), against the
last-query t_ICL."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.experiments.musat2025 import flows
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.theory import musat2025 as th


def _sizes(quick: bool) -> list[int]:
    return [4 * 2**k for k in range(6 if quick else 8)]


def runs(quick: bool) -> list[RunSpec]:
    # α₃ crosses last at both query positions (an earlier stop would be an error of `emergence`)
    return [flows.flow_spec(f"{query}_N{N}", "three_param", N, query, until="T_alpha>=0.5")
            for N in _sizes(quick) for query in ("uniform", "last")]


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    Ns = _sizes(quick)
    res = [flows.emergence(flows.by_group(runs, N=N, query="uniform"), loss=False) for N in Ns]
    fit = th.uniform_query_t_icl(np.array(Ns, dtype=float))
    slope = np.diff(np.log([r["t_icl"] for r in res])) / np.diff(np.log(Ns))
    return {"N": Ns, "times": res, "fit": fit.tolist(), "local_exponent": slope.tolist(),
            "fit_rel_error": [abs(r["t_icl"] - f) / r["t_icl"] for r, f in zip(res, fit, strict=True)],
            "t_icl_last_query": [flows.emergence(flows.by_group(runs, N=N, query="last"),
                                                 loss=False)["t_icl"] for N in Ns]}


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    Ns = summary["N"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(Ns, [r["t_icl"] for r in summary["times"]], "o-", label="t_ICL, q ~ Unif (exact flow)")
    ax.plot(Ns, summary["fit"], "k--", label="N²/(0.622 ln N + 0.143)")
    ax.plot(Ns, summary["t_icl_last_query"], "s:", label="t_ICL, q = N")
    ax.set(xscale="log", yscale="log", xlabel="N", ylabel="time")
    ax.legend()
    return fig


RECIPE = Recipe("Exact 3-parameter flow, strict mask, orthonormal data; the query position uniform "
                "over the N items.", runs, summarize, plot)
