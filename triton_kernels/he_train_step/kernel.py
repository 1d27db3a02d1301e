"""Triton kernel K1 of spec §7.2: one fused Adam step of R independent He et al. 2025 runs
(single-query multi-head softmax attention), two launches per step.

``_step_grads``, grid (R, tiles): program (r, t) draws tile t (BLOCK_B prompts) of run r's batch
from the fast stream (Philox, docs/conventions.md), runs the forward pass once per head and the
closed-form backward pass (spec §7.1), and writes the tile's loss and ∂L/∂KQ_h (rank-1 per
prompt), ∂L/∂OV_h to its own slot. ``_adam``, grid (R,): sums the tiles' slots in tile order
(deterministic, no atomics), chains them to W_Q, W_K, W_V, W_O and applies Adam in place.
No ``tl.dot`` (D is tiny and float64 must run under the interpreter).
"""

from __future__ import annotations

import math

import torch
import triton.language as tl

from .._launch import TritonKernel, block_size, interpreting

__all__ = ["he_adam_step_triton", "he_adam_steps_triton"]


def _step_grads(theta_ptr, seed_ptr, fx_ptr, fw_ptr, noise_ptr, loss_part_ptr, grad_part_ptr,
                work_ptr, normals_ptr, z_ptr, zq_ptr, yq_ptr, consts_ptr, step_ptr, H, d, L, B, P,
                BLOCK_B: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr,
                BLOCK_N: tl.constexpr, WRITE_BATCH: tl.constexpr):
    r = tl.program_id(0).to(tl.int64)
    tile = tl.program_id(1)
    tiles = tl.num_programs(1)
    D = d + 1
    G = H * D * D + H * D                # ∂L/∂KQ_h then ∂L/∂OV_h, per tile
    b0 = tile * BLOCK_B
    ot = tl.arange(0, BLOCK_T)           # tokens 0..L (L: the query)
    od = tl.arange(0, BLOCK_D)
    md = od < D
    m2 = md[:, None] & md[None, :]
    seed = tl.load(seed_ptr + r)
    sigma = tl.load(noise_ptr + r)
    dt = theta_ptr.dtype.element_ty
    inv_sqrt_d = tl.load(consts_ptr)     # in the parameters' dtype (a Python float is float32)
    theta = theta_ptr + r * P
    ob = b0 + tl.arange(0, BLOCK_B)
    mb = ob < B
    # ---- the tile's normals from the fast stream, four per Philox draw (normal n of a prompt is
    # word pair n % 4 // 2 of draw n // 4, Box-Muller's cosine for even n, sine for odd), through
    # the program's scratch, since a prompt's token tile reads them in another order
    nrm = normals_ptr + (r * tiles + tile) * (BLOCK_B * BLOCK_N)
    rows = tl.arange(0, BLOCK_B)[:, None] * BLOCK_N                       # [BB, 1]
    ok = tl.arange(0, BLOCK_N // 4)
    c0 = (ok[None, :] + 0 * ob[:, None]).to(tl.uint32)                    # [BB, BN/4]
    c1 = (ob[:, None] + 0 * ok[None, :]).to(tl.uint32)
    step = tl.load(step_ptr)             # from memory: one captured CUDA graph serves every step
    w0, w1, w2, w3 = tl.philox(seed, c0, c1, (c1 * 0 + (step & 0xFFFFFFFF)).to(tl.uint32),
                               (c1 * 0 + (step >> 32)).to(tl.uint32))
    for pair in tl.static_range(2):
        ua = ((w0 if pair == 0 else w2) >> 9).to(tl.float32)
        ub = ((w1 if pair == 0 else w3) >> 9).to(tl.float32)
        rad = tl.sqrt(-2.0 * tl.log((ua + 0.5) * 1.1920928955078125e-07))
        th = 6.283185307179586 * ((ub + 0.5) * 1.1920928955078125e-07)
        tl.store(nrm + rows + 4 * ok[None, :] + 2 * pair, rad * tl.cos(th))
        tl.store(nrm + rows + 4 * ok[None, :] + 2 * pair + 1, rad * tl.sin(th))
    tl.debug_barrier()                   # the scratch is read back below by other threads
    # ---- the prompts: x = Fx ε, w = Fw ε, y = <x, w> + σ ε (normal t d + q: token t's x_q;
    # (L + 1) d + j: w_j; (L + 1) d + d + t: token t's label noise)
    tok = (ot <= L)[None, :]
    x = tl.zeros([BLOCK_B, BLOCK_T, BLOCK_D], dt)
    w = tl.zeros([BLOCK_B, BLOCK_D], dt)
    for q in range(d):
        e = tl.load(nrm + rows + ot[None, :] * d + q, mask=tok, other=0.0).to(dt)  # [BB, BT]
        fx_col = tl.load(fx_ptr + r * d * d + od * d + q, mask=od < d, other=0.0)
        x += e[:, :, None] * fx_col.to(dt)[None, None, :]
    for j in range(d):
        e0 = tl.load(nrm + rows + (L + 1) * d + j).to(dt)                     # [BB, 1]
        fw_col = tl.load(fw_ptr + r * d * d + od * d + j, mask=od < d, other=0.0)
        w += e0 * fw_col.to(dt)[None, :]
    noise = tl.load(nrm + rows + (L + 1) * d + d + ot[None, :], mask=tok, other=0.0).to(dt)
    y = tl.sum(x * w[:, None, :], axis=2) + sigma.to(dt) * noise          # [BB, BT]
    ctx = (ot < L)[None, :, None] & mb[:, None, None]
    z = tl.where(ctx, x + tl.where(od == d, 1.0, 0.0)[None, None, :] * y[:, :, None], 0.0)
    zq = tl.sum(tl.where((ot == L)[None, :, None], x, 0.0), axis=1)       # [BB, BD]
    yq = tl.sum(tl.where((ot == L)[None, :], y, 0.0), axis=1)             # [BB]
    if WRITE_BATCH:
        mz = ctx & md[None, None, :]
        tl.store(z_ptr + ((r * B + ob[:, None, None]) * L + ot[None, :, None]) * D
                 + od[None, None, :], z, mask=mz)
        tl.store(zq_ptr + (r * B + ob[:, None]) * D + od[None, :], zq,
                 mask=mb[:, None] & md[None, :])
        tl.store(yq_ptr + r * B + ob, yq, mask=mb)
    # ---- forward per head: logits z_ℓ·(KQ_h z_q), softmax over ℓ < L, values OV_h·z_ℓ; each
    # head's backward factors (without the error e_b, which needs every head) go to this
    # program's work area: a_bh = Σ_ℓ p z_ℓ and c_bh = Σ_ℓ p (v − head) z_ℓ
    work = work_ptr + (r * tiles + tile) * (2 * H * BLOCK_B * BLOCK_D)
    wtile = tl.arange(0, BLOCK_B)[:, None] * BLOCK_D + od[None, :]
    yhat = tl.zeros([BLOCK_B], dt)
    for h in range(H):
        hw = theta + h * D * D + od[:, None] * D + od[None, :]
        wq = tl.load(hw, mask=m2, other=0.0)
        wk = tl.load(hw + H * D * D, mask=m2, other=0.0)
        wv = tl.load(hw + 2 * H * D * D, mask=m2, other=0.0)
        wo = tl.load(theta + 3 * H * D * D + h * D + od, mask=md, other=0.0)
        kq = tl.sum(wk[:, :, None] * wq[:, None, :], axis=0) * inv_sqrt_d  # [i, j]
        ov = tl.sum(wo[:, None] * wv, axis=0)
        u = tl.sum(kq[None, :, :] * zq[:, None, :], axis=2)               # [BB, BD]
        s = tl.sum(z * u[:, None, :], axis=2)
        s = tl.where((ot < L)[None, :], s, float("-inf"))
        p = tl.exp(s - tl.max(s, axis=1)[:, None])
        p = p / tl.sum(p, axis=1)[:, None]
        vv = tl.sum(z * ov[None, None, :], axis=2)
        head = tl.sum(p * vv, axis=1)
        yhat += head
        tl.store(work + h * BLOCK_B * BLOCK_D + wtile, tl.sum(p[:, :, None] * z, axis=1))
        c = tl.sum((p * (vv - head[:, None]))[:, :, None] * z, axis=1)
        tl.store(work + (H + h) * BLOCK_B * BLOCK_D + wtile, c)
    tl.debug_barrier()                   # the work area is read back below by other threads
    err = tl.where(mb, yhat - yq, 0.0)
    tl.store(loss_part_ptr + r * tiles + tile, tl.sum(err * err, axis=0))
    e_b = err * 2.0 / B
    # ---- backward: ∂L/∂OV_h = Σ_b e_b a_bh, ∂L/∂KQ_h = Σ_b e_b c_bh z_qᵀ (rank 1 per prompt)
    part = grad_part_ptr + (r * tiles + tile) * G
    for h in range(H):
        a = tl.load(work + h * BLOCK_B * BLOCK_D + wtile)
        c = tl.load(work + (H + h) * BLOCK_B * BLOCK_D + wtile)
        g = tl.sum((e_b[:, None] * c)[:, :, None] * zq[:, None, :], axis=0)  # [BD, BD]
        tl.store(part + h * D * D + od[:, None] * D + od[None, :], g, mask=m2)
        tl.store(part + H * D * D + h * D + od, tl.sum(e_b[:, None] * a, axis=0), mask=md)


def _adam(theta_ptr, m_ptr, v_ptr, lr_ptr, loss_part_ptr, grad_part_ptr, losses_ptr, consts_ptr,
          step_ptr, step0, n_steps, H, d, B, P, TILES, BLOCK_D: tl.constexpr):
    r = tl.program_id(0).to(tl.int64)
    D = d + 1
    G = H * D * D + H * D
    od = tl.arange(0, BLOCK_D)
    md = od < D
    m2 = md[:, None] & md[None, :]
    dt = theta_ptr.dtype.element_ty
    inv_sqrt_d = tl.load(consts_ptr)
    beta1 = tl.load(consts_ptr + 3)
    beta2 = tl.load(consts_ptr + 4)
    eps = tl.load(consts_ptr + 5)
    step = tl.load(step_ptr)
    t = (step + 1).to(dt)                # Adam's bias corrections 1 − β^t, as exp(t log β)
    bias1 = 1 - tl.exp(t * tl.load(consts_ptr + 1))
    bias2_sqrt = tl.sqrt(1 - tl.exp(t * tl.load(consts_ptr + 2)))
    theta = theta_ptr + r * P
    parts = grad_part_ptr + r * TILES * G
    loss = tl.sum(tl.zeros([BLOCK_D], dt), axis=0)
    for t in range(TILES):               # tile order: deterministic
        loss += tl.load(loss_part_ptr + r * TILES + t)
    tl.store(losses_ptr + r * n_steps + (step - step0), loss / B)
    # ---- chain to the factors and one Adam step (torch.optim.Adam's update)
    step_size = tl.load(lr_ptr + r) / bias1
    for h in range(H):
        off = h * D * D + od[:, None] * D + od[None, :]
        wq = tl.load(theta + off, mask=m2, other=0.0)
        wk = tl.load(theta + H * D * D + off, mask=m2, other=0.0)
        wv = tl.load(theta + 2 * H * D * D + off, mask=m2, other=0.0)
        wo = tl.load(theta + 3 * H * D * D + h * D + od, mask=md, other=0.0)
        g = tl.zeros([BLOCK_D, BLOCK_D], dt)
        dov = tl.zeros([BLOCK_D], dt)
        for t in range(TILES):
            g += tl.load(parts + t * G + h * D * D + od[:, None] * D + od[None, :], mask=m2,
                         other=0.0)
            dov += tl.load(parts + t * G + H * D * D + h * D + od, mask=md, other=0.0)
        for which in tl.static_range(3):
            if which == 0:
                # wk @ G, reduced over the last axis (no implicit tt.dot: pe_attention's doc)
                gr = tl.sum(wk[:, None, :] * tl.trans(g)[None, :, :], axis=2) * inv_sqrt_d
            elif which == 1:
                gr = tl.sum(wq[:, None, :] * g[None, :, :], axis=2) * inv_sqrt_d  # wq @ Gᵀ
            else:
                gr = wo[:, None] * dov[None, :]
            ptr = which * H * D * D + off
            mo = tl.load(m_ptr + r * P + ptr, mask=m2, other=0.0)
            vo = tl.load(v_ptr + r * P + ptr, mask=m2, other=0.0)
            mo = mo + (1 - beta1) * (gr - mo)
            vo = vo * beta2 + (1 - beta2) * gr * gr
            par = tl.load(theta + ptr, mask=m2, other=0.0)
            par = par - step_size * (mo / (tl.sqrt(vo) / bias2_sqrt + eps))
            tl.store(m_ptr + r * P + ptr, mo, mask=m2)
            tl.store(v_ptr + r * P + ptr, vo, mask=m2)
            tl.store(theta + ptr, par, mask=m2)
        go = tl.sum(wv * dov[None, :], axis=1)
        ptr = 3 * H * D * D + h * D + od
        mo = tl.load(m_ptr + r * P + ptr, mask=md, other=0.0)
        vo = tl.load(v_ptr + r * P + ptr, mask=md, other=0.0)
        mo = mo + (1 - beta1) * (go - mo)
        vo = vo * beta2 + (1 - beta2) * go * go
        par = tl.load(theta + ptr, mask=md, other=0.0)
        par = par - step_size * (mo / (tl.sqrt(vo) / bias2_sqrt + eps))
        tl.store(m_ptr + r * P + ptr, mo, mask=md)
        tl.store(v_ptr + r * P + ptr, vo, mask=md)
        tl.store(theta + ptr, par, mask=md)



_GRADS = TritonKernel(_step_grads)
_ADAM = TritonKernel(_adam)


def _grad_warps(dtype: torch.dtype) -> int:
    """Warps per program of the gradient kernel: 8 spread the [BLOCK_B, BLOCK_T, BLOCK_D] token
    tile over 256 threads, which keeps it at 25 % occupancy at the He shapes; float64 takes 16,
    because on 8 ptxas capped it at 128 registers and spilled (README.md)."""
    return 8 if dtype.itemsize <= 4 else 16


def _block_b(batch: int) -> int:
    """Prompts per program of the gradient kernel: 8 compiled (README.md: registers and occupancy
    by block size), 16 under the interpreter (fewer Python programs)."""
    return min(block_size(batch), 16 if interpreting() else 8)


class _Buffers:
    """What the steps of one call share: the scratch, Adam's constants, the step counter (device
    memory, so that the launches of a step never change) and every step's losses `[R, n_steps]`."""

    def __init__(self, theta, heads, d, context, batch, step0, n_steps, betas, eps, write_batch):
        r = theta.shape[0]
        dev, dt = theta.device, theta.dtype
        self.bb, self.bt, self.bd = _block_b(batch), block_size(context + 1), block_size(d + 1)
        self.bn = block_size((context + 1) * (d + 1) + d, 4)   # a prompt's normals, 4 per draw
        self.tiles = -(-batch // self.bb)
        g = heads * (d + 1) * (d + 1) + heads * (d + 1)
        self.loss_part = torch.empty(r, self.tiles, dtype=dt, device=dev)
        self.grad_part = torch.empty(r, self.tiles, g, dtype=dt, device=dev)
        self.work = torch.empty(r, self.tiles, 2 * heads * self.bb * self.bd, dtype=dt, device=dev)
        self.normals = torch.empty(r, self.tiles, self.bb * self.bn, dtype=torch.float32,
                                   device=dev)
        self.consts = torch.tensor([1 / math.sqrt(d + 1), math.log(betas[0]), math.log(betas[1]),
                                    betas[0], betas[1], eps], dtype=dt, device=dev)
        self.step = torch.full((1,), step0, dtype=torch.int64, device=dev)
        self.losses = torch.full((r, n_steps), float("nan"), dtype=dt, device=dev)
        self.step0, self.n_steps = step0, n_steps
        if write_batch:
            self.batch = (torch.empty(r, batch, context, d + 1, dtype=dt, device=dev),
                          torch.empty(r, batch, d + 1, dtype=dt, device=dev),
                          torch.empty(r, batch, dtype=dt, device=dev))
        else:
            self.batch = (self.losses,) * 3    # never written (WRITE_BATCH=False)


def _step(bufs: _Buffers, theta, m, v, seeds, lr, x_factor, w_factor, noise_std, heads, context,
          batch, write_batch: bool) -> None:
    """One step's launches (gradients, then Adam and the step counter): the same every step."""
    r, p = theta.shape
    d = x_factor.shape[-1]
    _GRADS[(r, bufs.tiles)](theta, seeds, x_factor, w_factor, noise_std, bufs.loss_part,
                            bufs.grad_part, bufs.work, bufs.normals, *bufs.batch, bufs.consts,
                            bufs.step, heads, d, context, batch, p, BLOCK_B=bufs.bb,
                            BLOCK_T=bufs.bt, BLOCK_D=bufs.bd, BLOCK_N=bufs.bn,
                            WRITE_BATCH=write_batch, num_warps=_grad_warps(theta.dtype))
    _ADAM[(r,)](theta, m, v, lr, bufs.loss_part, bufs.grad_part, bufs.losses, bufs.consts,
                bufs.step, bufs.step0, bufs.n_steps, heads, d, batch, p, bufs.tiles,
                BLOCK_D=bufs.bd)
    bufs.step += 1


#: steps per captured CUDA graph: long enough that a replay's launch cost is small against its
#: work, short enough to capture in a few milliseconds
_GRAPH_STEPS = 64


def he_adam_steps_triton(theta: torch.Tensor, m: torch.Tensor, v: torch.Tensor,
                         seeds: torch.Tensor, lr: torch.Tensor, x_factor: torch.Tensor,
                         w_factor: torch.Tensor, noise_std: torch.Tensor, heads: int,
                         context: int, batch: int, step0: int, n_steps: int,
                         betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                         graphs: bool = True) -> torch.Tensor:
    """``n_steps`` fused Adam steps, in place on theta, m, v `[R, P]` (contiguous, one dtype),
    batches step0 .. step0 + n_steps − 1 of each run (step0 Adam steps taken before); seeds `[R]`
    int64, lr and noise_std `[R]`, x_factor and w_factor `[R, d, d]`. Returns every step's batch
    loss `[R, n_steps]` (before that step's update).

    Nothing in a step's launches depends on the host's step number (the counter lives on the
    device), so on CUDA (``graphs``) the steps after the first run as replays of one captured CUDA
    graph of :data:`_GRAPH_STEPS` steps: no launch cost on the host, no host synchronisation."""
    dt = theta.dtype
    args = (seeds.contiguous(), lr.to(dt).contiguous(), x_factor.to(dt).contiguous(),
            w_factor.to(dt).contiguous(), noise_std.to(dt).contiguous())
    bufs = _Buffers(theta, heads, x_factor.shape[-1], context, batch, step0, n_steps, betas, eps,
                    False)

    def step() -> None:
        _step(bufs, theta, m, v, *args, heads, context, batch, False)

    done = 0
    if graphs and theta.is_cuda and not interpreting() and n_steps > _GRAPH_STEPS:
        step()                          # compiles the kernels, outside the capture
        done = 1
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(_GRAPH_STEPS):
                step()
        while n_steps - done >= _GRAPH_STEPS:
            graph.replay()
            done += _GRAPH_STEPS
    for _ in range(n_steps - done):
        step()
    return bufs.losses


def he_adam_step_triton(theta: torch.Tensor, m: torch.Tensor, v: torch.Tensor, seeds: torch.Tensor,
                        lr: torch.Tensor, x_factor: torch.Tensor, w_factor: torch.Tensor,
                        noise_std: torch.Tensor, heads: int, context: int, batch: int, step: int,
                        betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                        write_batch: bool = False):
    """One fused Adam step (:func:`he_adam_steps_triton` at n_steps = 1); with write_batch also
    the batch (z `[R, B, L, D]`, z_q `[R, B, D]`, y_q `[R, B]`). Returns the batch losses `[R]`."""
    dt = theta.dtype
    bufs = _Buffers(theta, heads, x_factor.shape[-1], context, batch, step, 1, betas, eps,
                    write_batch)
    _step(bufs, theta, m, v, seeds.contiguous(), lr.to(dt).contiguous(),
          x_factor.to(dt).contiguous(), w_factor.to(dt).contiguous(),
          noise_std.to(dt).contiguous(), heads, context, batch, write_batch)
    loss = bufs.losses[:, 0]
    return (loss, bufs.batch) if write_batch else loss
