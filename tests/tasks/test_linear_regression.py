import numpy as np
import pytest
import torch

from fastattn.tasks import LinearRegression, split_tokens
from helpers import assert_mc_agrees, mc_mean_and_se, random_spd


def test_token_layout_query_last_with_zero_label(rng):
    task = LinearRegression(3, context=5, spectrum=rng.uniform(0.1, 1, 3), noise=0.1)
    b = task.sample(4, step=0)
    assert b.tokens.shape == (4, 6, 4)
    assert torch.equal(b.tokens[:, -1, -1], torch.zeros(4, dtype=b.tokens.dtype))
    x, y, x_q = split_tokens(b.tokens)
    assert torch.equal(x, b.x) and torch.equal(y, b.y) and torch.equal(x_q, b.x_q)
    # noiseless labels are linear in the task vector
    clean = LinearRegression(3, context=5).sample(4, 0)
    torch.testing.assert_close(clean.y, torch.einsum("bnd,bd->bn", clean.x, clean.w))
    torch.testing.assert_close(clean.y_q, torch.einsum("bd,bd->b", clean.x_q, clean.w))


def test_batch_is_a_pure_function_of_seed_and_step():
    task = LinearRegression(4, context=7, spectrum=[0.4, 0.3, 0.2, 0.1], rotate=True, data_seed=3)
    a, b = task.sample(8, step=11), task.sample(8, step=11)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.w, b.w)
    assert not torch.equal(a.tokens, task.sample(8, step=12).tokens)
    other = LinearRegression(4, context=7, spectrum=[0.4, 0.3, 0.2, 0.1], rotate=True, data_seed=4)
    assert not torch.equal(a.tokens, other.sample(8, step=11).tokens)
    # the rotation of Λ is drawn from its own seed, not from the batch stream
    np.testing.assert_array_equal(task.cov_matrix, other.cov_matrix)


@pytest.mark.parametrize("context", [5, [1, 2, 3, 8]])
def test_sampled_moments_match_exact_moments(rng, context):
    d = 3
    task = LinearRegression(d, context=context, cov=random_spd(rng, d),
                            w_mean=rng.standard_normal(d) * 0.3, noise=0.2,
                            data_seed=int(rng.integers(1000)))
    b = task.sample(200_000, step=0)
    n = b.lengths.double()
    cov_hat = torch.einsum("bnd,bne->bde", b.x, b.x) / n[:, None, None]
    sq = (cov_hat @ cov_hat).reshape(len(b), -1).numpy()
    mean, se = mc_mean_and_se(sq)
    assert_mc_agrees(mean, se, task.expected_cov_hat_sq().ravel(), atol=1e-12)
    mean, se = mc_mean_and_se(cov_hat.reshape(len(b), -1).numpy())
    assert_mc_agrees(mean, se, task.expected_cov_hat().ravel(), atol=1e-12)
    mean, se = mc_mean_and_se((1 / n).numpy()[:, None])
    assert_mc_agrees(mean[0], se[0], task.inv_context_mean(), atol=1e-15)
    ww = torch.einsum("bd,be->bde", b.w, b.w).reshape(len(b), -1).numpy()
    mean, se = mc_mean_and_se(ww)
    assert_mc_agrees(mean, se, task.w_second_moment().ravel())
    # label noise: E y_q² = tr(S_w Λ) + σ²
    mean, se = mc_mean_and_se((b.y_q**2).numpy()[:, None])
    exact = np.trace(task.w_second_moment() @ task.cov_matrix) + task.noise
    assert_mc_agrees(mean[0], se[0], exact)
    # and on every context label: E (y_n − x_nᵀw)² = σ² over the filled rows (its weight in the
    # loss is too small for the loss's own Monte-Carlo check to see it dropped)
    resid = (b.y - torch.einsum("bnd,bd->bn", b.x, b.w)) ** 2
    filled = torch.arange(b.y.shape[1])[None] < b.lengths[:, None]
    mean, se = mc_mean_and_se((resid.sum(1) / n).numpy()[:, None])
    assert_mc_agrees(mean[0], se[0], task.noise)
    assert torch.equal(resid[~filled], torch.zeros_like(resid[~filled]))


def test_fixed_task_fraction_and_test_sets():
    task = LinearRegression(4, context=6, fixed_task_fraction=0.4, fixed_task_seed=2)
    data = task.fixed_dataset(50, seed=1)
    fixed = torch.from_numpy(task.fixed_task)
    shares = (data.w == fixed).all(-1)
    assert int(shares.sum()) == 20
    assert np.isclose(np.linalg.norm(task.fixed_task), 2.0)
    icl = task.in_context_test_set(30, seed=5)
    assert not (icl.w == fixed).all(-1).any()
    iwl = task.in_weight_test_set(30, seed=5)
    torch.testing.assert_close(iwl.y_q, iwl.x_q @ fixed)
    assert not torch.allclose(iwl.y, torch.einsum("bnd,d->bn", iwl.x, fixed))


def test_whitened_dataset_has_exact_task_moments():
    task = LinearRegression(3, context=4)
    w = task.fixed_dataset(64, seed=0, whiten=True).w
    torch.testing.assert_close(w.mean(0), torch.zeros(3, dtype=w.dtype), atol=1e-12, rtol=0)
    torch.testing.assert_close(w.T @ w / 64, torch.eye(3, dtype=w.dtype), atol=1e-12, rtol=0)


def test_random_context_lengths_pad_before_the_query():
    task = LinearRegression(2, context=[1, 4], data_seed=0)
    b = task.sample(64, 0)
    assert set(b.lengths.tolist()) == {1, 4}
    short = b.lengths == 1
    assert torch.all(b.x[short, 1:] == 0) and torch.all(b.y[short, 1:] == 0)
    torch.testing.assert_close(b.beta[short], b.y[short, :1] * b.x[short, 0])


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"dim": 0}, "dim"),
        ({"dim": 2, "context": 0}, "context"),
        ({"dim": 2, "cov": [[1.0, 0.5], [0.0, 1.0]]}, "symmetric"),
        ({"dim": 2, "cov": [[1.0, 2.0], [2.0, 1.0]]}, "positive semi-definite"),
        ({"dim": 2, "cov": [[1.0, float("nan")], [float("nan"), 1.0]]}, "NaN"),
        ({"dim": 2, "cov": np.eye(3)}, "cov"),
        ({"dim": 2, "spectrum": [1.0]}, "spectrum"),
        ({"dim": 2, "spectrum": [1.0, -1.0]}, "spectrum"),
        ({"dim": 2, "noise": -1.0}, "noise"),
        ({"dim": 2, "fixed_task_fraction": 1.5}, "fixed_task_fraction"),
        ({"dim": 2, "context": [3, 4], "context_probs": [0.5, 0.6]}, "context_probs"),
    ],
)
def test_bad_input_names_the_argument(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        LinearRegression(**kwargs)


def test_wrong_token_shape_is_rejected():
    with pytest.raises(ValueError, match=r"tokens must be \[B, N\+1, D\+1\]"):
        split_tokens(torch.zeros(3, 4))
    bad = torch.ones(2, 3, 4)
    with pytest.raises(ValueError, match="query's y slot"):
        split_tokens(bad)
    with pytest.raises(ValueError, match="D\\+1 = 3"):
        split_tokens(torch.zeros(2, 3, 4), dim=2)
