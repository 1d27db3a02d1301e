"""Multi-task in-context regression (He et al. 2025 spec §2.3): supports, shared β, noise, seeds."""

import numpy as np
import pytest
import torch

from fastattn.tasks import MultiTaskRegression, build_task
from fastattn.tasks.multitask_regression import PAPER_SUPPORTS
from helpers import assert_mc_agrees


def test_responses_read_their_supports_with_noise_sigma2():
    task = MultiTaskRegression(6, PAPER_SUPPORTS, context=5, noise=0.3)
    b = task.sample(20_000, 0)
    assert b.x.shape == (20_000, 5, 6) and b.y.shape == (20_000, 5, 2) and b.y_q.shape == (20_000, 2)
    # β is zero off each task's support and, shared, equal on the overlap {3, 4}
    assert torch.all(b.beta[:, 0, 4:] == 0) and torch.all(b.beta[:, 1, :2] == 0)
    torch.testing.assert_close(b.beta[:, 0, 2:4], b.beta[:, 1, 2:4])
    resid = b.y - torch.einsum("bld,bnd->bln", b.x, b.beta)
    resid_q = b.y_q - torch.einsum("bd,bnd->bn", b.x_q, b.beta)
    for r in (resid, resid_q):
        r = r.reshape(-1).numpy()
        se = np.sqrt(2 / len(r)) * 0.3                      # sd of a Gaussian variance estimate
        assert_mc_agrees(r.var(), se, 0.3)
    # β ~ N(0, I/d) on the supports
    beta = b.beta[:, 0, :4].numpy()
    np.testing.assert_allclose(beta.var(0), 1 / 6, rtol=0.05)


def test_code_variant_independent_betas_and_noise_free_query():
    task = MultiTaskRegression(6, PAPER_SUPPORTS, context=48, noise=0.4, shared_beta=False,
                               beta_var=1.0, query_noise=False)
    b = task.sample(4000, 3)
    assert b.x.shape[1] == 48
    torch.testing.assert_close(b.y_q, torch.einsum("bd,bnd->bn", b.x_q, b.beta))
    overlap = b.beta[:, :, 2:4].numpy()
    assert abs(np.corrcoef(overlap[:, 0, 0], overlap[:, 1, 0])[0, 1]) < 0.1
    assert abs(overlap.var() - 1.0) < 0.1


def test_batches_are_pure_functions_of_seed_and_step_and_records_rebuild():
    task = MultiTaskRegression(6, data_seed=2)
    torch.testing.assert_close(task.sample(4, 7).y, task.sample(4, 7).y)
    assert not torch.equal(task.sample(4, 7).y, task.sample(4, 8).y)
    import dataclasses

    again = build_task({"kind": task.kind, **dataclasses.asdict(task)})
    torch.testing.assert_close(again.sample(4, 7).y, task.sample(4, 7).y)
    assert task.with_context(100).sample(2, 0).x.shape[1] == 100


@pytest.mark.parametrize("supports, match", [(((0, 6),), "supports\\[0\\]"), (((1, 1),), "distinct"),
                                             ((), "at least one")])
def test_bad_supports_name_the_argument(supports, match):
    with pytest.raises(ValueError, match=match):
        MultiTaskRegression(6, supports)
