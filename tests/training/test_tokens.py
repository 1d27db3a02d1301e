"""`fastattn.train` on the token tasks (the one trainer of token transformers): AdamW with β and a
linear warm-up equals a plain torch loop written here, the held-out metrics and the parameter
snapshots at the records equal the loop's, the target-metric stop with patience, the record's round
trip and its backend."""

import dataclasses

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from fastattn.models import build_model, config_from_dict
from fastattn.models.transformer import Transformer
from fastattn.tasks import LinearRegression
from fastattn.tasks.tokens import ModularAddition, RepeatedTokens
from fastattn.training import Checkpointing, TrainConfig, Trajectory, rebuild_run, train

TASK = RepeatedTokens(vocab=8, length=8)
CFG = TrainConfig(method="adam", lr=3e-2, steps=12, weight_decay=0.5, betas=(0.9, 0.95), warmup=4,
                  batch_size=4, test_size=8, eval_seed=1, n_records=5, n_snapshots=5)


def _model():
    return Transformer(vocab=8, n_ctx=8, d_model=8, n_layers=2, n_heads=2, dtype="float64")


def _icl(model, tokens, period):
    """Next-token losses on the predictable (target index ≥ period) and the other positions."""
    with torch.no_grad():
        losses = F.cross_entropy(model(tokens[:, :-1]).transpose(1, 2), tokens[:, 1:], reduction="none")
    late = torch.arange(1, tokens.shape[1])[None] >= period[:, None]
    return {"loss": float(losses.mean()), "icl_score": float(losses[late].mean() - losses[~late].mean())}


def _adamw_loop(model, cfg, batch, records, measure):
    """cfg.steps AdamW steps with the lr η·min(1, (k+1)/warmup) at step k; `measure(model)` at the
    record steps; returns (metrics by name, flat parameters at the records)."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                            betas=cfg.betas)
    metrics, flats = {}, []
    for k in range(cfg.steps + 1):
        if k in records:
            for name, v in measure(model).items():
                metrics.setdefault(name, []).append(v)
            flats.append(torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy())
        if k == cfg.steps:
            break
        for group in opt.param_groups:
            group["lr"] = cfg.lr * min(1.0, (k + 1) / cfg.warmup)
        opt.zero_grad()
        batch(model, k).backward()
        opt.step()
    return metrics, np.stack(flats)


def test_train_on_periodic_tokens_equals_a_plain_adamw_loop():
    model = _model()
    traj = train(model, TASK, CFG)
    held_out = TASK.test_sets(8, 1)["held_out"]

    def loss(m, k):
        tokens = TASK.sample(4, k).tokens
        return F.cross_entropy(m(tokens[:, :-1]).transpose(1, 2), tokens[:, 1:])

    ref = _model()
    metrics, flats = _adamw_loop(ref, CFG, loss, set(traj.step.tolist()),
                                 lambda m: _icl(m, *held_out))
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-12, atol=1e-14)
    assert traj.status == "steps" and traj.step[0] == 0 and traj.step[-1] == 12
    np.testing.assert_allclose(traj.params, flats, rtol=1e-12, atol=1e-14)   # a snapshot per record
    for name in ("loss", "icl_score"):
        np.testing.assert_allclose(traj.metrics[name], metrics[name], rtol=1e-12, atol=1e-14)
    assert set(traj.metrics) == {"loss", "unpredictable_loss", "predictable_loss", "icl_score"}
    assert traj.test_loss == {}           # the task's metrics hold its held-out losses
    assert traj.backend["engine"] == "torch" and traj.backend["sampler"] == "tokens"


def test_full_batch_modular_addition_equals_a_plain_adamw_loop():
    task = ModularAddition(p=7, train_frac=0.5)
    cfg = dataclasses.replace(CFG, batch_size=task.n_train, test_size=49, betas=(0.9, 0.98))
    config = dict(vocab=8, vocab_out=7, n_ctx=3, d_model=8, n_heads=2, d_mlp=16, dtype="float64")
    model = Transformer(**config)
    traj = train(model, task, cfg)
    split = task.split()

    def measure(m):
        with torch.no_grad():
            return {f"{name}_{what}": float(F.cross_entropy(logits, labels)) if what == "loss"
                    else float((logits.argmax(-1) == labels).double().mean())
                    for name, (tokens, labels) in split.items()
                    for logits in [m(tokens)[:, -1]] for what in ("loss", "acc")}

    ref = Transformer(**config)
    metrics, _ = _adamw_loop(ref, cfg, lambda m, k: F.cross_entropy(m(split["train"].tokens)[:, -1],
                                                                     split["train"].labels),
                             set(traj.step.tolist()), measure)
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-12, atol=1e-14)
    for name, values in metrics.items():
        np.testing.assert_allclose(traj.metrics[name], values, rtol=1e-12, atol=1e-14)


def test_target_metric_stops_after_patience_records():
    cfg = dataclasses.replace(CFG, steps=200, n_records=40, n_snapshots=40,
                              target_metric=("loss", -1.0), patience=2)
    traj = train(_model(), TASK, cfg)
    assert traj.status == "target_metric" and len(traj.step) == 3    # met at step 0, 2 more records
    assert len(traj.params) == 3
    with pytest.raises(ValueError, match="'acc' is not a metric of task 'repeated_tokens'"):
        train(_model(), TASK, dataclasses.replace(cfg, target_metric=("acc", 0.5)))
    with pytest.raises(ValueError, match=r"target_metric=.* needs a task with held-out metrics"):
        train(build_model(config_from_dict({"kind": "separate", "dim": 2, "heads": 1})),
              LinearRegression(2, context=4), dataclasses.replace(cfg, test_size=4))
    with pytest.raises(ValueError, match=r"target_metric .* needs method='sgd' or 'adam' and test_size"):
        dataclasses.replace(cfg, test_size=0)
    with pytest.raises(ValueError, match="warmup is for sampled training"):
        TrainConfig(method="flow", t_end=1.0, warmup=3)
    with pytest.raises(ValueError, match=r"betas must be two numbers in \[0, 1\)"):
        dataclasses.replace(CFG, betas=(0.9, 1.0))


def test_the_record_round_trips_and_rebuilds_the_run(tmp_path):
    traj = train(_model(), TASK, CFG)
    again = Trajectory.load(traj.save(tmp_path / "run"))
    assert set(again.metrics) == set(traj.metrics)
    for name, values in traj.metrics.items():
        np.testing.assert_array_equal(again.metrics[name], values)
    task, model, cfg = rebuild_run(again.config)
    assert task == TASK and model.config == _model().config
    assert cfg == dataclasses.replace(CFG, sampler="tokens")         # the resolved sampler
    assert again.backend["engine"] == "torch" and "fallback" in again.backend
    # a float32 model's snapshots are stored as float32, losslessly, and read back as float64
    small = dataclasses.replace(CFG, steps=3)
    traj32 = train(Transformer(vocab=8, n_ctx=8, d_model=8, n_heads=2), TASK, small)
    path = traj32.save(tmp_path / "run32")
    assert np.load(path.with_suffix(".npz"))["params"].dtype == np.float32
    back = Trajectory.load(path)
    assert back.params.dtype == np.float64 and np.array_equal(back.params, traj32.params)
    assert np.load(traj.save(tmp_path / "run64").with_suffix(".npz"))["params"].dtype == np.float64


def test_a_token_run_resumed_inside_its_warm_up_is_bit_identical(tmp_path, monkeypatch):
    """The checkpoint holds the warm-up schedule and the metrics: a run cut at step 2 of a 4-step
    warm-up continues to the numbers of the uncut run."""
    cfg = dataclasses.replace(CFG, target_metric=("icl_score", 5.0))         # never met
    full = train(_model(), TASK, cfg)
    real, interrupted = RepeatedTokens.sample, []

    def sample(self, batch_size, step=0, **k):
        if step == 2 and not interrupted:
            interrupted.append(step)
            raise KeyboardInterrupt
        return real(self, batch_size, step, **k)

    monkeypatch.setattr(RepeatedTokens, "sample", sample)
    path = tmp_path / "run.ckpt"
    cut = train(_model(), TASK, cfg, checkpoint=Checkpointing(path, every=0))
    assert cut.status == "interrupted" and path.exists()
    monkeypatch.undo()
    resumed = train(_model(), TASK, cfg, checkpoint=Checkpointing(path, resume=True))
    np.testing.assert_array_equal(resumed.params, full.params)
    for name, values in full.metrics.items():
        np.testing.assert_array_equal(resumed.metrics[name], values, err_msg=name)
    assert resumed.status == full.status == "steps"
