"""Fig. 4: an AR(1) process fits text better than shuffled text (spec §2.6, §6). Each sequence of
T = 5 consecutive token vectors gets the minimum-norm least-squares fit A = argmin Σ_t ‖s_{t+1} −
A s_t‖², is regenerated from s_1 by ŝ_{t+1} = A ŝ_t, and scored by its MSE; sequences with MSE >
1e-12 are counted and histogrammed, for the text in order and for the same tokens permuted.

Sizes: the paper embeds ≈ 325 000 GPT-2 tokens of Moby-Dick (first 10 000 sequences in its code)
with gpt2-large's `wte`, d = 1280. Here: the shipped opening of Chapter 1 (fastattn.tasks.text,
≈ 2000 word/punctuation tokens, 394 sequences), unit-norm random Gaussian token vectors of the same
width d = 1280, and the shuffled count averaged over permutations (one permutation of ≈ 400
sequences is noisy). `successor_conflicts` predicts from the token ids alone which sequences
cannot be fitted; the least-squares count must equal it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.tasks import text
from fastattn.theory import sander2024 as theory

T, DIM, THRESHOLD = 5, 1280, 1e-12
EMBED_SEED, SHUFFLE_SEED = 0, 1


def runs(quick: bool) -> list[RunSpec]:
    return []


def _counts(seq: np.ndarray, emb: np.ndarray) -> tuple[np.ndarray, int, int]:
    mse = theory.ar_fit_rollout_mse(emb[seq])
    return mse, int((mse > THRESHOLD).sum()), int(theory.successor_conflicts(seq).sum())


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    ids, vocab = text.tokenize(text.moby_dick_sample())
    seq = text.token_sequences(ids, T)
    emb = text.random_embeddings(len(vocab), DIM, EMBED_SEED)
    rng = np.random.default_rng(SHUFFLE_SEED)
    n_perm = 20 if quick else 1000
    mse, n_fit, n_conflict = _counts(seq, emb)
    flat = seq.reshape(-1)
    shuffled = [flat[rng.permutation(flat.size)].reshape(seq.shape) for _ in range(n_perm)]
    first_mse, first_fit, first_conflict = _counts(shuffled[0], emb)   # least squares on one
    conflicts = np.array([theory.successor_conflicts(s).sum() for s in shuffled])
    mean = float(conflicts.mean())
    return {
        "n_tokens": int(ids.size), "vocabulary": len(vocab), "n_sequences": len(seq),
        "T": T, "dim": DIM, "threshold": THRESHOLD, "n_permutations": n_perm,
        "original": {"n_mse_above_threshold": n_fit, "n_successor_conflicts": n_conflict,
                     "max_mse_of_exact_fits": float(mse[mse <= THRESHOLD].max()),
                     "mse_above_threshold": mse[mse > THRESHOLD]},
        "shuffled_first": {"n_mse_above_threshold": first_fit,
                           "n_successor_conflicts": first_conflict,
                           "mse_above_threshold": first_mse[first_mse > THRESHOLD]},
        "shuffled_conflicts": {"mean": mean, "std": float(conflicts.std()),
                               "standard_error": float(conflicts.std() / np.sqrt(n_perm)),
                               "min": int(conflicts.min()), "max": int(conflicts.max()),
                               "fraction_above_original": float((conflicts > n_fit).mean()),
                               "counts": conflicts},
        "ratio_shuffled_over_original": mean / n_fit,
        "paper_ratio": 4.0}


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9, 3.4))
    o, s = summary["original"], summary["shuffled_first"]
    bins = np.linspace(0, max(np.max(o["mse_above_threshold"]), np.max(s["mse_above_threshold"])), 30)
    ax.hist(o["mse_above_threshold"], bins=bins, color="#007acc", alpha=0.7,
            label=f"original ({o['n_mse_above_threshold']})")
    ax.hist(s["mse_above_threshold"], bins=bins, color="#cc7000", alpha=0.5,
            label=f"shuffled ({s['n_mse_above_threshold']})")
    ax.set_xlabel("MSE of the AR(1) fit (> 1e-12)")
    ax.set_ylabel("sequences")
    ax.set_title(f"{summary['n_sequences']} sequences of T = {summary['T']}, d = {summary['dim']}",
                 fontsize=9)
    ax.legend(fontsize=8)
    c = summary["shuffled_conflicts"]
    bx.hist(c["counts"], bins=np.arange(c["min"], c["max"] + 2) - 0.5, color="#cc7000", alpha=0.6,
            label=f"shuffled: {c['mean']:.1f} ± {c['std']:.1f}")
    bx.axvline(o["n_mse_above_threshold"], color="#007acc", lw=2,
               label=f"original: {o['n_mse_above_threshold']}")
    bx.set_xlabel("sequences with MSE > 1e-12")
    bx.set_ylabel("permutations")
    bx.set_title(f"ratio {summary['ratio_shuffled_over_original']:.2f} (paper: 4)", fontsize=9)
    bx.legend(fontsize=8)
    return fig


RECIPE = Recipe("Text in order needs fewer inexact AR(1) fits than the same tokens shuffled.",
                runs, summarize, plot)
