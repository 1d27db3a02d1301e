"""Objectives: an exact loss L(θ) with its gradient (and optionally Hessian, Hessian-vector products,
a stage preconditioner, a cost hint, a working basis) that the C++ integrators follow.

- `Objective` is the compiled core's interface; subclass it in Python (call ``super().__init__()``,
  define ``size()`` and ``loss_grad(params) -> (loss, grad)``, optionally ``hvp(params, u)``,
  ``hessian(params)`` and ``cost_hint()``) and the integrators drive your numpy model.
- `LinearAttentionObjective` is the closed-form population loss of the zero-block linear attention
  models on a task with Gaussian moments (docs/theory.md §1–3); registered for
  (linear_regression, merged | cubic_mlp | separate).

The linear attention models by config (conveniences over `LinearAttentionObjective`):
`loss_and_grad`, `hessian`, `hvp`, `make_evaluator`, `gamma`, `n_params`, `conserved_quantities`;
they take the model's config (`model.config`, e.g. `SeparateConfig(dim=4, heads=5, rank=1)`), whose
card lays out the flat vector; `linear_dims(config)` is the core's ints (D, H, R) read off it. The
old form with the family's name and a positional dims tuple (D, H, R) still works, with one
deprecation line (`fastattn.population.legacy`).

Families and flat float64 layouts (docs/conventions.md; the cards' `shapes`):

- ``"merged"`` (ATTN_M): ``v [H]``, ``U [H, D, D]``, Γ = Σ_i v_i U_i, P = H(1 + D²).
- ``"cubic_mlp"``: ``w2 [H]``, ``W1 [H, D·D]``; same layout and Γ as merged.
- ``"separate"`` (ATTN_S, rank R): ``v [H]``, ``K [H, R, D]``, ``Q [H, R, D]``, Γ = Σ_i v_i K_iᵀ Q_i,
  P = H(1 + 2RD).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fastattn import configs as layout
from fastattn._core_loader import core
from fastattn.population import reference
from fastattn.population.legacy import LINEAR_SLOTS, config_of, family_first
from fastattn.population.moments import Moments
from fastattn.population.reference import sizes
from fastattn.population.registry import register_objective

FAMILIES = reference.FAMILIES

Objective = core.Objective


def linear_dims(config) -> tuple[int, int, int]:
    """(D, H, R), the ints the compiled core takes, of a linear attention model config (merged,
    cubic_mlp or separate): R its key/query rank, 1 for the families without one."""
    _, D, H, R = sizes(config)
    return D, H, R


def moment_arrays(moments: Moments | Sequence[Moments], D: int, K: int):
    """(cov [Km, D, D], w_second [Km, D, D], noise [Km], inv_n [Km]) with Km ∈ {1, K}, validated."""
    ms = [moments] if isinstance(moments, Moments) else list(moments)
    if not ms or not all(isinstance(m, Moments) for m in ms):
        raise ValueError("moments must be a Moments or a sequence of K Moments")
    if len(ms) not in (1, K):
        raise ValueError(f"moments: got {len(ms)} sets for K={K} models; pass 1 shared set or K")
    cov = np.stack([np.asarray(m.cov, dtype=np.float64) for m in ms])
    ws = np.stack([np.asarray(m.w_second, dtype=np.float64) for m in ms])
    if cov.shape[1:] != (D, D) or ws.shape[1:] != (D, D):
        raise ValueError(
            f"moments: cov/w_second have shape {cov.shape[1:]}/{ws.shape[1:]}, but the model has D={D}; "
            "build the Moments for the same token dimension"
        )
    noise = np.array([float(m.noise) for m in ms])
    inv_n = np.array([float(m.inv_n) for m in ms])
    if not (np.all(np.isfinite(cov)) and np.all(np.isfinite(ws)) and np.all(np.isfinite(noise))
            and np.all(np.isfinite(inv_n))):
        raise ValueError("moments contain non-finite entries")
    return cov, ws, noise, inv_n


class LinearAttentionObjective(core.LinearAttention):
    """The exact population loss of a zero-block linear attention model (its `config`: merged,
    cubic_mlp or separate) on a task with `moments`, in C++ (float64). The integrators work in
    Λ's eigenbasis.

    Methods (parameters in the caller's basis, `[P]`, or `[K, P]` where noted):
        loss_grad(params [P] | [K, P], eigen=False) -> (loss, grad): batch over K models;
            eigen=True takes and returns Λ's eigenbasis.
        hessian(params) -> [P, P]; hessian_diag(params) -> [P]; hvp(params, u) -> [P].
        stage_preconditioner(params, c, r) -> [P]: (I + c·Hb)⁻¹ r, Hb the Hessian's Gauss–Newton
            blocks of each head (the Hessian-free Rodas4's preconditioner; docs/theory.md).
        to_eigen(params) / from_eigen(params) (= to_working / from_working), eigvecs() -> [D, D].
    Attributes: config, family (its kind), moments, P.
    The old form `LinearAttentionObjective(family, dims, moments)` is deprecated.
    """

    def __init__(self, config, moments: Moments, *old_moments: Moments):
        if isinstance(config, str):                         # (family, dims, moments)
            config = config_of(config, moments, LINEAR_SLOTS,
                               "LinearAttentionObjective(config, moments)")
            (moments,) = old_moments
        layout, D, H, R = sizes(config)
        cov, ws, noise, inv_n = moment_arrays(moments, D, 1)
        super().__init__(family=core.Family.__members__[layout], D=D, H=H, R=R,
                         cov=cov[0], w_second=ws[0], noise=float(noise[0]), inv_n=float(inv_n[0]))
        self.config, self.family, self.moments = config, config.kind, moments

    def __repr__(self) -> str:
        return f"LinearAttentionObjective({self.config!r})"


def _linear_attention(task, model) -> LinearAttentionObjective:
    return LinearAttentionObjective(model.config, task.moments())


def _every_linear_regression(task, config) -> str | None:
    """None: the closed form covers every linear-regression task. The read-out ŷ = βᵀΓx_q is
    linear in the task vector w, so the loss needs only E[wwᵀ] (a task mean and a fixed-task
    mixture included); x is Gaussian (Isserlis gives the fourth moments); label noise enters as
    σ²; a random context length N only through E[1/N] (the loss is affine in 1/N), which is also
    the next-token loss's uniform mixture of lengths."""
    return None


for _family in FAMILIES:
    register_objective("linear_regression", _family, exact_for=_every_linear_regression)(
        _linear_attention)


# ---------------------------------------------------------------- the family-name conveniences
def check_params(name: str, params, P: int, what: str) -> np.ndarray:
    """`params` as contiguous float64 `[P]` or `[K, P]`, or a ValueError naming `name` and the fix."""
    p = np.ascontiguousarray(np.asarray(params, dtype=np.float64))
    if p.ndim not in (1, 2) or p.shape[-1] != P:
        raise ValueError(f"{name} has shape {p.shape}, but {what} needs [P] or [K, P] with P={P}; "
                         "check the objective or the flat layout")
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} contains non-finite weights (NaN/inf); pass finite parameters")
    return p


def _family_params(name: str, params, config) -> np.ndarray:
    return check_params(name, params, n_params(config), f"the {config.kind} model {linear_dims(config)}")


def _backend(backend: str) -> str:
    """"cpp" (the compiled core; "auto" picks it) or "torch" (the float64 torch reference)."""
    if backend not in ("auto", "cpp", "torch"):
        raise ValueError(f"backend={backend!r} is unknown; use 'auto', 'cpp' or 'torch'")
    return "cpp" if backend == "auto" else backend


def _moment_list(moments, K: int) -> list[Moments]:
    ms = [moments] if isinstance(moments, Moments) else list(moments)
    return ms * K if len(ms) == 1 else ms


@family_first(dims_at=1)
def n_params(config) -> int:
    """Flat parameter count P of a linear attention model config."""
    return layout.n_params(sizes(config))


@family_first(dims_at=2)
def gamma(config, params) -> np.ndarray:
    """Effective matrix Γ `[D, D]` (or `[K, D, D]` for params `[K, P]`), numpy."""
    b = layout.unflatten(sizes(config), _family_params("params", params, config))
    if "U" in b:
        return np.einsum("...i,...iab->...ab", b["v"], b["U"])
    return np.einsum("...i,...ira,...irb->...ab", b["v"], b["K"], b["Q"])


@family_first(dims_at=2)
def loss_and_grad(config, params, moments, backend: str = "auto"):
    """Population loss and gradient ∂L/∂θ of the linear attention model `config`.

    Args:
        params: `[P]` or `[K, P]` flat float64 parameters.
        moments: one Moments (shared) or a sequence of K Moments.
    Returns:
        (loss, grad): a float and `[P]` for params `[P]`; `[K]` and `[K, P]` for `[K, P]`.
    """
    p = _family_params("params", params, config)
    K = 1 if p.ndim == 1 else p.shape[0]
    moment_arrays(moments, sizes(config).dim, K)
    ms = _moment_list(moments, K)
    pk = p.reshape(K, -1)
    if _backend(backend) == "cpp":
        if isinstance(moments, Moments):
            loss, grad = LinearAttentionObjective(config, moments).loss_grad(pk)
        else:
            out = [LinearAttentionObjective(config, ms[k]).loss_grad(pk[k]) for k in range(K)]
            loss, grad = np.array([o[0] for o in out]), np.stack([o[1] for o in out])
    else:
        out = [reference.loss_and_grad(config, pk[k], ms[k]) for k in range(K)]
        loss, grad = np.array([o[0] for o in out]), np.stack([o[1] for o in out])
    if p.ndim == 1:
        return float(loss[0]), grad[0]
    return loss, grad


@family_first(dims_at=2)
def hessian(config, params, moments: Moments, backend: str = "auto") -> np.ndarray:
    """Dense Hessian ∂²L/∂θ² `[P, P]` of one model (params `[P]`)."""
    p = _family_params("params", params, config)
    if p.ndim != 1:
        raise ValueError("params must be one model [P] for hessian")
    moment_arrays(moments, sizes(config).dim, 1)
    if _backend(backend) == "cpp":
        return make_evaluator(config, moments).hessian(p)
    return reference.hessian(config, p, moments)


@family_first(dims_at=3)
def hvp(config, params, u, moments: Moments) -> np.ndarray:
    """Hessian-vector product `[P]` (C++ core)."""
    p = _family_params("params", params, config)
    uu = np.ascontiguousarray(np.asarray(u, dtype=np.float64))
    if p.ndim != 1 or uu.shape != p.shape:
        raise ValueError(f"u must have the shape of params {p.shape}, got {uu.shape}")
    return make_evaluator(config, moments).hvp(p, uu)


@family_first(dims_at=1)
def make_evaluator(config, moments: Moments) -> LinearAttentionObjective:
    """The C++ objective of a linear attention model config with fixed moments (for repeated
    calls); see LinearAttentionObjective for its methods."""
    return LinearAttentionObjective(config, moments)


@family_first(dims_at=2)
def conserved_quantities(config, params_over_time) -> dict[str, np.ndarray]:
    """Quantities conserved by the gradient flow (any loss), for diagnostics.

    Args:
        params_over_time: `[..., P]` (e.g. `[T, P]`).
    Returns:
        merged/cubic_mlp: {"w2w2T_minus_W1W1T": `[..., H, H]`} (Eq. 55: w₂w₂ᵀ − W₁W₁ᵀ).
        separate: {"k_minus_q": `[..., H, R]` = ‖k_ir‖² − ‖q_ir‖²,
                   "k_minus_v": `[..., H]` = Σ_r ‖k_ir‖² − v_i²} (Eq. 89).
    """
    b = layout.unflatten(sizes(config), params_over_time)
    if "U" in b:
        v, W1 = b["v"], b["U"].reshape(*b["U"].shape[:-2], -1)      # W1 [..., H, D²]
        return {"w2w2T_minus_W1W1T": v[..., :, None] * v[..., None, :]
                - np.einsum("...ia,...ja->...ij", W1, W1)}
    kk = (b["K"] ** 2).sum(-1)
    return {"k_minus_q": kk - (b["Q"] ** 2).sum(-1), "k_minus_v": kk.sum(-1) - b["v"] ** 2}
