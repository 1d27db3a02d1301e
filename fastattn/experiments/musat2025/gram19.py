"""§11.3: exact flows of the 19-parameter Gram-space model against the 3-parameter model, for both
query positions and both masks (orthonormal data)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.experiments.musat2025 import flows
from fastattn.experiments.recipe import Recipe, Run, RunSpec


def _cases(quick: bool) -> list[tuple[str, str, int]]:
    """(query, mask, N) of each row."""
    return [(query, mask, N) for query in ("last", "uniform") for mask in ("strict", "inclusive")
            for N in ([4, 8] if quick else [4, 8, 16])]


def runs(quick: bool) -> list[RunSpec]:
    return [flows.flow_spec(f"{kind}_{query}_{mask}_N{N}", kind, N, query, mask)
            for query, mask, N in _cases(quick) for kind in ("three_param", "gram19")]


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    rows = []
    for query, mask, N in _cases(quick):
        row = {"query": query, "mask": mask, "N": N}
        for name, kind in (("three_param", "three_param"), ("gram19", "gram19")):
            run = flows.by_group(runs, model=kind, N=N, query=query, mask=mask)
            r = flows.emergence(run)
            r01 = flows.emergence(run, (0.5, 0.1, 0.1), loss=False)
            row[name] = {**r, "T_beta_0.1": r01["T_beta"], "T_alpha_0.1": r01["T_alpha"]}
        rows.append(row)
    return {"rows": rows}


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    rows = summary["rows"]
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"{r['query'][0]}/{r['mask'][:3]}/{r['N']}" for r in rows]
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["three_param"]["t_loss"] for r in rows], 0.4, label="3-param: loss ≤ ½")
    ax.bar(x + 0.2, [r["gram19"]["t_loss"] for r in rows], 0.4, label="19-param: loss ≤ ½")
    ax.set_xticks(x, labels, rotation=60, fontsize=7)
    ax.set(yscale="log", ylabel="gradient-flow time", title="exact flows, orthonormal data",
           xlabel="query / mask / N")
    ax.legend()
    return fig


RECIPE = Recipe("Time for the loss to reach ½ per (query, mask, N); the 19-parameter model's extra "
                "directions speed the drop up.", runs, summarize, plot)
