"""Fig. 8: head orthogonality of the §6 non-augmented model (NONAUG-§6, spec §3.6) with
duplicated tokens (d = 5, E = 10), every head initialised as head 0 + 0.05·N(0, 1) (the authors'
init_same): M = Σ_h B_hᵀ B_h `[E, E]` at initialisation and after training, B_h = W_O W_V^h (the
output map is shared in the authors' code; spec §9.11: whether the figure includes W_O is not
said, so M is also reported for B_h = W_V^h). Numbers: the off-diagonal energy ratio
‖M − diag M‖_F / ‖M‖_F, the same outside the copy structure (j = i or i ± d: the two copies of
s_{t,i}), and the mean |cosine| between the heads' B_h (Frobenius inner product).

CPU sizes (docs/sander2024.md): T_max = 20, H = 8, Adam lr 1e-2 on fresh batches of 256 for 1200
steps (the paper: T_max = 50, H not given, 200 epochs of 2¹⁴ sequences)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn import plots
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.experiments.sander2024.fig7 import DIM, cpu_run
from fastattn.models import build_model


def runs(quick: bool) -> list[RunSpec]:
    """One run at Fig. 7's CPU sizes with the preset's k = 2 copies, H = 8 heads (quick: 4)."""
    return [cpu_run("init_same", quick, {}, {"heads": 4 if quick else 8, "init_same": True})]


def orthogonality(maps: np.ndarray, dim: int = DIM) -> dict[str, Any]:
    """M = Σ_h B_hᵀ B_h for head maps `[H, E, E]`; its off-diagonal energy ratio ‖M − diag M‖_F /
    ‖M‖_F; the same outside the diagonal and the copy diagonals j = i ± d (with e_t = (s_t, s_t),
    coordinates i and i + d carry the same s_{t,i}, so coupling them is the duplication's own
    structure, not a lack of orthogonality); and the mean and max |cos| between distinct heads'
    maps (Frobenius)."""
    M = np.einsum("hij,hik->jk", maps, maps)
    E = len(M)
    structure = np.zeros((E, E), dtype=bool)
    for shift in range(-(E // dim) + 1, E // dim):
        structure |= np.eye(E, k=shift * dim, dtype=bool)
    flat = maps.reshape(len(maps), -1)
    unit = flat / np.linalg.norm(flat, axis=1, keepdims=True)
    cos = np.abs(unit @ unit.T)[~np.eye(len(maps), dtype=bool)]
    return {"M": M, "off_diagonal_energy_ratio": float(np.linalg.norm(M - np.diag(np.diag(M)))
                                                       / np.linalg.norm(M)),
            "off_copy_structure_energy_ratio": float(np.linalg.norm(M[~structure])
                                                     / np.linalg.norm(M)),
            "head_cosine_mean": float(cos.mean()), "head_cosine_max": float(cos.max())}


def _maps(model) -> dict[str, np.ndarray]:
    return {"W_O W_V": model.head_maps().detach().double().numpy(),
            "W_V": model.Wv.detach().double().numpy()}


def summarize(runs: list[Run]) -> dict[str, Any]:
    (run,) = runs
    t = run.spec.task
    curve = run.traj.test_loss["in_context"] / (t.duplicate * (t.context - 1) * t.dim)
    out: dict[str, Any] = {"heads": run.spec.model.heads, "test_mse_init": float(curve[0]),
                           "test_mse_final": float(curve[-1])}
    init, trained = _maps(build_model(run.spec.model)), _maps(run.model)
    for name in init:
        key = "B=WoWv" if name == "W_O W_V" else "B=Wv"
        out[key] = {"init": orthogonality(init[name]), "trained": orthogonality(trained[name])}
        # < 0: training made the heads more orthogonal than their (nearly equal) initialisation
        out[key]["head_cosine_change"] = (out[key]["trained"]["head_cosine_mean"]
                                          - out[key]["init"]["head_cosine_mean"])
        # the plain off-diagonal share is no measure of it: duplication gives the columns i and
        # i + d of W_V^h equal gradients, so orthogonal heads put ‖M‖/√2 on the copy diagonals
        out[key]["off_copy_structure_energy_change"] = (
            out[key]["trained"]["off_copy_structure_energy_ratio"]
            - out[key]["init"]["off_copy_structure_energy_ratio"])
    return out


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    for ax, when in zip(axes, ("init", "trained"), strict=True):
        s = summary["B=WoWv"][when]
        M = np.asarray(s["M"])
        lim = float(np.abs(M).max())
        plots.heatmap(ax, M, colorbar="Σ_h B_hᵀB_h entry", cmap="RdBu_r", vmin=-lim, vmax=lim,
                      xlabel="coordinate j of e_t (two copies of s_t)", ylabel="coordinate i")
        ax.set_title(f"{'initialisation' if when == 'init' else 'after training'}: off-diagonal "
                     f"{s['off_diagonal_energy_ratio']:.2f}, off-copy-structure "
                     f"{s['off_copy_structure_energy_ratio']:.2f},\nmean |cos| between heads "
                     f"{s['head_cosine_mean']:.2f}", fontsize=8)
    return fig


RECIPE = Recipe("Σ_h B_hᵀ B_h (B_h = W_O W_V^h) of the §6 non-augmented model with duplicated "
                "tokens, heads initialised equal up to 0.05·N(0, 1): at initialisation and after "
                "training (CPU sizes: docs/sander2024.md).", runs, summarize, plot)
