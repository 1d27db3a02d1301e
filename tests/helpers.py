"""Small shared test utilities (importable as `helpers`; pytest puts tests/ on sys.path)."""

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from scipy import stats


def random_spd(rng: np.random.Generator, d: int) -> np.ndarray:
    """A random symmetric positive-definite matrix [d, d] with a spread spectrum."""
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return (q * rng.uniform(0.1, 1.0, d)) @ q.T


def seeded_torch(rng: np.random.Generator) -> torch.Generator:
    return torch.Generator().manual_seed(int(rng.integers(2**31)))


def mc_mean_and_se(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Monte-Carlo mean and its standard error over axis 0."""
    return samples.mean(0), samples.std(0, ddof=1) / np.sqrt(len(samples))


#: the chance that an exact value fails `assert_mc_agrees` (all its components together): every
#: test draws a fresh seed, so a fixed number of standard errors fails a correct value in some run
#: (4 SE over 19 components: once in 800 runs)
MC_ALPHA = 1e-6


def mc_z_bound(n_components: int, alpha: float = MC_ALPHA, dof: int | None = None) -> float:
    """The two-sided quantile at alpha / n_components (Bonferroni) of the normal law, or of
    Student's t with `dof` degrees of freedom where the standard error comes from dof + 1 batch
    means: 4.9 for one component, 5.3 for 9, 5.5 for 33 (normal)."""
    tail = alpha / (2 * n_components)
    return float(stats.norm.isf(tail) if dof is None else stats.t.isf(tail, dof))


def assert_mc_agrees(mean, se, exact, atol: float = 0.0, alpha: float = MC_ALPHA,
                     dof: int | None = None, what: str = "") -> None:
    """Monte-Carlo means with their standard errors (arrays of one shape, or scalars) agree with the
    exact values: |mean − exact| ≤ z·se + atol in every component, z = `mc_z_bound(components,
    alpha, dof)`."""
    mean, se, exact = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (mean, se, exact)))
    z = mc_z_bound(mean.size, alpha, dof)
    off = np.abs(mean - exact) - atol
    bad = off > z * se
    worst = np.unravel_index(np.argmax(off / np.maximum(se, 1e-300)), mean.shape)
    assert not bad.any(), (
        f"{what}{': ' if what else ''}"
        f"{bad.sum()} of {mean.size} components beyond {z:.2f} standard errors; the worst, at "
        f"{tuple(map(int, worst))}: mean {mean[worst]:.6g} ± {se[worst]:.3g}, exact {exact[worst]:.6g}")


def ellipsis_pattern(expected: str) -> re.Pattern:
    """The output a doc page shows, as a regex for `fullmatch`: `...` is any text within a line,
    or any number of lines on a line of its own (doctest's ELLIPSIS)."""
    parts = []
    for line in expected.splitlines():
        if line == "...":
            parts.append(r"(?:.*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.split("...")) + r"\n")
    return re.compile("".join(parts))


#: name → {"doc", "out", "figures"} of each figure reproduced quick in this session (`quick_figure`)
_QUICK_FIGURES: dict[str, dict[str, Any]] = {}


def quick_figure(name: str, out: Path) -> dict[str, Any]:
    """Figure `name` reproduced quick once a session (`registry.reproduce(name, out, quick=True)`):
    {"doc": its JSON document, "out": the folder of its PNG, JSON and runs, "figures": the figures
    it saved}. The smoke test reproduces every quick figure, and the tests of a quick figure's
    numbers (the docs' quotes, the papers' claims) read the same runs instead of training them
    again; `out` is used by the first caller only."""
    if name not in _QUICK_FIGURES:
        from fastattn import plots
        from fastattn.experiments import registry

        saved, save = [], plots.save
        plots.save = lambda fig, path, *a: saved.append(fig) or save(fig, path, *a)
        try:
            doc = registry.reproduce(name, out, quick=True)
        finally:
            plots.save = save
        _QUICK_FIGURES[name] = {"doc": doc, "out": Path(out), "figures": saved}
    return _QUICK_FIGURES[name]


def quick_summary(name: str, out: Path) -> dict[str, Any]:
    """The summary of figure `name`'s quick form (`quick_figure`)."""
    return quick_figure(name, out)["doc"]["summary"]


def triton_device(where: str, monkeypatch) -> torch.device:
    """Where a Triton kernel runs: "interpreter" (the CPU interpreter, TRITON_INTERPRET=1, read at
    launch) or "cuda" (compiled; the test is skipped without a CUDA device)."""
    if where == "interpreter":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        return torch.device("cpu")
    if not torch.cuda.is_available():
        pytest.skip("compiled Triton kernels need a CUDA device; none is visible")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    return torch.device("cuda")


def induction_head(N_T: int, N_P: int, c: float, b: float, g: float, self_penalty: float = 0.0,
                   seed: int = 0):
    """The paper's matrices (`fastattn.analysis.induction_circuit.CircuitWeights`) of an exact
    induction head in D = 4n, n = N_T + N_P: T, P and the three written subspaces are orthonormal
    blocks E1..E4; O1V1 swaps E1 and E2, O2V2 maps E1 → E3 and E2 → E4; layer 1 queries position
    i for position i − 1 (c), layer 2 token t for O1V1 t (b), the read-out reads O2V2 T (g).
    `self_penalty` s adds −s to layer 2's (query t, key t) scores: the first token of a sequence has
    no previous one and attends to itself, so the first item matches its own query as well as the
    label after it; the penalty breaks that tie."""
    from fastattn.analysis.induction_circuit import CircuitWeights

    n = N_T + N_P
    gen = torch.Generator().manual_seed(seed)
    Q, _ = torch.linalg.qr(torch.randn(4 * n, 4 * n, generator=gen, dtype=torch.float64))
    E1, E2, E3, E4 = Q[:, :n], Q[:, n:2 * n], Q[:, 2 * n:3 * n], Q[:, 3 * n:]
    T, P = E1[:, :N_T], E1[:, N_T:]
    eye = torch.eye(4 * n, dtype=torch.float64)
    R1 = E2 @ E1.T + E1 @ E2.T + E3 @ E3.T + E4 @ E4.T
    R2 = E3 @ E1.T + E4 @ E2.T + E1 @ E3.T + E2 @ E4.T
    WQ1 = c * P[:, :-1] @ P[:, 1:].T
    WQ2 = b * E2[:, :N_T] @ T.T - self_penalty * T @ T.T
    Wo = g * E3[:, :N_T].T
    return CircuitWeights(T, P, WQ1, eye, eye, R1, WQ2, eye, eye, R2, Wo)


def half_precision_bound(dtype: torch.dtype) -> float:
    """Relative RMS error bound of causal linear attention's output and each gradient with
    bfloat16 / float16 inputs, against float64 on the same rounded inputs (and output gradient).

    Every float32 accumulation is exact to ~1e-7, far below; the error is the kernel's roundings
    of float32 values to the input dtype, each a relative perturbation of at most u_r:
    u_r = 2^-8 (bfloat16) or 2^-11 (float16) rounding to nearest, as compiled; 2^-7 for bfloat16
    under Triton 3.9's interpreter, whose float32 -> bfloat16 cast truncates (it ignores the
    rounding mode). Each output is an inter-chunk sum (q h, do hᵀ, v dhᵀ, k dh: the state
    rounded where it meets the half operand) plus an intra-chunk sum (A v, dA k, ...: A or dA
    rounded), then rounded itself. In each sum the rounded factor multiplies an independent
    zero-mean input (q_t is independent of h and of k_m, v_m of A_tm, ...), so its error's RMS is
    at most u_r times the sum's RMS; the two sums are uncorrelated, so their RMS add to at most
    √2 |o|; the final rounding adds u_r |o|. Bound: (1 + √2) u_r relative RMS, for any length T
    (no error accumulates across chunks: the states stay float32).
    """
    from fastattn.triton_kernels._launch import interpreting

    u = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}[dtype]
    if dtype == torch.bfloat16 and interpreting():
        u *= 2
    return (1 + 2**0.5) * u


def relative_rms(got: torch.Tensor, want: torch.Tensor) -> float:
    """‖got - want‖ / ‖want‖ in float64 (``got`` may be on another device)."""
    want = want.detach().double()
    return float((got.detach().double().to(want.device) - want).norm() / want.norm())
