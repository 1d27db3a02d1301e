"""Pure-torch ground truth for the fused He et al. 2025 training step (spec §7.2 K1): the fast
stream's counter-based generator and one Adam step of R runs, in float64 (docs/conventions.md,
"He 2025 fast stream"). The gradient comes from autograd, not from the closed form the kernels use.
"""

from __future__ import annotations

import math

import torch

__all__ = ["NAMES", "adam_step_reference", "normals_reference", "philox_reference",
           "sample_reference", "unpack"]

NAMES = ("wq", "wk", "wv", "wo")
_M32 = 0xFFFFFFFF


def philox_reference(seed: int, c0, c1, c2, c3) -> tuple[torch.Tensor, ...]:
    """Philox4x32-10 (Salmon et al. 2011, as triton.language.random.philox) on int64 tensors
    holding uint32 words; key (seed mod 2³², seed >> 32)."""
    c = [torch.as_tensor(x, dtype=torch.int64) & _M32 for x in (c0, c1, c2, c3)]
    c = list(torch.broadcast_tensors(*c))
    k0, k1 = seed & _M32, (seed >> 32) & _M32
    for _ in range(10):
        pb, pa = 0xCD9E8D57 * c[2], 0xD2511F53 * c[0]   # < 2⁶⁴: exact in uint64, kept as int64
        hi_b = (pb >> 32) & _M32
        hi_a = (pa >> 32) & _M32
        c = [hi_b ^ c[1] ^ k0, pb & _M32, hi_a ^ c[3] ^ k1, pa & _M32]
        k0, k1 = (k0 + 0x9E3779B9) & _M32, (k1 + 0xBB67AE85) & _M32
    return tuple(c)


def normals_reference(seed: int, step: int, prompts: torch.Tensor, count: int) -> torch.Tensor:
    """Standard normals n = 0..count-1 of the given prompts of batch `step`: `[len(prompts),
    count]` float64. Block j = n // 4 is Philox(counter (j, prompt, step mod 2³², step >> 32));
    its words (a, b, c, d) become uniforms u = (w >> 9 + ½) 2⁻²³ and, by Box-Muller,
    normals 4j..4j+3 = r₁ cos 2πu_b, r₁ sin 2πu_b, r₂ cos 2πu_d, r₂ sin 2πu_d with
    r₁ = √(−2 log u_a), r₂ = √(−2 log u_c)."""
    blocks = (count + 3) // 4
    j = torch.arange(blocks, dtype=torch.int64)[None, :]
    b = prompts.to(torch.int64)[:, None]
    a, bb, c, d = (((w >> 9).double() + 0.5) * 2.0 ** -23
                   for w in philox_reference(seed, j, b, step & _M32, step >> 32))
    r1, r2 = torch.sqrt(-2 * torch.log(a)), torch.sqrt(-2 * torch.log(c))
    t1, t2 = 2 * math.pi * bb, 2 * math.pi * d
    out = torch.stack([r1 * torch.cos(t1), r1 * torch.sin(t1), r2 * torch.cos(t2),
                       r2 * torch.sin(t2)], -1)
    return out.reshape(len(prompts), 4 * blocks)[:, :count]


def sample_reference(seed: int, step: int, batch: int, context: int, x_factor: torch.Tensor,
                     w_factor: torch.Tensor, noise_std: float,
                     normals: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
    """Batch `step` of key `seed`: z `[B, L, D]`, z_q `[B, D]`, y_q `[B]` (float64). Normals of a
    prompt: x of tokens 0..L (L is the query) at ℓ d + i, then w at (L+1) d + i, then the label
    noise of token ℓ at (L+1) d + d + ℓ; x = x_factor ε, w = w_factor ε. `normals` `[B, n]`
    replaces the generator's (to check the token map on other draws)."""
    d, L = x_factor.shape[0], context
    n = (L + 1) * d + d + (L + 1)
    if normals is None:
        normals = normals_reference(seed, step, torch.arange(batch), n)
    eps_x = normals[:, :(L + 1) * d].reshape(batch, L + 1, d)
    x = eps_x @ x_factor.double().T
    w = normals[:, (L + 1) * d:(L + 2) * d] @ w_factor.double().T
    y = (x @ w[:, :, None])[..., 0] + noise_std * normals[:, (L + 2) * d:]
    z = torch.cat([x[:, :L], y[:, :L, None]], -1)
    z_q = torch.cat([x[:, L], torch.zeros(batch, 1, dtype=x.dtype)], -1)
    return z, z_q, y[:, L]


def unpack(theta: torch.Tensor, heads: int, dim: int) -> dict[str, torch.Tensor]:
    """One run's flat parameters `[P]` as wq, wk, wv `[H, D, D]` and wo `[H, D]` (D = dim + 1)."""
    dd = dim + 1
    sizes = [heads * dd * dd] * 3 + [heads * dd]
    parts = torch.split(theta, sizes)
    return {n: p.reshape((heads, dd, dd) if n != "wo" else (heads, dd))
            for n, p in zip(NAMES, parts, strict=True)}


def _loss(theta: torch.Tensor, heads: int, z: torch.Tensor, z_q: torch.Tensor,
          y_q: torch.Tensor) -> torch.Tensor:
    """Mean squared error of the single-query model (spec §1.2-1.3) on one batch."""
    p = unpack(theta, heads, z.shape[-1] - 1)
    dd = z.shape[-1]
    q = torch.einsum("hij,bj->bhi", p["wq"], z_q)
    k = torch.einsum("hij,blj->bhli", p["wk"], z)
    v = torch.einsum("hij,blj->bhli", p["wv"], z)
    att = torch.softmax(torch.einsum("bhli,bhi->bhl", k, q) / math.sqrt(dd), -1)
    pred = torch.einsum("hi,bhli,bhl->b", p["wo"], v, att)
    return ((pred - y_q) ** 2).mean()


def adam_step_reference(theta: torch.Tensor, m: torch.Tensor, v: torch.Tensor, heads: int,
                        batches: list[tuple[torch.Tensor, ...]], step: int, lr: torch.Tensor,
                        betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8
                        ) -> tuple[torch.Tensor, ...]:
    """One Adam step (torch.optim.Adam's update; `step` steps taken before) of R runs with
    parameters theta, m, v `[R, P]` on their batches (z, z_q, y_q); returns (theta, m, v, loss
    `[R]`), float64."""
    out = []
    t = step + 1
    for r, (z, z_q, y_q) in enumerate(batches):
        th = theta[r].double().clone().requires_grad_(True)
        loss = _loss(th, heads, z.double(), z_q.double(), y_q.double())
        (g,) = torch.autograd.grad(loss, th)
        mr = betas[0] * m[r].double() + (1 - betas[0]) * g
        vr = betas[1] * v[r].double() + (1 - betas[1]) * g * g
        denom = vr.sqrt() / math.sqrt(1 - betas[1] ** t) + eps
        out.append((th.detach() - float(lr[r]) / (1 - betas[0] ** t) * mr / denom, mr, vr,
                    loss.detach()))
    return tuple(torch.stack(x) for x in zip(*out, strict=True))
