"""The exact population loss of AUG-1 (Eq. 4 under Assumption 2: scalars a = (a1..a4), b = (b1, b2),
one layer, augmented tokens e_t = (0, s_t, s_{t−1})) on commuting unitary contexts 𝒞_U: Prop. 2's
loss, spec §5.3 and §5.11.

With s_t = λ^{t−1} (s_1 = 1_d) the prediction of s_{T+1,j} from e_1..e_T is

    ŝ_j = Σ_{t≤T} Σ_k [a1 λ_k^{T−t} + a2 λ_k^{T−t−1} + a3 λ_k^{T−t+1} + a4 λ_k^{T−t}]
                     · (b1 λ_j^{t−1} + b2 λ_j^{t−2}),

where the terms with s_0 vanish under the code's s_0 = 0 ("zero": the a3, a4 and b2 terms of t = 1)
and s_0 = λ^{−1} under "backward". Under 𝒞_U the phases are independent and uniform, so
E|ŝ_j − λ_j^T|² is the sum of the squared coefficients of the distinct monomials (Parseval,
spec §5.11). Each coefficient is bilinear, aᵀ K b, with K `[4, 2]` fixed by (T, key): the
monomials λ_k^e λ_j^f with k ≠ j are d − 1 distinct ones (e ≠ 0) or one λ_j^f with coefficient
scaled by d − 1 (e = 0); k = j gives λ_j^{e+f}. All j are alike, so ℓ = d Σ_T Σ_keys
mult · (aᵀ K b − [key = λ_j^T])², a quartic in (a, b), in numpy float64.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from fastattn.population.objectives import Objective
from fastattn.population.registry import register_objective


def monomial_forms(T: int, d: int, s0: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(K `[M, 4, 2]`, multiplicity `[M]`, target `[M]`) of the monomials of ŝ_j − λ_j^T at context
    length T (module docstring)."""
    if s0 not in ("zero", "backward"):
        raise ValueError(f"s0 must be 'zero' or 'backward'; got {s0!r}")
    forms: dict[tuple, np.ndarray] = defaultdict(lambda: np.zeros((4, 2)))
    mult: dict[tuple, float] = {}
    for t in range(1, T + 1):
        padded = s0 == "zero" and t == 1                     # s_{t−1} = s_0 = 0
        scores = [(0, T - t), (1, T - t - 1)] + ([] if padded else [(2, T - t + 1), (3, T - t)])
        values = [(0, t - 1)] + ([] if padded else [(1, t - 2)])
        for m, e in scores:
            for n, f in values:
                forms[("j", e + f)][m, n] += 1.0            # k = j
                mult[("j", e + f)] = 1.0
                if d > 1:
                    if e == 0:                               # λ_k⁰ = 1 for each of the d − 1 k ≠ j
                        forms[("j", f)][m, n] += d - 1
                        mult[("j", f)] = 1.0
                    else:
                        forms[("kj", e, f)][m, n] += 1.0
                        mult[("kj", e, f)] = d - 1.0
    target_key = ("j", T)
    forms[target_key] += 0.0
    mult[target_key] = 1.0
    keys = list(forms)
    return (np.stack([forms[k] for k in keys]), np.array([mult[k] for k in keys]),
            np.array([1.0 if k == target_key else 0.0 for k in keys]))


class AugmentedUnitaryObjective(Objective):
    """ℓ(a, b) of AUG-1 on 𝒞_U (module docstring). Flat parameters: a1..a4, b1, b2 (the model's
    order); d and T_max are the task's dim and context; s0 its convention for the first token's s_0."""

    def __init__(self, d: int, tmax: int, s0: str = "zero"):
        super().__init__()
        self.d, self.tmax, self.s0 = int(d), int(tmax), s0
        forms = [monomial_forms(T, self.d, s0) for T in range(2, self.tmax + 1)]
        self.K = np.concatenate([f[0] for f in forms])
        self.mult = self.d * np.concatenate([f[1] for f in forms])
        self.target = np.concatenate([f[2] for f in forms])

    def __repr__(self) -> str:
        return f"AugmentedUnitaryObjective(d={self.d}, tmax={self.tmax}, s0={self.s0!r})"

    def size(self) -> int:
        return 6

    def loss_grad(self, params: np.ndarray) -> tuple[float, np.ndarray]:
        x = np.asarray(params, dtype=np.float64)
        a, b = x[:4], x[4:]
        Kb = self.K @ b                                       # [M, 4]
        r = Kb @ a - self.target                              # [M]
        w = 2 * self.mult * r
        grad = np.concatenate([w @ Kb, (w[:, None] * np.einsum("mij,i->mj", self.K, a)).sum(0)])
        return float(self.mult @ (r * r)), grad

    def hessian(self, params: np.ndarray) -> np.ndarray:
        """`[6, 6]`: 2 Σ mult (J Jᵀ + r ∂²r), J = (K b, Kᵀ a), ∂²r/∂a∂b = K."""
        x = np.asarray(params, dtype=np.float64)
        a, b = x[:4], x[4:]
        J = np.concatenate([self.K @ b, np.einsum("mij,i->mj", self.K, a)], axis=1)   # [M, 6]
        r = J[:, :4] @ a - self.target
        H = 2 * (J.T * self.mult) @ J
        cross = 2 * np.einsum("m,mij->ij", self.mult * r, self.K)
        H[:4, 4:] += cross
        H[4:, :4] += cross.T
        return H

    def hvp(self, params: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.hessian(params) @ np.asarray(u, dtype=np.float64)


def aug_exact_for(task, config) -> str | None:
    """AUG-1's closed form (Prop. 2): commuting unitary contexts, augmented tokens of s_1 = 1_d in
    the complex eigenbasis."""
    if task.context_dist != "unitary":
        return (f"AUG-1's exact loss is Prop. 2's, under commuting unitary contexts; --context-dist "
                f"{task.context_dist} has no closed form here: use unitary")
    wrong = [f"{name}={getattr(task, name)!r} (use {want!r})" for name, want in
             (("representation", "complex"), ("encoding", "augmented"), ("s1", "ones"))
             if getattr(task, name) != want]
    if wrong:
        return ("AUG-1's exact loss is for augmented tokens of s_1 = 1_d in the complex "
                f"eigenbasis; the task has {', '.join(wrong)}")
    return None


@register_objective("autoregressive", "aug", exact_for=aug_exact_for)
def _aug(task, model) -> AugmentedUnitaryObjective:
    if model.config.dim != task.dim:
        raise ValueError(f"the model's dim={model.config.dim} must equal the task's dim={task.dim}")
    return AugmentedUnitaryObjective(task.dim, task.context, task.s0)
