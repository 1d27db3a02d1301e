"""Exact objectives of Musat et al. 2025's induction-head models (docs/musat2025.md), in C++.

- `InductionThreeParamObjective(N, query, mask)`: the 3-parameter model θ = (α₃, β₂, γ₃) on
  orthonormal data (spec §7.2–7.3 closed form for q = N, strict; the O(N)-per-query form of §11.4
  otherwise).
- `InductionGram19Objective`: the 19 pseudo-parameters θ = (α1..3, β1..12, γ1..4) of Theorem 1's
  invariant subspace in Gram space (spec §5.5): exact on orthonormal data (`.orthonormal(N, ...)`),
  a fixed-sample average from any sequences' Gram matrices (`.from_grams`).

Both losses are summed over the D output coordinates (the paper's ‖y − ỹ‖²; 1 at zero weights on
orthonormal data). The integrators follow dθ/dt = −½ ∂L/∂θ, so the paper's unit-rate time
(θ̇ = −∂L/∂θ) is half the integrators' time (`fastattn.theory.musat2025` converts).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fastattn._core_loader import core
from fastattn.population.registry import register_objective

QUERIES = ("last", "uniform")
MASKS = ("strict", "inclusive")


class BasisMatrix(NamedTuple):
    """One of the 19 basis matrices: `name`, weight `matrix` (0: W1, 1: W2, 2: W3), the D×D block
    (`row`, `col`) (row = query-side feature block, col = key side; W3 has col 0) and `pattern`
    "I" or "M"."""

    name: str
    matrix: int
    row: int
    col: int
    pattern: str


BASIS: tuple[BasisMatrix, ...] = (
    BasisMatrix("alpha1", 0, 0, 0, "I"), BasisMatrix("alpha2", 0, 1, 1, "I"),
    BasisMatrix("alpha3", 0, 1, 1, "M"),
    BasisMatrix("beta1", 1, 0, 0, "I"), BasisMatrix("beta2", 1, 0, 2, "I"),
    BasisMatrix("beta3", 1, 1, 1, "I"), BasisMatrix("beta4", 1, 1, 1, "M"),
    BasisMatrix("beta5", 1, 1, 3, "I"), BasisMatrix("beta6", 1, 1, 3, "M"),
    BasisMatrix("beta7", 1, 2, 0, "I"), BasisMatrix("beta8", 1, 2, 2, "I"),
    BasisMatrix("beta9", 1, 3, 1, "I"), BasisMatrix("beta10", 1, 3, 1, "M"),
    BasisMatrix("beta11", 1, 3, 3, "I"), BasisMatrix("beta12", 1, 3, 3, "M"),
    BasisMatrix("gamma1", 2, 0, 0, "I"), BasisMatrix("gamma2", 2, 2, 0, "I"),
    BasisMatrix("gamma3", 2, 4, 0, "I"), BasisMatrix("gamma4", 2, 6, 0, "I"),
)
NAMES = tuple(b.name for b in BASIS)
THREE_PARAM = ("alpha3", "beta2", "gamma3")
THREE_PARAM_INDEX = tuple(NAMES.index(n) for n in THREE_PARAM)


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name}={value!r} is unknown; use one of {list(choices)}")
    return value


def _check_n(N) -> int:
    if int(N) != N or N < 1:
        raise ValueError(f"N={N!r} must be a positive integer (the number of item-label pairs)")
    return int(N)


class InductionThreeParamObjective(core.InductionThreeParam):
    """Exact population loss of the 3-parameter model (α₃, β₂, γ₃), orthonormal data, N pairs.

    query: "last" (q = N, Theorem 2) or "uniform" (q ~ Unif{1..N}); mask: "strict" (j < i, the
    paper's proofs) or "inclusive" (j ≤ i). loss_grad(params [3] | [K, 3]) → (loss, grad).
    """

    def __init__(self, N: int, query: str = "last", mask: str = "strict"):
        super().__init__(N=_check_n(N), query=core.Query.__members__[check_choice("query", query, QUERIES)],
                         mask=core.Mask.__members__[check_choice("mask", mask, MASKS)])
        self.query, self.mask = query, mask

    def __repr__(self) -> str:
        return f"InductionThreeParamObjective(N={self.N}, query={self.query!r}, mask={self.mask!r})"


def orthonormal_grams(N: int, query: str = "last") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The fixed Gram matrices of orthonormal data (spec §5.5), one sequence per query position.

    Returns (G1, G2, GM) `[S, L, L]` and target positions `[S]` (0-based), L = 2N + 1, S = 1 for
    query "last" (q = N), S = N for "uniform" (q = 1..N).
    """
    N = _check_n(N)
    check_choice("query", query, QUERIES)
    L = 2 * N + 1
    qs = [N] if query == "last" else list(range(1, N + 1))
    G2 = np.zeros((L, L))
    G2[np.arange(2 * N), np.arange(2 * N)] = 1.0
    GM = np.zeros((L, L))
    items = np.arange(0, 2 * N, 2)
    GM[items, items + 1] = GM[items + 1, items] = 1.0
    G1s = []
    for q in qs:
        G1 = np.eye(L)
        G1[2 * q - 2, L - 1] = G1[L - 1, 2 * q - 2] = 1.0  # the query duplicates item q
        G1s.append(G1)
    S = len(qs)
    return (np.stack(G1s), np.broadcast_to(G2, (S, L, L)).copy(), np.broadcast_to(GM, (S, L, L)).copy(),
            np.array([2 * q - 1 for q in qs]))


class InductionGram19Objective(core.InductionGram19):
    """The 19-parameter disentangled transformer's loss in Gram space (spec §5.5), summed over the
    output coordinates, weighted over S sequences.

    Build with `.orthonormal(N, query, mask)` (the exact population loss) or
    `.from_grams(G1, G2, GM, target, mask)` (G* `[S, L, L]`, target `[S]` 0-based; equal weights).
    """

    def __init__(self, G1, G2, GM, target, weights, mask: str = "strict"):
        G1, G2, GM = (np.ascontiguousarray(np.asarray(g, dtype=np.float64)) for g in (G1, G2, GM))
        if G1.ndim != 3 or G1.shape[1] != G1.shape[2] or G2.shape != G1.shape or GM.shape != G1.shape:
            raise ValueError(f"G1, G2, GM must share the shape [S, L, L]; got {G1.shape}, {G2.shape}, "
                             f"{GM.shape}")
        target = [int(t) for t in np.asarray(target).ravel()]
        weights = np.asarray(weights, dtype=np.float64).ravel()
        if len(target) != G1.shape[0] or weights.shape[0] != G1.shape[0]:
            raise ValueError(f"target and weights need one entry per sequence (S={G1.shape[0]})")
        super().__init__(G1=G1, G2=G2, GM=GM, target=target, weights=weights,
                         mask=core.Mask.__members__[check_choice("mask", mask, MASKS)])
        self.mask = mask

    @classmethod
    def orthonormal(cls, N: int, query: str = "last", mask: str = "strict") -> InductionGram19Objective:
        G1, G2, GM, target = orthonormal_grams(N, query)
        obj = cls(G1, G2, GM, target, np.full(len(target), 1.0 / len(target)), mask)
        obj.N, obj.query = int(N), query
        return obj

    @classmethod
    def from_grams(cls, G1, G2, GM, target, mask: str = "strict") -> InductionGram19Objective:
        S = np.asarray(G1).shape[0]
        return cls(G1, G2, GM, target, np.full(S, 1.0 / S), mask)

    def __repr__(self) -> str:
        return f"InductionGram19Objective(L={self.L}, sequences={self.n_sequences}, mask={self.mask!r})"


def embed_three_param(theta3) -> np.ndarray:
    """(α₃, β₂, γ₃) `[..., 3]` as 19 pseudo-parameters `[..., 19]` (the others zero)."""
    t = np.asarray(theta3, dtype=np.float64)
    out = np.zeros((*t.shape[:-1], 19))
    out[..., list(THREE_PARAM_INDEX)] = t
    return out


def exact_for(task, config) -> str | None:
    """Why the exact induction objectives do not cover `task` (None: they do): the population loss
    is closed-form for orthonormal data and the theory's summed loss only. `config` (the model's)
    leaves it open: mask and query are the objectives' own parameters."""
    if task.data != "orthonormal":
        return (f"the exact induction objectives need --data orthonormal (got {task.data!r}): "
                "Gaussian data have no closed-form population loss")
    if task.reduction != "sum":
        return (f"the exact induction objectives are sum-reduced (the theory's loss; got "
                f"--reduction {task.reduction}): use --reduction sum")
    return None


@register_objective("induction", "three_param", exact_for=exact_for)
def _three_param(task, model) -> InductionThreeParamObjective:
    return InductionThreeParamObjective(task.context, task.query, model.config.mask)


@register_objective("induction", "gram19", exact_for=exact_for)
def _gram19(task, model) -> InductionGram19Objective:
    return InductionGram19Objective.orthonormal(task.context, task.query, model.config.mask)
