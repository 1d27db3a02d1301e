"""In-context linear regression (Zhang et al. 2025 §2.1; Garg et al. 2022).

Each sequence draws a task vector w, N context tokens x_n ~ N(0, Λ) with labels y_n = wᵀx_n + ε_n,
and a query x_q whose label y_q the model must predict from the context. Layout and normalisation
follow docs/conventions.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar, NamedTuple

import numpy as np
import torch

from fastattn import _validate as check
from fastattn.population.moments import Moments
from fastattn.tasks.base import register_task
from fastattn.tasks.haar import haar_frame
from fastattn.theory.gaussian import wishart_second_moment

# Separate random streams, so that e.g. the fixed task vector never changes when the batch size does.
_STREAM_BATCH, _STREAM_DATASET, _STREAM_FIXED_TASK, _STREAM_ROTATION = 0, 1, 2, 3


def _generator(seed: int, step: int, stream: int, device: str | torch.device = "cpu"):
    """A torch generator that is a pure function of (seed, step, stream)."""
    state = np.random.SeedSequence([int(seed), int(step), stream]).generate_state(2, np.uint64)
    g = torch.Generator(device=device)
    g.manual_seed(int(state[0] >> np.uint64(1)))  # manual_seed takes a non-negative int64
    return g


def _factor(m: np.ndarray) -> np.ndarray:
    """F with F Fᵀ = m for a symmetric PSD m (works for singular m, unlike Cholesky)."""
    vals, vecs = np.linalg.eigh(m)
    return vecs * np.sqrt(np.clip(vals, 0.0, None))


@dataclass(frozen=True)
class Batch:
    """A batch of sequences, as the token tensor and its structured pieces.

    Attributes:
        tokens: `[B, N+1, D+1]`; row n < N is [x_n, y_n], the last row is the query [x_q, 0].
            With random context lengths N is the largest length; shorter contexts are zero-padded
            *before* the query row, and `lengths` says how many context rows are real.
        x: `[B, N, D]` context tokens (zero where padded). y: `[B, N]` their labels.
        x_q: `[B, D]` query. y_q: `[B]` its label. w: `[B, D]` task vectors.
        lengths: `[B]` context length of each sequence (int64).
    """

    tokens: torch.Tensor
    x: torch.Tensor
    y: torch.Tensor
    x_q: torch.Tensor
    y_q: torch.Tensor
    w: torch.Tensor
    lengths: torch.Tensor

    @property
    def beta(self) -> torch.Tensor:
        """β = (1/N) Σ_n y_n x_n `[B, D]`, each sequence divided by its own context length."""
        return torch.einsum("bn,bnd->bd", self.y, self.x) / self.lengths.to(self.x.dtype)[:, None]

    def __len__(self) -> int:
        return int(self.x.shape[0])


class Stats(NamedTuple):
    """The statistics a linear model's query prediction needs, drawn without the tokens
    (`LinearRegression.sample_stats`): β `[B, D]`, x_q `[B, D]`, y_q `[B]`."""

    beta: torch.Tensor
    x_q: torch.Tensor
    y_q: torch.Tensor


@register_task
@dataclass(frozen=True)
class LinearRegression:
    """In-context linear regression task (kind "linear_regression").

    Args:
        dim: token dimension D >= 1.
        context: the context length N >= 1, or a sequence of lengths to draw from (the next-token
            loss of Eq. 23 is equivalent to N uniform on 1..N_max).
        context_probs: probabilities of `context` when it is a sequence (uniform if omitted).
        spectrum: eigenvalues of Λ (any order; stored descending). Default: all ones (Λ = I).
        cov: the full covariance Λ `[D, D]` instead of `spectrum`.
        rotate: rotate the spectrum's eigenbasis by a random orthogonal matrix drawn from
            `rotation_seed` (the papers draw random eigenvectors).
        w_mean: task-prior mean μ_w `[D]` (default 0). w_cov: task-prior covariance Σ_w (default I).
        fixed_task_fraction: fraction of sequences that share one fixed task vector w* (in-weight
            learning, Zhang et al. App. G); w* ~ N(0, I) rescaled to norm √D, drawn from
            `fixed_task_seed`, as in the paper's code.
        noise: label-noise variance σ² (on context labels and on y_q).
        data_seed: seed of the training batches; batch k is a pure function of (data_seed, k).

    Sampled losses (`loss`): "query" (the squared error at the query: the last-token loss) and
    "next_token" (Eq. 23: the mean over positions 2..N+1 of each prediction from the tokens before).
    """

    kind: ClassVar[str] = "linear_regression"
    losses: ClassVar[tuple[str, ...]] = ("query", "next_token")

    dim: int
    context: int | Sequence[int] = 31
    context_probs: Sequence[float] | None = None
    spectrum: Sequence[float] | None = None
    cov: Sequence[Sequence[float]] | np.ndarray | None = field(default=None, repr=False)
    rotate: bool = False
    rotation_seed: int = 0
    w_mean: Sequence[float] | None = None
    w_cov: Sequence[Sequence[float]] | np.ndarray | None = field(default=None, repr=False)
    fixed_task_fraction: float = 0.0
    fixed_task_seed: int = 0
    noise: float = 0.0
    data_seed: int = 0

    def __post_init__(self) -> None:
        d = check.positive_int("dim", self.dim)
        lengths = (self.context,) if np.isscalar(self.context) else tuple(self.context)
        if not lengths:
            raise ValueError("context must be an integer >= 1 or a non-empty list of them")
        for n in lengths:
            check.positive_int("context", n)
        probs = self.context_probs
        if probs is not None:
            probs = np.asarray(probs, dtype=np.float64)
            if probs.shape != (len(lengths),) or np.any(probs < 0) or not np.isclose(probs.sum(), 1):
                raise ValueError("context_probs must be non-negative, one per context length, and "
                                 f"sum to 1; got {self.context_probs!r} for context={self.context!r}")
        if self.spectrum is not None and self.cov is not None:
            raise ValueError("pass either spectrum or cov, not both")
        if self.spectrum is not None:
            spec = np.asarray(self.spectrum, dtype=np.float64)
            if spec.shape != (d,):
                raise ValueError(f"spectrum must have {d} eigenvalues to match dim={d}; "
                                 f"got shape {spec.shape}")
            if not np.all(np.isfinite(spec)) or np.any(spec < 0):
                raise ValueError(f"spectrum must be finite and >= 0 (a covariance); got {spec}")
        if self.cov is not None:
            check.psd_matrix("cov", self.cov, d)
        if self.w_mean is not None:
            check.finite_vector("w_mean", self.w_mean, d)
        if self.w_cov is not None:
            check.psd_matrix("w_cov", self.w_cov, d)
        if not 0.0 <= float(self.fixed_task_fraction) <= 1.0:
            raise ValueError(f"fixed_task_fraction must be in [0, 1]; got {self.fixed_task_fraction}")
        check.nonnegative_float("noise", self.noise)

    # ----------------------------------------------------------------- derived, exact quantities
    @cached_property
    def context_lengths(self) -> np.ndarray:
        """Support of the context-length distribution `[L]` (int64)."""
        c = self.context
        return np.atleast_1d(np.asarray(c if np.isscalar(c) else tuple(c), dtype=np.int64))

    @cached_property
    def context_weights(self) -> np.ndarray:
        """Probabilities of `context_lengths` `[L]`."""
        if self.context_probs is None:
            return np.full(len(self.context_lengths), 1.0 / len(self.context_lengths))
        return np.asarray(self.context_probs, dtype=np.float64)

    @property
    def max_context(self) -> int:
        return int(self.context_lengths.max())

    @property
    def sequence_size(self) -> int:
        """Numbers in one sampled sequence's tokens: (N_max + 1)(D + 1)."""
        return (self.max_context + 1) * (self.dim + 1)

    @cached_property
    def eigvals(self) -> np.ndarray:
        """Eigenvalues λ_d of Λ, descending `[D]`."""
        return self._eig[0]

    @cached_property
    def eigvecs(self) -> np.ndarray:
        """Eigenvectors of Λ as columns `[D, D]`, in the order of `eigvals`."""
        return self._eig[1]

    @cached_property
    def _eig(self) -> tuple[np.ndarray, np.ndarray]:
        if self.cov is not None:
            vals, vecs = np.linalg.eigh(check.psd_matrix("cov", self.cov, self.dim))
            order = np.argsort(vals)[::-1]
            return np.clip(vals[order], 0, None), vecs[:, order]
        vals = np.ones(self.dim) if self.spectrum is None else np.asarray(self.spectrum, float)
        vals = np.sort(vals)[::-1]
        vecs = np.eye(self.dim)
        if self.rotate:
            g = np.random.default_rng([self.rotation_seed, _STREAM_ROTATION])
            vecs = haar_frame(g.standard_normal((self.dim, self.dim)))
        return vals, vecs

    @cached_property
    def cov_matrix(self) -> np.ndarray:
        """Λ `[D, D]`."""
        return (self.eigvecs * self.eigvals) @ self.eigvecs.T

    @cached_property
    def w_mean_vector(self) -> np.ndarray:
        """μ_w `[D]` of the random-task part of the prior."""
        return np.zeros(self.dim) if self.w_mean is None else np.asarray(self.w_mean, float)

    @cached_property
    def w_cov_matrix(self) -> np.ndarray:
        """Σ_w `[D, D]` of the random-task part of the prior."""
        return np.eye(self.dim) if self.w_cov is None else check.psd_matrix("w_cov", self.w_cov)

    @cached_property
    def fixed_task(self) -> np.ndarray:
        """The fixed task vector w* `[D]` (norm √D) used by `fixed_task_fraction` of sequences."""
        g = _generator(self.fixed_task_seed, 0, _STREAM_FIXED_TASK)
        w = torch.randn(self.dim, generator=g, dtype=torch.float64).numpy()
        return w * np.sqrt(self.dim) / np.linalg.norm(w)

    def inv_context_mean(self) -> float:
        """E(1/N) over the context-length distribution (Eq. 24; 1/N for a fixed N)."""
        return float(np.sum(self.context_weights / self.context_lengths))

    def w_second_moment(self) -> np.ndarray:
        """S_w = E w wᵀ `[D, D]` of the full prior, including the fixed-task fraction."""
        f = float(self.fixed_task_fraction)
        mu = self.w_mean_vector
        random_part = self.w_cov_matrix + np.outer(mu, mu)
        return (1 - f) * random_part + f * np.outer(self.fixed_task, self.fixed_task)

    def expected_cov_hat(self) -> np.ndarray:
        """E Λ̂ = Λ `[D, D]`, with Λ̂ = (1/N) Σ_n x_n x_nᵀ."""
        return self.cov_matrix.copy()

    def expected_cov_hat_sq(self) -> np.ndarray:
        """E Λ̂² = Λ² + E(1/N) (Λ + tr Λ · I) Λ `[D, D]` (Eq. 30)."""
        return wishart_second_moment(self.cov_matrix, np.eye(self.dim), self.inv_context_mean())

    def moments(self) -> Moments:
        """The moments the closed-form population loss needs (see fastattn.population)."""
        return Moments(cov=self.cov_matrix, w_second=self.w_second_moment(),
                       noise=float(self.noise), inv_n=self.inv_context_mean())

    def with_context(self, context: int | Sequence[int]) -> LinearRegression:
        """The same distribution (seeds included) at another context length: evaluation at an L
        other than the training one (length generalisation, He et al. 2025 §2.4)."""
        import dataclasses

        return dataclasses.replace(self, context=context, context_probs=None)

    # ------------------------------------------------------------------------------ sampling
    def sample(self, batch_size: int, step: int = 0, *, dtype: torch.dtype = torch.float64,
               device: str | torch.device = "cpu") -> Batch:
        """Batch number `step` of the training stream: a pure function of (data_seed, step)."""
        check.positive_int("batch_size", batch_size)
        return self._draw(batch_size, _generator(self.data_seed, step, _STREAM_BATCH),
                          dtype, device, exact_fraction=False)

    def sample_stats(self, batch_size: int, step: int = 0, *, dtype: torch.dtype = torch.float64,
                     device: str | torch.device = "cpu", backend: str = "auto") -> Stats:
        """`Stats` (β `[B, D]`, x_q `[B, D]`, y_q `[B]`) of batch `step`, drawn by the fused sampler
        without ever building the `[B, N, D]` tokens (`fastattn.ops.sample_icl_stats`).

        Same distribution as `sample`, not the same bits; a pure function of (data_seed, step).
        Needs a fixed context length and no fixed-task fraction.
        """
        from fastattn import ops

        if len(self.context_lengths) != 1 or self.fixed_task_fraction > 0:
            raise ValueError("sample_stats needs a fixed context length and fixed_task_fraction=0; "
                             "use sample() for this task")
        check.positive_int("batch_size", batch_size)
        to = {"dtype": dtype, "device": device}
        return Stats(*ops.sample_icl_stats(
            self.data_seed, step, batch_size, self.max_context,
            torch.from_numpy(_factor(self.cov_matrix)).to(**to),
            torch.from_numpy(self.w_mean_vector).to(**to),
            torch.from_numpy(_factor(self.w_cov_matrix)).to(**to),
            float(np.sqrt(self.noise)), dtype, backend=backend))

    def loss(self, model: torch.nn.Module, batch: Batch | Stats, name: str = "query"
             ) -> torch.Tensor:
        """Mean squared error (no ½, docs/conventions.md) of `model` on `batch`, a scalar tensor.

        Args:
            model: predicts ŷ_q = model(x, y, x_q, lengths=...) and, for "next_token",
                model.predict_next_token(x, y); for a `Stats` batch, model.forward_stats(β, x_q).
            batch: a `Batch` (`sample`, `fixed_dataset`, `test_sets`) or `Stats` (`sample_stats`).
            name: "query" (last token) or "next_token" (Eq. 23).
        """
        if name not in self.losses:
            raise ValueError(f"loss={name!r} is unknown for {self.kind}; choose one of {self.losses}")
        if isinstance(batch, Stats):
            if name != "query":
                raise ValueError("a Stats batch (sampler='stats') has no tokens: it gives the "
                                 "query loss only; use sample() for loss='next_token'")
            return ((batch.y_q - model.forward_stats(batch.beta, batch.x_q)) ** 2).mean()
        if name == "query":
            pred = model(batch.x, batch.y, batch.x_q, lengths=batch.lengths)
            return ((batch.y_q - pred) ** 2).mean()
        x = torch.cat([batch.x, batch.x_q[:, None]], 1)           # [B, N+1, D]
        y = torch.cat([batch.y, batch.y_q[:, None]], 1)           # [B, N+1]
        return ((y[:, 1:] - model.predict_next_token(x, y)) ** 2).mean()

    def fixed_dataset(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                      device: str | torch.device = "cpu", whiten: bool = False) -> Batch:
        """A finite training set of `size` sequences, as the papers' code trains on.

        Exactly `round(size * fixed_task_fraction)` sequences use the fixed task vector. With
        `whiten=True` the random task vectors are made to have empirical mean 0 and covariance I
        exactly (for w ~ N(0, I) priors), as the Zhang et al. code does, and the labels recomputed.
        """
        check.positive_int("size", size)
        batch = self._draw(size, _generator(seed, 0, _STREAM_DATASET), dtype, device,
                           exact_fraction=True)
        if not whiten:
            return batch
        n_random = size - round(size * float(self.fixed_task_fraction))
        if n_random <= self.dim:
            raise ValueError(f"whiten needs more random-task sequences than dim={self.dim}; "
                             f"got {n_random}")
        w = batch.w.clone()
        wr = w[:n_random] - w[:n_random].mean(0)
        cov = wr.T @ wr / n_random
        vals, vecs = torch.linalg.eigh(cov)
        w[:n_random] = wr @ (vecs * vals.rsqrt()) @ vecs.T
        noise_ctx = batch.y - torch.einsum("bnd,bd->bn", batch.x, batch.w)
        noise_q = batch.y_q - torch.einsum("bd,bd->b", batch.x_q, batch.w)
        y = torch.einsum("bnd,bd->bn", batch.x, w) + noise_ctx
        y_q = torch.einsum("bd,bd->b", batch.x_q, w) + noise_q
        return _assemble(batch.x, y, batch.x_q, y_q, w, batch.lengths)

    def _draw(self, batch_size: int, g: torch.Generator, dtype: torch.dtype,
              device: str | torch.device, exact_fraction: bool) -> Batch:
        d, n_max = self.dim, self.max_context
        f64 = torch.float64
        lam_factor = torch.from_numpy(_factor(self.cov_matrix))
        x_all = torch.randn(batch_size, n_max + 1, d, generator=g, dtype=f64) @ lam_factor.T
        w = torch.randn(batch_size, d, generator=g, dtype=f64) @ torch.from_numpy(
            _factor(self.w_cov_matrix)).T + torch.from_numpy(self.w_mean_vector)
        f = float(self.fixed_task_fraction)
        if f > 0:
            if exact_fraction:
                fixed = torch.arange(batch_size) >= batch_size - round(batch_size * f)
            else:
                fixed = torch.rand(batch_size, generator=g, dtype=f64) < f
            w[fixed] = torch.from_numpy(self.fixed_task)
        noise_std = float(np.sqrt(self.noise))
        eps = torch.randn(batch_size, n_max + 1, generator=g, dtype=f64) * noise_std
        if len(self.context_lengths) == 1:
            lengths = torch.full((batch_size,), n_max, dtype=torch.int64)
        else:
            idx = torch.multinomial(torch.from_numpy(self.context_weights), batch_size,
                                    replacement=True, generator=g)
            lengths = torch.from_numpy(self.context_lengths)[idx]
        mask = _context_mask(lengths, n_max).to(f64)                      # [B, N]
        x, x_q = x_all[:, :n_max] * mask[..., None], x_all[:, n_max]
        y = (torch.einsum("bnd,bd->bn", x, w) + eps[:, :n_max]) * mask
        y_q = torch.einsum("bd,bd->b", x_q, w) + eps[:, n_max]
        to = {"dtype": dtype, "device": device}
        return _assemble(x.to(**to), y.to(**to), x_q.to(**to), y_q.to(**to), w.to(**to),
                         lengths.to(device))

    def test_sets(self, size: int, seed: int, *, dtype: torch.dtype = torch.float64,
                  device: str | torch.device = "cpu") -> dict[str, Batch]:
        """{"in_context": ...} and, with a fixed-task fraction, {"in_weight": ...}: held-out batches
        of `size` sequences drawn from the evaluation `seed`."""
        kw = {"dtype": dtype, "device": device}
        out = {"in_context": self.in_context_test_set(size, seed, **kw)}
        if self.fixed_task_fraction > 0:
            out["in_weight"] = self.in_weight_test_set(size, seed, **kw)
        return out

    def in_context_test_set(self, size: int, seed: int, **kw) -> Batch:
        """Held-out sequences with fresh random task vectors only (no fixed task): measures ICL."""
        import dataclasses

        pure = dataclasses.replace(self, fixed_task_fraction=0.0)
        return pure.fixed_dataset(size, seed, **kw)

    def in_weight_test_set(self, size: int, seed: int, **kw) -> Batch:
        """Held-out sequences whose context labels are pure N(0, 1) noise and whose query label is
        w*ᵀ x_q: only a model that memorised w* in its weights does well (Zhang et al. App. G)."""
        base = self.fixed_dataset(size, seed, **kw)
        g = _generator(seed, 1, _STREAM_DATASET)
        y = torch.randn(base.y.shape, generator=g, dtype=torch.float64).to(base.y)
        y = y * _context_mask(base.lengths, base.x.shape[1]).to(y)
        w = torch.from_numpy(self.fixed_task).to(base.x).expand_as(base.w).clone()
        y_q = torch.einsum("bd,bd->b", base.x_q, w)
        return _assemble(base.x, y, base.x_q, y_q, w, base.lengths)


def option_fields(values: dict) -> dict:
    """The command line's option values (fastattn.configs' linear_regression card) → the task's
    fields: named spectra resolved at the task's dim, lists of context lengths as tuples, --w-var
    as Σ_w = VAR·I, --cov-rho as the Toeplitz Λ (replacing the spectrum)."""
    from fastattn.tasks.spectra import spectrum, toeplitz_cov

    out = {k: v for k, v in values.items() if k not in ("w_var", "cov_rho") and v is not None}
    d = int(values["dim"])
    if isinstance(out.get("spectrum"), str):
        out["spectrum"] = tuple(spectrum(out["spectrum"], d))
    if isinstance(out.get("context"), list):
        out["context"] = tuple(out["context"])
    if values.get("w_var") is not None:
        out["w_cov"] = float(values["w_var"]) * np.eye(d)
    if values.get("cov_rho") is not None:
        out["cov"] = toeplitz_cov(d, float(values["cov_rho"]))
        out.pop("spectrum", None)
    return out


def _context_mask(lengths: torch.Tensor, n_max: int) -> torch.Tensor:
    """`[B, n_max]` bool, True on the real (not padded) context rows."""
    return torch.arange(n_max, device=lengths.device)[None, :] < lengths[:, None]


def _assemble(x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor, y_q: torch.Tensor,
              w: torch.Tensor, lengths: torch.Tensor) -> Batch:
    """Build the token tensor `[B, N+1, D+1]` (query last, its y slot zero) from the pieces."""
    ctx = torch.cat([x, y[..., None]], dim=-1)                            # [B, N, D+1]
    query = torch.cat([x_q, torch.zeros_like(x_q[:, :1])], dim=-1)        # [B, D+1]
    tokens = torch.cat([ctx, query[:, None]], dim=1)                      # [B, N+1, D+1]
    return Batch(tokens=tokens, x=x, y=y, x_q=x_q, y_q=y_q, w=w, lengths=lengths)


def split_tokens(tokens: torch.Tensor, dim: int | None = None) -> tuple[torch.Tensor, ...]:
    """(x `[B,N,D]`, y `[B,N]`, x_q `[B,D]`) from a token tensor `[B, N+1, D+1]`.

    Raises ValueError if the shape is wrong or the query's y slot is not zero.
    """
    if tokens.ndim != 3 or tokens.shape[1] < 2 or tokens.shape[2] < 2:
        raise ValueError("tokens must be [B, N+1, D+1] with N >= 1 and D >= 1 (query last); "
                         f"got shape {tuple(tokens.shape)}")
    if dim is not None and tokens.shape[2] != dim + 1:
        raise ValueError(f"tokens must have D+1 = {dim + 1} columns for dim={dim}; "
                         f"got shape {tuple(tokens.shape)}")
    if torch.any(tokens[:, -1, -1] != 0):
        raise ValueError("tokens[:, -1, -1] (the query's y slot) must be zero: the query is the "
                         "last row and its label is what the model predicts")
    return tokens[:, :-1, :-1], tokens[:, :-1, -1], tokens[:, -1, :-1]
