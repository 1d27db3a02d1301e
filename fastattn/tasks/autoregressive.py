"""In-context autoregressive learning (Sander et al. 2024): noiseless AR(1) sequences
s_{t+1} = W s_t, one context matrix W per sequence (docs/sander2024.md, spec §2).

Context distributions (`context_dist`):

- "unitary" (𝒞_U): W = diag(λ), λ_i = e^{iφ_i}, φ_i ~ U[0, 2π) i.i.d.
- "orthogonal" (𝒞_O, d = 2δ): conjugate pairs (λ_k, λ̄_k) at 0-based indices (2k, 2k+1); in real
  coordinates W = blockdiag(R_{φ_1}, …, R_{φ_δ}).
- "haar": W uniform on O(d), det ±1 (real only; the §6 experiments).
- "positional" (𝒲(μ), Prop. 7): λ_i = e^{iθ_i/μ}, θ_i ~ U(0, 2π) i.i.d. per coordinate.

Representations: "complex" keeps the eigenbasis (s_t = λ^{t−1} ⊙ s_1, complex128); "real" is the real
AR process (Remark 1): unitary d/2 complex coordinates realified as (Re z, Im z), orthogonal and
positional as 2×2 rotations on the planes (2k, 2k+1), haar as the orthogonal matrix itself.

Tokens (`encoding`): "plain" e_t = (s_t, …, s_t) (`duplicate` copies; duplicate = 2 is the §6
e_t = (s_t, s_t)), or "augmented" e_t = (0_d, s_t, s_{t−1}) (Eq. 4) with s_0 = 0 (`s0="zero"`, the
authors' code) or s_0 = W⁻¹ s_1 (`s0="backward"`, the proof of Prop. 2). The start s_1 is 1_d
(`s1="ones"`, the theory) or 1_d/√d (`s1="unit"`, the §6 scripts).

The sampled loss is spec §4.1's Σ_{T=2}^{T_max} mean_n ‖ŝ_{T+1} − s_{T+1}‖² (a sum over T: ℓ(0) =
d(T_max − 1) with s_1 = 1_d), so population learning rates of the paper carry over.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import torch

from fastattn import _validate as check
from fastattn.tasks.base import register_task
from fastattn.tasks.haar import haar_frame
from fastattn.tasks.linear_regression import _generator

CONTEXT_DISTS = ("unitary", "orthogonal", "haar", "positional")
REPRESENTATIONS = ("complex", "real")
ENCODINGS = ("plain", "augmented")
S0_CONVENTIONS = ("zero", "backward")
S1_CONVENTIONS = ("ones", "unit")


class ARBatch(NamedTuple):
    """A batch of N sequences of one task.

    Attributes:
        states: s_1..s_{T_max+1} `[N, T_max+1, d]` (complex128/complex64 or real).
        tokens: e_1..e_{T_max} `[N, T_max, E]` (E = k·d plain, 3d augmented).
        targets: what the prediction at context length T = 2..T_max should equal, `[N, T_max−1, d_out]`:
            e_{T+1} (plain; with duplication, the duplicated s_{T+1}) or s_{T+1} (augmented).
        W: the context matrices `[N, d, d]`.
    """

    states: torch.Tensor
    tokens: torch.Tensor
    targets: torch.Tensor
    W: torch.Tensor


def realify(z: torch.Tensor) -> torch.Tensor:
    """(Re z, Im z) along the last axis: C^m → R^{2m} (Remark 1)."""
    return torch.cat([z.real, z.imag], dim=-1)


def complexify(x: torch.Tensor) -> torch.Tensor:
    """The inverse of `realify`: R^{2m} → C^m."""
    m = x.shape[-1] // 2
    return torch.complex(x[..., :m], x[..., m:])


def rotation_blocks(phi: torch.Tensor) -> torch.Tensor:
    """blockdiag(R_{φ_1}, …, R_{φ_δ}) `[N, 2δ, 2δ]` for phases φ `[N, δ]`,
    R_φ = [[cos φ, −sin φ], [sin φ, cos φ]]."""
    n, delta = phi.shape
    W = torch.zeros(n, 2 * delta, 2 * delta, dtype=phi.dtype, device=phi.device)
    c, s = torch.cos(phi), torch.sin(phi)
    idx = torch.arange(delta, device=phi.device)
    W[:, 2 * idx, 2 * idx], W[:, 2 * idx, 2 * idx + 1] = c, -s
    W[:, 2 * idx + 1, 2 * idx], W[:, 2 * idx + 1, 2 * idx + 1] = s, c
    return W


def haar_orthogonal(n: int, d: int, g: torch.Generator) -> torch.Tensor:
    """n matrices uniform on O(d) (det ±1) `[n, d, d]` (`fastattn.tasks.haar`)."""
    return haar_frame(torch.randn(n, d, d, generator=g, dtype=torch.float64))


@register_task
@dataclass(frozen=True)
class AutoRegressive:
    """AR(1) sequences with a random context matrix per sequence (module docstring).

    Attributes:
        dim: dimension d of s_t in its representation (even for orthogonal, and for real unitary).
        context: T_max, the longest context; the loss sums T = 2..T_max.
        context_dist: "unitary" | "orthogonal" | "haar" | "positional".
        representation: "complex" | "real" (haar is real only).
        encoding: "plain" | "augmented". duplicate: copies k of s_t in a plain token (E = k·d).
        s0: "zero" | "backward" (augmented tokens' s_0). s1: "ones" (1_d) | "unit" (1_d/√d).
        mu: μ ≥ 1 of 𝒲(μ) (positional only).
        data_seed: seed of the training stream.
    """

    kind: ClassVar[str] = "autoregressive"
    losses: ClassVar[tuple[str, ...]] = ("next_token",)

    dim: int = 10
    context: int = 20
    context_dist: str = "unitary"
    representation: str = "complex"
    encoding: str = "plain"
    duplicate: int = 1
    s0: str = "zero"
    s1: str = "ones"
    mu: float = 1.0
    data_seed: int = 0

    def __post_init__(self) -> None:
        check.positive_int("dim", self.dim)
        check.positive_int("context", self.context)
        check.positive_int("duplicate", self.duplicate)
        if self.context < 2:
            raise ValueError(f"context (T_max) must be at least 2: the loss sums T = 2..T_max; "
                             f"got {self.context}")
        for name, value, allowed in (("context_dist", self.context_dist, CONTEXT_DISTS),
                                     ("representation", self.representation, REPRESENTATIONS),
                                     ("encoding", self.encoding, ENCODINGS),
                                     ("s0", self.s0, S0_CONVENTIONS),
                                     ("s1", self.s1, S1_CONVENTIONS)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}; got {value!r}")
        complex_ = self.representation == "complex"
        if self.context_dist == "haar" and complex_:
            raise ValueError("context_dist='haar' is a real process: use representation='real'")
        paired = self.context_dist == "orthogonal" or (not complex_ and self.context_dist != "haar")
        if paired and self.dim % 2:
            raise ValueError(f"dim={self.dim} must be even for context_dist={self.context_dist!r} "
                             f"in the {self.representation} representation (conjugate pairs / "
                             "rotation planes)")
        if self.context_dist == "positional" and not self.mu >= 1:
            raise ValueError(f"mu must be at least 1 (𝒲(μ) has phases in [0, 2π/μ)); got {self.mu}")
        if self.encoding == "augmented" and self.duplicate != 1:
            raise ValueError("duplicate applies to plain tokens; use encoding='plain'")

    # ---------------------------------------------------------------------------- shapes
    @property
    def token_dim(self) -> int:
        """E: k·d (plain) or 3d (augmented)."""
        return 3 * self.dim if self.encoding == "augmented" else self.duplicate * self.dim

    @property
    def sequence_size(self) -> int:
        """Numbers in one sequence's tokens: T_max · E (×2 for complex)."""
        return self.context * self.token_dim * (2 if self.representation == "complex" else 1)

    def start(self, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        """s_1 `[d]` (real; the complex representation casts it)."""
        s = torch.ones(self.dim, dtype=dtype)
        return s / math.sqrt(self.dim) if self.s1 == "unit" else s

    # ---------------------------------------------------------------------------- sampling
    def sample(self, batch_size: int, step: int = 0, *, dtype: torch.dtype = torch.float64,
               device: str | torch.device = "cpu") -> ARBatch:
        """Batch number `step` of the training stream: a pure function of (data_seed, step).
        dtype is the real precision (complex batches use the matching complex dtype)."""
        return self._draw(batch_size, _generator(self.data_seed, step, 0), dtype, device)

    def fixed_dataset(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                      device: str | torch.device = "cpu", whiten: bool = False) -> ARBatch:
        """`size` sequences drawn from `seed` (full-batch training)."""
        if whiten:
            raise ValueError("whiten is for linear regression's task vectors; AR tasks have none")
        return self._draw(size, _generator(seed, 0, 1), dtype, device)

    def test_sets(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                  device: str | torch.device = "cpu") -> dict[str, ARBatch]:
        """{"in_context": `size` held-out sequences drawn from the evaluation `seed`}."""
        return {"in_context": self._draw(size, _generator(seed, 0, 2), dtype, device)}

    def _phases(self, n: int, m: int, g: torch.Generator) -> torch.Tensor:
        u = torch.rand(n, m, generator=g, dtype=torch.float64) * (2 * math.pi)
        return u / self.mu if self.context_dist == "positional" else u

    def _draw(self, n: int, g: torch.Generator, dtype: torch.dtype,
              device: str | torch.device) -> ARBatch:
        d, tmax = self.dim, self.context
        steps = torch.arange(tmax + 1, dtype=torch.float64)
        s1 = self.start()
        if self.representation == "complex":
            if self.context_dist == "orthogonal":
                phi = self._phases(n, d // 2, g)
                phi = torch.stack([phi, -phi], dim=-1).reshape(n, d)
            else:
                phi = self._phases(n, d, g)
            lam = torch.polar(torch.ones_like(phi), phi)                          # [N, d]
            states = s1 * torch.polar(torch.ones(n, tmax + 1, d, dtype=torch.float64),
                                      steps[None, :, None] * phi[:, None, :])    # λ^{t−1} s_1
            W = torch.diag_embed(lam)
            back = s1 * lam.conj()
        else:
            if self.context_dist == "haar":
                W = haar_orthogonal(n, d, g) if d > 1 else \
                    torch.sign(torch.rand(n, 1, 1, generator=g, dtype=torch.float64) - 0.5)
            elif self.context_dist == "unitary":
                lam = torch.polar(torch.ones(n, d // 2, dtype=torch.float64),
                                  self._phases(n, d // 2, g))
                W = torch.cat([torch.cat([torch.diag_embed(lam.real), -torch.diag_embed(lam.imag)], -1),
                               torch.cat([torch.diag_embed(lam.imag), torch.diag_embed(lam.real)], -1)],
                              -2)
            else:
                W = rotation_blocks(self._phases(n, d // 2, g))
            states = [s1.expand(n, d)]
            for _ in range(tmax):
                states.append(torch.einsum("nij,nj->ni", W, states[-1]))
            states = torch.stack(states, dim=1)
            back = torch.einsum("nji,j->ni", W, s1)                               # Wᵀ s_1 = W⁻¹ s_1
        cdtype = dtype if self.representation == "real" else \
            (torch.complex128 if dtype == torch.float64 else torch.complex64)
        states, W, back = (x.to(device=device, dtype=cdtype) for x in (states, W, back))
        if self.encoding == "augmented":
            prev = torch.cat([(back if self.s0 == "backward" else torch.zeros_like(back))[:, None],
                              states[:, :tmax - 1]], dim=1)
            tokens = torch.cat([torch.zeros_like(states[:, :tmax]), states[:, :tmax], prev], dim=-1)
            targets = states[:, 2:]
        else:
            tokens = states[:, :tmax].repeat(1, 1, self.duplicate)
            targets = states[:, 2:].repeat(1, 1, self.duplicate)
        return ARBatch(states, tokens, targets, W)

    # ---------------------------------------------------------------------------- loss
    def loss(self, model: torch.nn.Module, batch: ARBatch, name: str = "next_token"
             ) -> torch.Tensor:
        """Σ_{T=2}^{T_max} mean_n ‖ŝ_{T+1} − s_{T+1}‖² (spec §4.1) of `model.predict(tokens)`
        `[N, T_max−1, d_out]` (the predictions at T = 2..T_max), a scalar tensor."""
        if name != "next_token":
            raise ValueError(f"loss={name!r} is unknown for task autoregressive; choose one of "
                             f"{self.losses}")
        pred = model.predict(batch.tokens)
        return (pred - batch.targets).abs().square().sum(-1).mean(0).sum()

    def zero_loss(self) -> float:
        """ℓ(0) = Σ_T E‖s_{T+1}‖² = (T_max − 1) ‖s_1‖² (norm-preserving W)."""
        return (self.context - 1) * float(self.start().square().sum()) * self.duplicate

