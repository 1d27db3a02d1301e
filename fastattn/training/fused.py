"""The fused He 2025 engine behind `train()`: Adam on `MultiHeadSoftmax` over the fast stream, R runs
at once in the C++ core (`fastattn._core.he_adam_steps`, fastattn.training.batched).

`fast_stream_reasons` says whether a (model, task, config) fits it; `train_fused` trains R fitting
runs that share every option but the learning rate and returns one `Trajectory` per run, recorded
as the sampled trainer records (loss of batch k at the state after k steps, log-spaced records and
snapshots, the final state last). The steps are the ones `train_batched(stream="fast",
backend="fused")` takes: a run's parameters and losses are bit-identical to that call's
(tests/training/test_fused.py), and independent of the other runs in the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from fastattn.population.stops import Stop
from fastattn.training import flow
from fastattn.training.checkpoint import Checkpointer, Checkpointing
from fastattn.training.config import TrainConfig, diverged
from fastattn.training.trajectory import Trajectory

if TYPE_CHECKING:
    from fastattn.models.base import ICLModel
    from fastattn.tasks.base import Task
    from fastattn.training.callbacks import Emitter

#: what the record's `backend["engine"]` says for this engine (`device`: on the GPU)
ENGINE = "fused C++ He Adam step (he_adam_steps)"
ENGINE_GPU = "fused He Adam step, Triton kernels and CUDA graphs (fastattn.ops.he_adam_steps)"
# most steps per call into the C++ core: progress is shown (and Ctrl-C seen) between calls
_SEGMENT = 2000


def fast_stream_reasons(model: ICLModel, task: Task, cfg: TrainConfig) -> list[str]:
    """Every reason the fused step cannot train this run of a `multihead_softmax` model on
    `linear_regression` with Adam (empty: it can); the engine registry (fastattn.training.engines)
    declares those kinds and the method, and checks them first."""
    from fastattn._core_loader import core
    from fastattn.training.batched import FastLaw

    reasons = []
    if cfg.weight_decay:
        reasons.append("weight_decay > 0 (the fused step is Adam without weight decay)")
    if model.config.activation != "exp":
        reasons.append(f"activation={model.config.activation!r} (the fused step is softmax "
                       "attention, activation 'exp')")
    if model.config.torch_dtype not in (torch.float32, torch.float64):
        reasons.append(f"dtype {model.config.dtype} (float32 or float64)")
    if len(task.context_lengths) != 1:
        reasons.append("several context lengths (the fused step takes one fixed context length)")
    else:
        try:
            FastLaw.of(task)
        except ValueError as exc:
            reasons.append(str(exc))
    if cfg.dataset_size is not None:
        reasons.append("dataset_size (a fixed data set, not the online fast stream)")
    if cfg.loss not in (None, "query"):
        reasons.append(f"loss={cfg.loss!r} (the fused step trains the query loss)")
    if cfg.target_loss is not None:
        reasons.append("target_loss (checked every step by the torch trainer, only at records by "
                       "the fused step)")
    defaults = TrainConfig(method="adam", lr=1.0, steps=1)
    reasons += [f"{name} (the fused step is plain Adam, checked only by the torch trainer)"
                for name in ("betas", "warmup", "target_metric")
                if getattr(cfg, name) != getattr(defaults, name)]
    if cfg.record_every or cfg.snapshot_every or not cfg.snapshot_params:
        reasons.append("record_every / snapshot_every / snapshot_params (the fused step "
                       "snapshots the parameters, log-spaced)")
    if core is None or not hasattr(core, "he_adam_steps"):
        reasons.append("the C++ core lacks he_adam_steps; run pip install . again")
    return reasons


def _stops(cfg: TrainConfig, evaluate: bool) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Record steps, snapshot steps, and the steps between calls into the core: the snapshots,
    every _SEGMENT steps, and the records too when test or population losses are evaluated there
    (the batch losses at records come from inside the calls)."""
    rec = flow.record_steps(cfg.steps, cfg.n_records)
    snap = flow.record_steps(cfg.steps, cfg.n_snapshots)
    stops = (set(snap.tolist()) | set(range(0, cfg.steps, _SEGMENT)) | {cfg.steps}
             | (set(rec.tolist()) if evaluate else set()))
    return rec, snap, sorted(stops)


def _steps(theta: np.ndarray, m: np.ndarray, v: np.ndarray, args: dict[str, Any],
           device: torch.device | None, step0: int, n_steps: int, record_at: np.ndarray
           ) -> np.ndarray:
    """``n_steps`` fused steps in place on the host's buffers `[R, P]`; the batch losses at the
    relative steps ``record_at`` `[R, len(record_at)]`. ``device`` None: the C++ core; else the
    Triton kernels there (the buffers copied to it and back: `[R, P]` is small against the
    steps)."""
    from fastattn._core_loader import core

    if device is None:
        return core.he_adam_steps(theta, m, v, **args, step0=step0, n_steps=n_steps,
                                  record_at=record_at)
    from fastattn.ops import he_adam_steps

    bufs = [torch.from_numpy(b).to(device) for b in (theta, m, v)]
    law = {k: torch.from_numpy(np.asarray(args[k]).astype(np.int64 if k == "seeds" else None))
           .to(device) for k in ("seeds", "lr", "x_factor", "w_factor", "noise_std")}
    losses = he_adam_steps(*bufs, **law, heads=args["heads"], context=args["context"],
                           batch=args["batch"], step0=step0, n_steps=n_steps,
                           betas=(args["beta1"], args["beta2"]), eps=args["eps"],
                           backend="triton")
    for buf, new in zip((theta, m, v), bufs, strict=True):
        buf[...] = new.cpu().numpy()
    return losses[:, torch.from_numpy(record_at).to(device)].double().cpu().numpy()


def train_fused(models: Sequence[ICLModel], tasks: Sequence[Task], cfg: TrainConfig,
                lrs: Sequence[float] | None = None, checkpoint: Checkpointing | None = None,
                identity: dict[str, Any] | None = None, progress: bool = False,
                emitter: Emitter | None = None, device: torch.device | None = None
                ) -> list[Trajectory]:
    """Train models[r] on tasks[r] with the fused step (every run must fit: `fast_stream_reasons`),
    learning rate lrs[r] (default cfg.lr) and cfg's other options; the models are updated in place.

    `checkpoint` (one run only): checkpoint between calls into the core and continue from one bit
    for bit; `identity` is the run config the checkpoint must match. `emitter` (one run only): gets
    the run's records after each call into the core (live logging). `device`: run the steps on
    that CUDA device with the Triton kernels (`ENGINE_GPU`; a CPU device runs them under
    TRITON_INTERPRET=1, for tests) instead of the C++ core. Returns one `Trajectory` per run
    (config, meta, wall_time and backend are the caller's)."""
    from tqdm.auto import tqdm

    from fastattn.training.batched import BatchedState, FastLaw

    if (checkpoint is not None or emitter) and len(models) != 1:
        raise ValueError("checkpoints and callbacks are per run; train batched runs without them")
    r = len(models)
    laws = [FastLaw.of(t) for t in tasks]
    args = dict(seeds=np.array([law.seed for law in laws], dtype=np.uint64),
                lr=np.asarray(lrs if lrs is not None else [cfg.lr] * r, dtype=np.float64),
                x_factor=np.stack([law.x_factor for law in laws]),
                w_factor=np.stack([law.w_factor for law in laws]),
                noise_std=np.array([law.noise_std for law in laws]), heads=models[0].config.heads,
                dim=tasks[0].dim, context=tasks[0].max_context, batch=cfg.batch_size, beta1=0.9,
                beta2=0.999, eps=1e-8, threads=cfg.threads or 1)
    state = BatchedState.of(models)
    theta, m, v = (b.numpy() for b in (state.theta, state.m, state.v))
    exact = [flow.population_loss(t, mod) for t, mod in zip(tasks, models, strict=True)]
    tests = [t.test_sets(cfg.test_size, cfg.eval_seed, dtype=models[0].config.torch_dtype)
             if cfg.test_size else {} for t in tasks]
    rec, snap, stops = _stops(cfg, evaluate=any(exact) or any(tests))
    loss_name = cfg.loss or "query"
    runs = [{"step": [], "loss": [], "tests": {k: [] for k in tests[i]}
             | ({"population": []} if exact[i] else {}), "snap_step": [], "params": [],
             "status": Stop.STEPS, "done": None, "diverged_at": None} for i in range(r)]
    done, n_evals = 0, 0
    ckpt = Checkpointer(checkpoint, identity or {})
    saved = ckpt.load()
    if saved is not None:
        for buf, name in ((theta, "theta"), (m, "m"), (v, "v")):
            buf[...] = saved[name]
        done, n_evals, runs = saved["step"], saved["n_evals"], saved["runs"]
        if emitter:     # the interrupted process delivered the records it had
            emitter.sent = len(runs[0]["step"])

    def loss_now(i: int, step: int) -> float:
        """Run i's loss of batch `step` at its current state (one step on copies)."""
        out = _steps(theta[i:i + 1].copy(), m[i:i + 1].copy(), v[i:i + 1].copy(),
                     {**args, **_one(args, i)}, device, step, 1, np.array([0]))
        return float(out[0, 0])

    def evaluate(i: int) -> None:
        """Run i's test and population losses at its current state (step `done`)."""
        if not runs[i]["tests"]:
            return
        model = models[i]
        state.load_into(models)
        with torch.no_grad():
            for name, test in tests[i].items():
                runs[i]["tests"][name].append(float(tasks[i].loss(model, test, loss_name)))
        if exact[i]:
            runs[i]["tests"]["population"].append(exact[i](model.to_flat()))

    live = [i for i in range(r) if runs[i]["done"] is None]
    bar = tqdm(total=cfg.steps, initial=done, disable=not progress, unit="step",
               desc=f"adam {models[0].kind} (fused)")
    status, calling = Stop.STEPS, False
    before = (done, theta.copy(), m.copy(), v.copy())
    try:
        for stop in (s for s in stops if s > done or (s == 0 and done == 0)):
            if stop > done:
                # the states at the start of this call and of the previous one: a diverged run
                # goes back to the last state before the first diverged loss
                previous, before = before, (done, theta.copy(), m.copy(), v.copy())
                calling = True
                at = rec[(rec >= done) & (rec < stop)]
                losses = _steps(theta, m, v, args, device, done, stop - done, at - done)
                n_evals += stop - done
                for i in list(live):
                    run = runs[i]
                    initial = run["loss"][0] if run["loss"] else losses[i][0]
                    bad = [j for j, value in enumerate(losses[i]) if diverged(value, initial)]
                    if not bad:
                        run["step"] += at.tolist()
                        run["loss"] += [float(x) for x in losses[i]]
                        continue
                    back = before if at[bad[0]] > done else previous
                    run["step"] += at[:bad[0]].tolist()
                    run["loss"] += [float(x) for x in losses[i][:bad[0]]]
                    while run["step"] and run["step"][-1] > back[0]:
                        run["step"].pop()
                        run["loss"].pop()
                    while run["snap_step"] and run["snap_step"][-1] >= back[0]:
                        run["snap_step"].pop()
                        run["params"].pop()
                    run["snap_step"].append(back[0])
                    run["params"].append(back[1][i].astype(np.float64))
                    run["status"], run["done"], run["diverged_at"] = Stop.DIVERGED, back[0], int(
                        at[bad[0]])
                    live.remove(i)
                    for buf, old in zip((theta, m, v), back[1:], strict=True):
                        buf[i] = old[i]
                bar.update(stop - done)
                done, calling = stop, False
                if live:
                    bar.set_postfix(loss=f"{runs[live[0]]['loss'][-1]:.4g}")
            for i in live:
                if stop in rec and stop < cfg.steps:
                    evaluate(i)
                if stop in snap:
                    runs[i]["snap_step"].append(stop)
                    runs[i]["params"].append(theta[i].astype(np.float64))
            if emitter:
                run = runs[0]
                emitter.emit(2 * float(args["lr"][0]) * np.asarray(run["step"]), run["step"],
                             run["loss"], run["tests"])
            if ckpt.due(done):
                ckpt.save({"step": done, "theta": theta.copy(), "m": m.copy(), "v": v.copy(),
                           "n_evals": n_evals, "runs": runs})
            if not live:
                break
    except KeyboardInterrupt:
        status = Stop.INTERRUPTED
        if calling:          # the call may have stepped the buffers: back to its start
            for buf, old in zip((theta, m, v), before[1:], strict=True):
                buf[...] = old
    finally:
        bar.close()
    if status != Stop.INTERRUPTED:
        ckpt.remove()
    state.load_into(models)
    trajs = []
    for i, run in enumerate(runs):
        end = run["done"] if run["done"] is not None else done
        for values in run["tests"].values():     # a diverged run's tests past its last record
            del values[len(run["step"]):]
        if not run["step"] or run["step"][-1] != end:       # the final state's loss and tests
            run["step"].append(end)
            run["loss"].append(loss_now(i, end))
            evaluate(i)
        if not run["snap_step"] or run["snap_step"][-1] != end:
            run["snap_step"].append(end)
            run["params"].append(theta[i].astype(np.float64))
        steps = np.asarray(run["step"], dtype=int)
        lr = float(args["lr"][i])
        trajs.append(Trajectory(
            time=2 * lr * steps, step=steps, loss=np.asarray(run["loss"]),
            test_loss={k: np.asarray(x) for k, x in run["tests"].items()},
            snapshot_time=2 * lr * np.asarray(run["snap_step"], dtype=float),
            params=np.stack(run["params"]), n_evals=n_evals + 1,
            status=status if status == Stop.INTERRUPTED else run["status"],
            diverged_at=run["diverged_at"]))
    return trajs


def _one(args: dict[str, Any], i: int) -> dict[str, Any]:
    """The per-run arguments of run i alone."""
    return {k: args[k][i:i + 1] for k in ("seeds", "lr", "x_factor", "w_factor", "noise_std")}
