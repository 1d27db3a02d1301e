"""Exact population objectives of in-context autoregressive learning (Sander et al. 2024).

- `AutoRegressiveObjective(context, config, factored=True)` (config: the DIAG model's, an
  `ARDiagConfig(dim=d, heads=H, context=T_max)`): the C++ closed form of the DIAG
  model (Eq. 6, Lemma 2) on commuting unitary ("unitary"; "unitary_paper" is Prop. 4 as printed) or
  orthogonal ("orthogonal") contexts, as a function of (A, B, P) or, factored=False, of (C, P).
  Registered for (autoregressive, diag).
- `PEOnlyObjective(context_dist, T_max, mu, d)`: the PE-only model (Eq. 7, C = I) as a quadratic in
  P, in numpy: Prop. 7's H_T under 𝒲(μ), and the C = I rows of l_U / l_O. Registered for
  (autoregressive, pe_only).

Both are the loss of spec §4.1 (a sum over T = 2..T_max) with s_1 = 1_d, the task's complex
representation and plain, undouplicated tokens; other task settings raise a ValueError naming them.
"""

from __future__ import annotations

import numpy as np

from fastattn._core_loader import core
from fastattn.population.legacy import DIAG_SLOTS, config_of
from fastattn.population.objectives import Objective
from fastattn.population.registry import register_objective

CONTEXTS = ("unitary", "orthogonal", "unitary_paper")


def diag_sizes(config) -> tuple[int, int, int]:
    """(d, H, T_max), the ints the compiled core takes, of a DIAG model config: the one place
    they are read off it."""
    if getattr(config, "kind", None) != "diag":
        raise ValueError(f"config={config!r} is not DIAG's; pass an ARDiagConfig(dim, heads, "
                         "context)")
    return config.dim, config.heads, config.context


class AutoRegressiveObjective(core.AutoRegressive):
    """ℓ(A, B, P) = Σ_{T=2}^{T_max} l(BᵀA, P[T−2, :T]) in C++ (float64): l_U (corrected Prop. 4),
    l_U as printed ("unitary_paper") or l_O (spec §5.6–5.7).

    Flat parameters (row-major): A `[H, d]`, B `[H, d]`, P `[T_max, T_max]` (factored), or C `[d, d]`,
    P. Methods: loss_grad(params [P] | [K, P]) -> (loss, grad). Attributes: context, config,
    factored. `config`: the DIAG model's config (a positional (d, H, T_max) is deprecated).
    """

    def __init__(self, context: str, config, factored: bool = True):
        if context not in CONTEXTS:
            raise ValueError(f"context must be one of {CONTEXTS}; got {context!r}")
        config = config_of("diag", config, DIAG_SLOTS, "AutoRegressiveObjective(context, config)")
        d, H, tmax = diag_sizes(config)
        super().__init__(context=core.Context.__members__[context], d=d, H=H, tmax=tmax,
                         factored=bool(factored))
        self.context, self.config, self.factored = context, config, bool(factored)

    def __repr__(self) -> str:
        return f"AutoRegressiveObjective({self.context!r}, {self.config!r}, factored={self.factored})"


class PEOnlyObjective(Objective):
    """ℓ(P) = Σ_{T=2}^{T_max} d (p − e_T)ᵀ H_T (p − e_T), p = P[T−2, :T], P `[T_max, T_max]` flat.

    H_T is d times Prop. 7's matrix under 𝒲(μ) ("positional"); under 𝒞_U and 𝒞_O it is the
    quadratic form of l_U(I, p) (= d I) and l_O(I, p), read off `theory.sander2024`'s row losses by
    polarisation (both vanish at p = e_T, Prop. 3). Has a dense Hessian and HVPs (a quadratic).
    """

    def __init__(self, context_dist: str, tmax: int, mu: float = 1.0, d: int = 1):
        super().__init__()
        from fastattn.theory import sander2024 as theory

        if context_dist not in ("unitary", "orthogonal", "positional"):
            raise ValueError(f"PE-only has an exact loss under unitary, orthogonal or positional "
                             f"contexts; got context_dist={context_dist!r}")
        self.context_dist, self.tmax, self.mu, self.d = context_dist, int(tmax), float(mu), int(d)
        self._rows = []
        for T in range(2, self.tmax + 1):
            if context_dist == "positional":
                H = d * theory.pe_hessian(T, mu)
            else:
                H = self._row_quadratic(T)
            self._rows.append(H)

    def _row_quadratic(self, T: int) -> np.ndarray:
        """The Hessian/2 of the row loss l(I, p), a quadratic in p with minimum 0 at e_T."""
        from fastattn.theory import sander2024 as theory

        eye = np.eye(self.d)
        f = (theory.orthogonal_row_loss if self.context_dist == "orthogonal"
             else theory.unitary_row_loss)
        H = np.zeros((T, T))
        for a in range(T):
            for b in range(T):
                u, v = np.eye(T)[a], np.eye(T)[b]
                H[a, b] = (f(eye, u + v) - f(eye, u) - f(eye, v) + f(eye, np.zeros(T))) / 2
        return H

    def size(self) -> int:
        return self.tmax * self.tmax

    def loss_grad(self, params: np.ndarray) -> tuple[float, np.ndarray]:
        P = np.asarray(params, dtype=np.float64).reshape(self.tmax, self.tmax)
        grad = np.zeros_like(P)
        loss = 0.0
        for T, H in zip(range(2, self.tmax + 1), self._rows, strict=True):
            q = P[T - 2, :T].copy()
            q[T - 1] -= 1.0
            Hq = H @ q
            loss += float(q @ Hq)
            grad[T - 2, :T] = 2 * Hq
        return loss, grad.reshape(-1)

    def hessian(self, params: np.ndarray) -> np.ndarray:
        out = np.zeros((self.tmax, self.tmax, self.tmax, self.tmax))
        for T, H in zip(range(2, self.tmax + 1), self._rows, strict=True):
            out[T - 2, :T, T - 2, :T] = 2 * H
        return out.reshape(self.size(), self.size())

    def hvp(self, params: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.hessian(params) @ np.asarray(u, dtype=np.float64)


def _plain_tokens(task) -> str | None:
    """Why the task's tokens are not those of the closed forms (s_1 = 1_d in the complex
    eigenbasis, plain tokens, no duplicates), or None."""
    wrong = [f"{name}={getattr(task, name)!r} (use {want!r})" for name, want in
             (("representation", "complex"), ("encoding", "plain"), ("duplicate", 1),
              ("s1", "ones")) if getattr(task, name) != want]
    if wrong:
        return ("the exact autoregressive objective is for s_1 = 1_d in the complex eigenbasis "
                f"with plain tokens; the task has {', '.join(wrong)}")
    return None


def diag_exact_for(task, config) -> str | None:
    """The DIAG model's closed forms: commuting contexts (unitary, orthogonal, positional) on plain
    tokens; Haar contexts have none."""
    if task.context_dist not in ("unitary", "orthogonal", "positional"):
        return (f"the DIAG model's exact loss is for commuting contexts; --context-dist "
                f"{task.context_dist} has no closed form: use unitary, orthogonal or positional")
    return _plain_tokens(task)


def pe_only_exact_for(task, config) -> str | None:
    """The PE-only model's closed form: commuting contexts on plain tokens."""
    if task.context_dist == "haar":
        return ("the PE-only model's exact loss is for commuting contexts; --context-dist haar has "
                "none: use unitary, orthogonal or positional")
    return _plain_tokens(task)


def _check_context(task, model) -> None:
    if model.config.context != task.context:
        raise ValueError(f"the model's context (T_max={model.config.context}) must equal the "
                         f"task's context={task.context}")


@register_objective("autoregressive", "diag", exact_for=diag_exact_for)
def _diag(task, model) -> AutoRegressiveObjective:
    _check_context(task, model)
    if task.context_dist == "positional":
        from fastattn.population.autoregressive_positional import PositionalDiagObjective

        return PositionalDiagObjective(model.config, task.mu)
    return AutoRegressiveObjective(task.context_dist, model.config)


@register_objective("autoregressive", "pe_only", exact_for=pe_only_exact_for)
def _pe_only(task, model) -> PEOnlyObjective:
    _check_context(task, model)
    return PEOnlyObjective(task.context_dist, task.context, task.mu, task.dim)
