"""Sander et al. 2024, Fig. 3 (orthogonal, H = 8, d = 10, T_max = 20): the authors' route is 10⁵
iterations of jax-jitted GD on their closed-form loss l_O (orthogonal.py); here the same 10⁵
iterations of exact GD through the C++ core, against the same closed form written in torch, its
gradient by autograd, the whole step compiled with torch.compile (compile time excluded), and the
exact gradient flow (adaptive steps) to the loss GD reaches. Fig. 5: one epoch of sampled training
(library model and trainer) against the authors' augmented.py structure, in the same run.
pytest-benchmark, no timing asserts.

Run: python -m pytest bench/test_sander2024_bench.py --benchmark-only -q -s
     (Fig. 5 epochs only: -k fig5 --benchmark-columns=mean,min,max,rounds)
     (--benchmark-columns=mean,min,rounds for a compact table)
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from fastattn.models import ARDiag
from fastattn.models.autoregressive import ARDiagConfig
from fastattn.population import AutoRegressiveObjective, FlowOptions, integrate

D, H, TMAX, LR, STEPS = 10, 8, 20, 1e-3, 100_000
TORCH_STEPS = int(os.environ.get("FASTATTN_BENCH_TORCH_STEPS", STEPS))


def _theta0() -> np.ndarray:
    return ARDiag(D, H, TMAX, init_scale=0.1, init_seed=0).to_flat()


def torch_loss(theta: torch.Tensor) -> torch.Tensor:
    """l_O summed over T = 2..T_max (spec §5.7), vectorised over T like the authors' orthogonal.py."""
    A = theta[:H * D].reshape(H, D)
    B = theta[H * D:2 * H * D].reshape(H, D)
    P = theta[2 * H * D:].reshape(TMAX, TMAX)
    C = B.T @ A
    T = torch.arange(2, TMAX + 1)
    rows = P[T - 2]                                                         # [T_max−1, T_max]
    cols = torch.arange(TMAX)
    used = cols[None, :] < T[:, None]
    before = cols[None, :] == (T - 2)[:, None]
    rest = rows * (used & ~before)
    pm, pT = rows[torch.arange(TMAX - 1), T - 2], rows[torch.arange(TMAX - 1), T - 1]
    Q, Q2 = rest.sum(1), (rest * rest).sum(1)
    R = C.sum(1)
    c = C[torch.arange(D), torch.arange(D) ^ 1]
    S, F, tr, X, Y = R @ R, (C * C).sum(), torch.trace(C), R @ c, c @ c
    per_T = pm ** 2 * S + Q2 * F + 2 * pm * Q * X + (Q * Q - Q2) * Y - 2 * pT * tr + D
    return per_T.sum()


def test_torch_closed_form_equals_the_core():
    th = _theta0()
    core = AutoRegressiveObjective("orthogonal", ARDiagConfig(D, H, TMAX))
    t = torch.tensor(th, requires_grad=True)
    loss = torch_loss(t)
    loss.backward()
    L, g = core.loss_grad(th)
    assert float(loss) == pytest.approx(L, rel=1e-12)
    np.testing.assert_allclose(t.grad.numpy(), g, atol=1e-10)


def test_fig3_orthogonal_gd_core(benchmark):
    obj = AutoRegressiveObjective("orthogonal", ARDiagConfig(D, H, TMAX))
    opts = FlowOptions(method="euler", lr=LR, t_end=2 * LR * STEPS, record_times=(0.0, 2 * LR * STEPS))
    r = benchmark.pedantic(lambda: integrate(obj, _theta0(), opts), rounds=3, iterations=1)
    assert r.n_steps == STEPS
    benchmark.extra_info.update(final_loss=float(r.loss[-1]), n_steps=r.n_steps)
    print(f"\ncore GD: {STEPS} steps, final loss {r.loss[-1]:.3e}")


def test_fig3_orthogonal_gd_torch_compile(benchmark):
    """The same GD, step = θ − lr·∇l_O(θ) with torch.func.grad, compiled whole (fullgraph) with
    torch.compile, one thread. TORCH_STEPS (env FASTATTN_BENCH_TORCH_STEPS, default 10⁵) steps."""
    torch.set_num_threads(1)
    step = torch.compile(lambda th: th - LR * torch.func.grad(torch_loss)(th), fullgraph=True)
    th0 = torch.tensor(_theta0())
    step(th0)                                                               # compile outside timing

    def run() -> torch.Tensor:
        th = th0
        for _ in range(TORCH_STEPS):
            th = step(th)
        return th

    th = benchmark.pedantic(run, rounds=1, iterations=1)
    final = float(torch_loss(th))
    benchmark.extra_info.update(final_loss=final, steps=TORCH_STEPS)
    print(f"\ntorch.compile GD: {TORCH_STEPS} steps, final loss {final:.3e}")


@pytest.mark.parametrize("method", ["rk45", "auto"])
def test_fig3_orthogonal_flow_to_the_gd_loss(benchmark, method):
    """Exact flow, t_end = 2·lr·10⁵ (the GD run's time), stopped at the loss GD reaches."""
    obj = AutoRegressiveObjective("orthogonal", ARDiagConfig(D, H, TMAX))
    gd = integrate(obj, _theta0(), FlowOptions(method="euler", lr=LR, t_end=2 * LR * STEPS,
                                               record_times=(0.0, 2 * LR * STEPS)))
    opts = FlowOptions(method=method, t_end=2 * LR * STEPS * 10, target_loss=float(gd.loss[-1]),
                       rtol=1e-8, atol=1e-12, record_times=(0.0,))
    r = benchmark.pedantic(lambda: integrate(obj, _theta0(), opts), rounds=3, iterations=1)
    benchmark.extra_info.update(status=r.status, n_evals=r.n_evals, t_final=r.t_final)
    print(f"\nflow {method}: status {r.status}, {r.n_evals} evaluations, t {r.t_final:.4g} "
          f"(GD's t {2 * LR * STEPS:g}), loss {obj.loss_grad(r.final_params)[0]:.3e}")


# ---------------------------------------------------------------------------------------------
# Fig. 7: per-epoch time of sampled Adam training of the §6 non-augmented model (spec §3.6), the
# library's NonAugmented + `train` against the authors' non_augmented.py structure (below, plain
# torch, same sizes, same run). An epoch is EPOCH sequences in batches of 1024 (the paper: 2¹⁴,
# i.e. 16 Adam steps); the library draws fresh batches, the authors' loop reads a stored data set.
# FASTATTN_BENCH_SANDER_EPOCH and FASTATTN_BENCH_SANDER_HEADS set the epoch size and H.

NA_D, NA_K, NA_T, NA_BATCH = 5, 2, 50, 1024
NA_EPOCH = int(os.environ.get("FASTATTN_BENCH_SANDER_EPOCH", 4096))
NA_HEADS = int(os.environ.get("FASTATTN_BENCH_SANDER_HEADS", 8))


class AuthorsSelfAttention(torch.nn.Module):
    """non_augmented.py's SelfAttention: Q, K, V `nn.Linear(E, E·H)` shared by tokens and positions,
    scores masked by −1e20, scaled by 1/√E and multiplied by the causal softmax of the positions'
    scores (computed per sequence, as there), heads summed, `fc_out` shared."""

    def __init__(self, E: int, heads: int):
        super().__init__()
        self.E, self.heads = E, heads
        self.values, self.keys, self.queries = (torch.nn.Linear(E, E * heads) for _ in range(3))
        self.fc_out = torch.nn.Linear(E, E)

    def forward(self, x, pos, mask):
        N, T, _ = x.shape

        def split(z):
            return z.reshape(N, T, self.heads, self.E)

        v, k, q = split(self.values(x)), split(self.keys(x)), split(self.queries(x))
        energy = torch.einsum("nqhd,nkhd->nhqk", q, k).masked_fill(mask == 0, float("-1e20"))
        tok = energy / self.E ** 0.5
        kp, qp = split(self.keys(pos)), split(self.queries(pos))
        energy_pos = torch.einsum("nqhd,nkhd->nhqk", qp, kp).masked_fill(mask == 0, float("-1e20"))
        att = tok * torch.softmax(energy_pos / self.E ** 0.5, dim=3)
        return self.fc_out(torch.einsum("nhql,nlhd->nqhd", att, v).sum(2))


class AuthorsTransformer(torch.nn.Module):
    """non_augmented.py's Transformer with one layer: repeat the tokens, the attention above,
    LayerNorm, then `fc_out` E → d (max_length 100 positions)."""

    def __init__(self, d: int, E: int, heads: int):
        super().__init__()
        self.attention = AuthorsSelfAttention(E, heads)
        self.norm1 = torch.nn.LayerNorm(E)
        self.position_embedding = torch.nn.Embedding(100, E)
        self.fc_out = torch.nn.Linear(E, d)
        self.E = E

    def forward(self, src):
        N, T, d = src.shape
        src = src.repeat(1, 1, self.E // d)
        mask = torch.tril(torch.ones(T, T)).expand(N, 1, T, T)
        pos = self.position_embedding(torch.arange(T).expand(N, T))
        return self.fc_out(self.norm1(self.attention(src, pos, mask)))


def _authors_from_library(model) -> AuthorsTransformer:
    """The authors' module holding the library model's parameters (float32)."""
    d, H, k = model.config.dim, model.config.heads, model.config.duplicate
    E = k * d
    net = AuthorsTransformer(d, E, H)
    a = net.attention
    with torch.no_grad():
        for name, lin in (("q", a.queries), ("k", a.keys), ("v", a.values)):
            lin.weight.copy_(getattr(model, f"W{name}").reshape(H * E, E))
            lin.bias.copy_(getattr(model, f"b{name}").reshape(H * E))
        a.fc_out.weight.copy_(model.Wo)
        a.fc_out.bias.copy_(model.bo)
        net.norm1.weight.copy_(model.ln_w)
        net.norm1.bias.copy_(model.ln_b)
        net.position_embedding.weight.copy_(model.pos)
        net.fc_out.weight.copy_(model.fc_w)
        net.fc_out.bias.copy_(model.fc_b)
    return net


def _nonaug(heads: int = NA_HEADS):
    from fastattn.models import NonAugmented
    from fastattn.tasks import AutoRegressive

    task = AutoRegressive(dim=NA_D, context=NA_T, context_dist="haar", representation="real",
                          duplicate=NA_K, s1="unit")
    return NonAugmented(NA_D, heads, duplicate=NA_K, dtype="float32", init_seed=0), task


def test_authors_structure_equals_non_augmented():
    """The authors' structure with the library model's parameters predicts what NonAugmented does
    (positions 2..T; float32)."""
    model, task = _nonaug(heads=3)
    batch = task.sample(16, 0, dtype=torch.float32)
    with torch.no_grad():
        ours = model.predict(batch.tokens)[..., :NA_D]
        theirs = _authors_from_library(model)(batch.states[:, :NA_T])[:, 1:]
    torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)


def test_fig7_epoch_library(benchmark):
    from fastattn.training import TrainConfig, train

    torch.set_num_threads(1)
    model, task = _nonaug()
    cfg = TrainConfig(method="adam", lr=1e-2, steps=NA_EPOCH // NA_BATCH, batch_size=NA_BATCH,
                      n_records=1, n_snapshots=1, progress=False, threads=1)
    traj = benchmark.pedantic(lambda: train(model, task, cfg), rounds=3, iterations=1)
    benchmark.extra_info.update(sequences=NA_EPOCH, heads=NA_HEADS, T=NA_T,
                                final_loss=float(traj.final_loss))


def test_fig7_epoch_authors_structure(benchmark):
    torch.set_num_threads(1)
    model, task = _nonaug()
    net = _authors_from_library(model)
    data = task.fixed_dataset(NA_EPOCH, 0, dtype=torch.float32).states         # [n, T+1, d]
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data[:, :-1], data[:, 1:]),
                                         batch_size=NA_BATCH, shuffle=True)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    criterion = torch.nn.MSELoss()

    def epoch():
        for inputs, targets in loader:
            opt.zero_grad()
            loss = criterion(net(inputs), targets)
            loss.backward()
            opt.step()
        return loss.item()

    last = benchmark.pedantic(epoch, rounds=3, iterations=1)
    benchmark.extra_info.update(sequences=NA_EPOCH, heads=NA_HEADS, T=NA_T, final_mse=last)
# ----------------------------------------------------------------------------- Fig. 5 epochs
# One epoch of Fig. 5's sampled training (spec §4.3: 2¹⁴ sequences in Adam steps of 1024, d = 5,
# T_max = 50, E = 15, float32): the library's AUG-L through `train` (16 online Adam steps of 1024
# fresh sequences, the data drawn inside the step) against the authors' model structure of
# augmented.py, written out below in plain torch, trained one epoch over a fixed 2¹⁴-sequence
# tensor with their DataLoader(shuffle=True) loop (their data is drawn once, outside the epoch).

FIG5_D, FIG5_T, FIG5_BATCH, FIG5_N = 5, 50, 1024, 2 ** 14


class _AuthorsSelfAttention(torch.nn.Module):
    """augmented.py's SelfAttention with heads = 1: linear scores masked to 0, scaled by 1/√E."""

    def __init__(self, E: int) -> None:
        super().__init__()
        self.E = E
        self.values, self.keys, self.queries = (torch.nn.Linear(E, E) for _ in range(3))
        self.fc_out = torch.nn.Linear(E, E)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        n, t, _ = x.shape
        v = self.values(x).reshape(n, t, 1, self.E)
        k = self.keys(x).reshape(n, t, 1, self.E)
        q = self.queries(x).reshape(n, t, 1, self.E)
        energy = torch.einsum("nqhd,nkhd->nhqk", [q, k]).masked_fill(mask == 0, 0.0)
        out = torch.einsum("nhql,nlhd->nqhd", [energy / self.E ** 0.5, v]).sum(2)
        return self.fc_out(out)


class AuthorsAugmented(torch.nn.Module):
    """augmented.py's Transformer(dim_in=3d, embed_size=3d, heads=1): x ← x + LayerNorm(Attn(x))
    per layer (TransformerBlock returns norm1(attention)), then fc_out (no positional term: their
    position embedding is computed and unused)."""

    def __init__(self, E: int, layers: int) -> None:
        super().__init__()
        self.attn = torch.nn.ModuleList(_AuthorsSelfAttention(E) for _ in range(layers))
        self.norm = torch.nn.ModuleList(torch.nn.LayerNorm(E) for _ in range(layers))
        self.fc_out = torch.nn.Linear(E, E)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        mask = torch.tril(torch.ones(t, t)).expand(x.shape[0], 1, t, t)
        for attn, norm in zip(self.attn, self.norm, strict=True):
            x = x + norm(attn(x, mask))
        return self.fc_out(x)


def _fig5_task():
    from fastattn.tasks import AutoRegressive

    return AutoRegressive(dim=FIG5_D, context=FIG5_T, context_dist="haar", representation="real",
                          encoding="augmented", s1="unit")


def _load_authors(lib, layers: int) -> AuthorsAugmented:
    """The authors' module holding the library model's parameters."""
    E = 3 * FIG5_D
    m = AuthorsAugmented(E, layers)
    with torch.no_grad():
        for i in range(layers):
            a = m.attn[i]
            for lin, name in ((a.queries, "q"), (a.keys, "k"), (a.values, "v"), (a.fc_out, "o")):
                lin.weight.copy_(getattr(lib, f"W{name}")[i])
                lin.bias.copy_(getattr(lib, f"b{name}")[i])
            m.norm[i].weight.copy_(lib.ln_w[i])
            m.norm[i].bias.copy_(lib.ln_b[i])
        m.fc_out.weight.copy_(lib.fc_w)
        m.fc_out.bias.copy_(lib.fc_b)
    return m


def test_authors_structure_equals_the_library_model():
    from fastattn.models import ARAugmentedLayers

    lib = ARAugmentedLayers(FIG5_D, 1, 3, init_seed=1, dtype="float32")
    batch = _fig5_task().sample(8, 0, dtype=torch.float32)
    with torch.no_grad():
        theirs = _load_authors(lib, 3)(batch.tokens)
        torch.testing.assert_close(lib.outputs(batch.tokens), theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layers", [1, 6])
def test_fig5_epoch_library(benchmark, layers):
    """One epoch = 16 Adam steps of 1024 fresh sequences through fastattn's trainer."""
    from fastattn.models import ARAugmentedLayers
    from fastattn.training import train

    torch.set_num_threads(1)
    task = _fig5_task()
    steps = FIG5_N // FIG5_BATCH

    def epoch():
        model = ARAugmentedLayers(FIG5_D, 1, layers, init_seed=0, dtype="float32")
        return train(model, task, method="adam", lr=5e-3, steps=steps, batch_size=FIG5_BATCH,
                     n_records=2, n_snapshots=1, progress=False)

    traj = benchmark.pedantic(epoch, rounds=2, iterations=1)
    benchmark.extra_info.update(layers=layers, final_loss=traj.final_loss)


@pytest.mark.parametrize("layers", [1, 6])
def test_fig5_epoch_authors_structure(benchmark, layers):
    """One epoch of augmented.py's loop: DataLoader(2¹⁴ fixed sequences, 1024, shuffle=True),
    nn.MSELoss on outputs[..., :d] vs the next token's s block, Adam."""
    from torch.utils.data import DataLoader, TensorDataset

    torch.set_num_threads(1)
    d, E = FIG5_D, 3 * FIG5_D
    data = _fig5_task().fixed_dataset(FIG5_N, 0, dtype=torch.float32)
    s = data.states[:, :FIG5_T + 1]                               # s_1..s_51
    prev = torch.cat([torch.zeros_like(s[:, :1]), s[:, :-1]], 1)
    tokens = torch.cat([torch.zeros_like(s), s, prev], -1)        # their D_train (N, 51, 3d)
    loader = DataLoader(TensorDataset(tokens[:, :-1], tokens[:, 1:]), batch_size=FIG5_BATCH,
                        shuffle=True)
    criterion = torch.nn.MSELoss()

    def epoch():
        model = AuthorsAugmented(E, layers)
        opt = torch.optim.Adam(model.parameters(), lr=5e-3)
        for inputs, targets in loader:
            opt.zero_grad()
            loss = criterion(model(inputs)[:, :, :d], targets[:, :, d:2 * d])
            loss.backward()
            opt.step()
        return float(loss.detach())

    loss = benchmark.pedantic(epoch, rounds=2, iterations=1)
    benchmark.extra_info.update(layers=layers, final_loss=loss)
