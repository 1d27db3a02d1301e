"""The standard attention-only transformer (Musat et al. 2025 Eq. 17–19, spec §9.1): the forward
pass against the literal column-convention equations, the paper's matrices in and out, an exact
induction head solving the token task, and sampled training through `fastattn.training.train`."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from fastattn.analysis.induction_circuit import progress_measures
from fastattn.models.standard_transformer import StandardConfig, StandardTransformer
from fastattn.tasks import InductionTokens
from fastattn.training import train
from helpers import induction_head


def literal_logits(w, tokens, positions):
    """Eq. 17–19 for one sequence, column convention: H0 = T X_T + P X_P, S = (W_K H)ᵀ (W_Q H),
    σ column-wise over keys i ≤ query j, H_l = H_{l−1} + W_O W_V H_{l−1} σ(S); W_o H_2 at the end."""
    H = w.T[:, tokens] + w.P[:, positions]                     # [D, L]
    L = H.shape[1]
    causal = torch.ones(L, L, dtype=torch.bool).triu()         # [key i, query j]: i ≤ j
    for WQ, WK, WV, WO in ((w.WQ1, w.WK1, w.WV1, w.WO1), (w.WQ2, w.WK2, w.WV2, w.WO2)):
        S = (WK @ H).T @ (WQ @ H)
        A = torch.softmax(S.masked_fill(~causal, float("-inf")), dim=0)
        H = H + WO @ WV @ H @ A
    return w.Wo @ H[:, -1]


@pytest.mark.parametrize("attn_scale", [False, True])
def test_forward_is_eq_17_to_19(attn_scale):
    model = StandardTransformer(vocab=10, block=12, d_model=8, attn_scale=attn_scale, init_std=0.7,
                                dtype="float64", init_seed=3)
    task = InductionTokens(10, 12, 3, data_seed=1)
    b = task.sample(5, step=0)
    out = model(b.tokens, b.positions)
    w = model.circuit_weights()
    want = torch.stack([literal_logits(w, t, p) for t, p in zip(b.tokens, b.positions, strict=True)])
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    assert out.shape == (5, 10)


def test_circuit_weights_round_trip():
    a = StandardTransformer(vocab=6, block=9, d_model=5, attn_scale=True, dtype="float64", init_seed=1)
    b = StandardTransformer(vocab=6, block=9, d_model=5, attn_scale=True, dtype="float64", init_seed=2)
    b.load_circuit(a.circuit_weights())
    torch.testing.assert_close(torch.from_numpy(b.to_flat()), torch.from_numpy(a.to_flat()),
                               rtol=1e-15, atol=0)
    c = StandardTransformer(vocab=6, block=9, d_model=5, dtype="float64")
    c.load_flat(a.to_flat())
    assert (c.to_flat() == a.to_flat()).all() and c.flat_size() == 2 * 6 * 5 + 9 * 5 + 8 * 25
    with pytest.raises(ValueError, match="do not fit"):
        StandardTransformer(vocab=6, block=9, d_model=4).load_circuit(a.circuit_weights())


def test_an_exact_induction_head_solves_the_token_task():
    """The hand-built head (tests/helpers.py; its self penalty lets the first item lose to its
    label) loaded into the model: loss → 0, accuracy 1, and the
    progress measures read back from the model are the construction's (c(N_P − 1), b N_T, g N_T)."""
    N_T, N_P = 8, 12
    w = induction_head(N_T, N_P, c=40.0, b=40.0, g=40.0, self_penalty=40.0)
    model = StandardTransformer(vocab=N_T, block=N_P, d_model=4 * (N_T + N_P), dtype="float64")
    model.load_circuit(w)
    task = InductionTokens(N_T, N_P, 3, data_seed=2)
    batch = task.sample(256, step=0)
    assert float(task.loss(model, batch).detach()) < 1e-6 and task.accuracy(model, batch) == 1.0
    m = progress_measures(model.circuit_weights())
    assert m == pytest.approx({"alpha3": 40.0 * (N_P - 1), "beta2": 40.0 * N_T, "gamma3": 40.0 * N_T})
    # without layer 2's match (b = 0) it attends evenly to the 2K − 1 tokens other than the query
    # token: the loss is the "context_but_query" baseline ln(2K − 1) (+ 3e^{-g/5} at g = 40)
    model.load_circuit(induction_head(N_T, N_P, c=40.0, b=0.0, g=40.0, self_penalty=40.0))
    base = task.baselines()["context_but_query"]
    assert float(task.loss(model, batch).detach()) == pytest.approx(base, abs=1e-3)


def test_adam_training_learns_and_weight_decay_is_adamw():
    """`train(..., method="adam")` on the token task: the loss falls; with weight_decay it is
    torch's AdamW on the same batches step for step."""
    task = InductionTokens(8, 8, 2, data_seed=0)
    cfg = StandardConfig(8, 8, 16, init_seed=0)
    model = StandardTransformer(cfg)
    traj = train(model, task, method="adam", lr=1e-2, steps=150, batch_size=64, weight_decay=0.01,
                 n_snapshots=3, progress=False)
    assert traj.status == "steps" and traj.loss[-1] < 0.6 * traj.loss[0]
    ref = StandardTransformer(cfg)
    opt = torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.01)
    for k in range(150):
        opt.zero_grad()
        task.loss(ref, task.sample(64, k)).backward()
        opt.step()
    torch.testing.assert_close(torch.from_numpy(model.to_flat()), torch.from_numpy(ref.to_flat()),
                               rtol=0, atol=0)
    assert traj.config["model"]["kind"] == "standard_transformer"
    assert traj.config["train"]["weight_decay"] == 0.01


def test_bad_input_is_named():
    model = StandardTransformer(vocab=8, block=8, d_model=4)
    with pytest.raises(ValueError, match=r"positions must lie in 0..block-1 = 0..7"):
        model(torch.zeros(1, 3, dtype=torch.long), torch.tensor([[6, 7, 8]]))
    with pytest.raises(ValueError, match="both be \\[B, L\\]"):
        model(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="weight_decay is for method='adam'"):
        train(model, InductionTokens(8, 8, 2), method="sgd", lr=0.1, steps=1, weight_decay=0.1)
    with pytest.raises(ValueError, match="d_model"):
        dataclasses.replace(StandardConfig(), d_model=0)
