"""The token-transformer trainer: AdamW with warm-up as torch's, log-spaced records of metrics and
per-head factors, the stop rule."""

import numpy as np
import torch

from fastattn.analysis.heads import extract_ov, extract_qk
from fastattn.models.transformer import Transformer
from fastattn.tasks.tokens import RepeatedTokens
from fastattn.training.tokens import TokenTrainConfig, train_tokens

TASK = RepeatedTokens(vocab=8, length=8, eval_size=8)


def _model():
    return Transformer(vocab=8, n_ctx=8, d_model=8, n_layers=2, n_heads=2, dtype="float64")


def test_trainer_equals_a_plain_adamw_loop():
    cfg = TokenTrainConfig(steps=12, lr=3e-2, weight_decay=0.5, betas=(0.9, 0.95), warmup=4,
                           n_records=5)
    model = _model()
    run = train_tokens(model, TASK.loss, TASK.batches(4), TASK.evaluator(), cfg)
    ref = _model()
    opt = torch.optim.AdamW(ref.parameters(), lr=3e-2, weight_decay=0.5, betas=(0.9, 0.95))
    for k in range(12):
        for group in opt.param_groups:
            group["lr"] = 3e-2 * min(1.0, (k + 1) / 4)
        opt.zero_grad()
        TASK.loss(ref, TASK.sample(4, k)).backward()
        opt.step()
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-12, atol=1e-14)
    assert run.status == "steps" and run.step[0] == 0 and run.step[-1] == 12
    assert np.all(np.diff(run.step) > 0) and set(run.metrics) >= {"loss", "icl_score"}
    assert run.factors["W_Q"].shape == (len(run.step), 2, 2, 8, 4)
    np.testing.assert_allclose(run.matrices("ov")[-1], extract_ov(model), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(run.matrices("qk")[-1], extract_qk(model), rtol=1e-6, atol=1e-7)


def test_stop_rule_and_patience():
    cfg = TokenTrainConfig(steps=200, lr=1e-2, n_records=40, stop=("loss", -1.0), patience=2)
    run = train_tokens(_model(), TASK.loss, TASK.batches(4), TASK.evaluator(), cfg)
    assert run.status == "stop" and len(run.step) == 3          # met at step 0, then 2 more records
