"""Fig. 7 (§4.2–4.3, spec §9.4): the trained small standard transformer's weights in the
interpretable basis: layer-1 QK, layer-2 QK and the read-out, each indexed by tokens, positions and
what the heads wrote. The summary measures how well each matrix is "one diagonal in one block"."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.analysis.induction_circuit import READOUT_BLOCKS, interpretable_weights, progress_measures
from fastattn.experiments.musat2025 import standard
from fastattn.experiments.recipe import Recipe, Run, RunSpec

#: short tick names of the readout's 8 bases (README of the caption): "1t" = O1V1·t, "21t" = O2V2·O1V1·t
_SHORT = ("t", "p", "1t", "1p", "2t", "2p", "21t", "21p")


def basis_labels(N_T: int, N_P: int, blocks: int) -> list[str]:
    """Tick labels of the first `blocks` bases of `READOUT_BLOCKS`: t1..t{N_T}, p1..p{N_P}, 1t1, …"""
    return [f"{name}{i}" for b, name in enumerate(_SHORT[:blocks])
            for i in range(1, (N_T if b % 2 == 0 else N_P) + 1)]


def _columns(b: int, N_T: int, N_P: int) -> slice:
    """Columns of basis block b of `READOUT_BLOCKS` (subspace b // 2; its T part, then its P part)."""
    start = (b // 2) * (N_T + N_P) + (b % 2) * N_T
    return slice(start, start + (N_P if b % 2 else N_T))


def structure(mats: dict[str, np.ndarray], N_T: int, N_P: int) -> dict[str, Any]:
    """For each matrix, its expected block (layer 1: P-P subdiagonal; layer 2: query T × key O1V1·T
    diagonal; read-out: O2V2·T diagonal): the mean of the expected entries, the RMS of every other
    entry of the matrix, and the fraction of rows whose largest entry in the block is the expected
    one (previous position, among the keys the causal mask lets position i see, 1..i; the key that
    layer 1 wrote the query's token to; the retrieved token)."""
    n = N_T + N_P
    A1, A2, R = mats["layer1_qk"], mats["layer2_qk"], mats["readout"]
    k = _columns(READOUT_BLOCKS.index("O2V2·T"), N_T, N_P).start
    picks = {"layer1_qk": (A1, A1[N_T:, N_T:], np.arange(1, N_P), np.arange(0, N_P - 1), (N_T, N_T)),
             "layer2_qk": (A2, A2[:N_T, n:n + N_T], np.arange(N_T), np.arange(N_T), (0, n)),
             "readout": (R, R[:, k:k + N_T], np.arange(N_T), np.arange(N_T), (0, k))}
    # a position never scores a later one: mask the p-p block's future keys (not the other blocks)
    causal = {"layer1_qk": np.tril(np.ones((N_P, N_P), bool))}
    out = {}
    for name, (full, block, rows, cols, (r0, c0)) in picks.items():
        mask = np.ones(full.shape, bool)
        mask[rows + r0, cols + c0] = False
        seen = np.where(causal.get(name, np.ones(block.shape, bool)), block, -np.inf)
        out[name] = {"expected_mean": float(block[rows, cols].mean()),
                     "other_rms": float(np.sqrt(np.mean(full[mask] ** 2))),
                     "argmax_fraction": float(np.mean(seen[rows].argmax(1) == cols))}
    out["readout"]["block_norms"] = {name: float(np.linalg.norm(R[:, _columns(b, N_T, N_P)]))
                                     for b, name in enumerate(READOUT_BLOCKS)}
    return out


def runs(quick: bool) -> list[RunSpec]:
    return [standard.spec(standard.setting("small", quick))]


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    s = standard.setting("small", quick)
    (run,) = runs
    model, traj = run.model, run.traj
    mats = interpretable_weights(model.circuit_weights())
    test = s.task().test_sets(1024, seed=7)["query"]         # a third seed: neither data nor records
    return {"settings": standard.settings_json(s), "final_loss": float(traj.loss[-1]),
            "final_test_loss": float(traj.test_loss["query"][-1]),
            "test_accuracy": s.task().accuracy(model, test),
            "measures": progress_measures(model.circuit_weights()),
            "structure": structure(mats, s.vocab, s.vocab), "matrices": mats,
            "wall_time_training": traj.wall_time}


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    from fastattn import plots

    s = summary["settings"]
    N = s["vocab"]
    fig, axes = plt.subplots(1, 3, figsize=(17, 6.2), gridspec_kw={"width_ratios": [1.25, 1.6, 2.6]})
    panels = (("layer1_qk", "layer 1: (W_Q¹E)ᵀ(W_K¹E)", "query", 2, 2),
              ("layer2_qk", "layer 2: (W_Q²E)ᵀ(W_K²[E, O1V1·E])", "query", 2, 4),
              ("readout", "read-out: W_o [E, O1V1·E, O2V2·E, O2V2·O1V1·E]", "output token", 1, 8))
    for ax, (key, title, ylabel, nrow, ncol) in zip(axes, panels, strict=True):
        m = np.asarray(summary["matrices"][key])
        v = float(np.abs(m).max()) or 1.0
        plots.heatmap(ax, m, xticklabels=basis_labels(N, N, ncol),
                      yticklabels=basis_labels(N, N, nrow) if nrow > 1 else [str(i) for i in range(1, N + 1)],
                      colorbar="score" if key != "readout" else "logit", tick_step=N // 2,
                      cmap="RdBu_r", vmin=-v, vmax=v, interpolation="nearest",
                      xlabel="key" if key != "readout" else "residual basis vector", ylabel=ylabel)
        for edge in range(N, m.shape[1], N):
            ax.axvline(edge - 0.5, color="0.3", lw=0.5)
        for edge in range(N, m.shape[0], N):
            ax.axhline(edge - 0.5, color="0.3", lw=0.5)
        ax.tick_params(axis="x", labelrotation=90, labelsize=7)
        ax.tick_params(axis="y", labelsize=7)
        ax.set_title(title)
    return fig


RECIPE = Recipe("Small standard transformer after AdamW (App. E, at CPU width: settings in the JSON). "
                "Rows: queries (output tokens); t: token, p: position, 1x: written by head 1 (O1V1·x), "
                "2x: by head 2, 21x: O2V2·O1V1·x. Expected: a subdiagonal in layer 1's p-p block, a "
                "diagonal in layer 2's (t, 1t) block and in the read-out's 2t block.",
                runs, summarize, plot)
