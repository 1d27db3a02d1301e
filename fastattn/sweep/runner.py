"""Computing one sweep run: the flow horizon, theory predictions, measurement, batched integration
and the result row. Depends only on plain data (`RunItem`), so a run gives the same row wherever
it runs; `fastattn.sweep.worker` runs batches of them in a worker.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fastattn import population
from fastattn.analysis import count_conspicuous_plateaus, find_plateaus_and_drops
from fastattn.cli_options import build_run, build_task
from fastattn.theory import zhang2025 as th
from fastattn.training import Trajectory
from fastattn.training.records import environment, to_jsonable
from fastattn.training.trainer import log_grid

#: families with the closed-form population flow
FLOW_FAMILIES = {"merged": "merged", "separate": "separate", "cubic_mlp": "cubic_mlp"}
#: parameters are recorded at every loss record only below this many floats (else init + final)
MAX_RECORDED_FLOATS = 20_000_000


@dataclass(frozen=True)
class Horizon:
    """How far a flow run goes when the sweep does not give --time (see docs/sweeps.md).

    target: stop at L ≤ (1 + converge_rel)·L* (theory's minimum, Eq. 25/46), unless --target-loss.
    t_end: horizon_factor × the theory's time to learn the directions that the target needs,
        Σ_{m<m_target} 1/(λ_{m+1}² v₀) (Eq. 72 summed, v₀ the typical initial value weight). The
        target normally stops the run well before; 10× was too short for 1 seed in 3 at D = 32,
        N = 2048 (its last direction took 17× the estimate), hence 100.
    max_evals: a cap on gradient evaluations plus Hessian-vector products (status "max_evals").
    max_run_seconds: a wall-time budget per flow run (status "max_seconds"; machine-dependent,
        unlike max_evals).
    """

    converge_rel: float = 0.05
    horizon_factor: float = 100.0
    max_evals: int = 5_000_000
    n_records: int | None = None
    max_run_seconds: float | None = None

    def run_settings(self) -> dict[str, Any]:
        """The settings that change a run beyond its spec (converge_rel and horizon_factor only fill
        target_loss and t_end into the spec), where they differ from their defaults: part of the run
        key."""
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        return {k: getattr(self, k) for k in ("max_evals", "n_records", "max_run_seconds")
                if getattr(self, k) != defaults[k]}


@dataclass
class RunItem:
    key: str
    point: dict[str, Any]
    spec: dict[str, dict[str, Any]]
    columns: dict[str, Any]
    batch_key: str | None = None
    theory: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------- theory
def theory_applies(task) -> bool:
    """Eq. 19/25 assume w ~ N(0, I), no label noise and no fixed task (our defaults)."""
    return (task.noise == 0 and task.fixed_task_fraction == 0
            and np.allclose(task.w_second_moment(), np.eye(task.dim)))


def typical_value_weight(model_cfg: dict[str, Any]) -> float:
    """Typical |v_i(0)|: init/√H (paper scheme, App. C.2) or init (code scheme)."""
    s = float(model_cfg.get("init_scale", 1e-2))
    return s / math.sqrt(model_cfg["heads"]) if model_cfg.get("init_scheme", "paper") == "paper" else s


def predictions(task, model_cfg: dict[str, Any], params0: np.ndarray | None = None,
                converge_rel: float = 0.05) -> dict[str, Any]:
    """The theory's numbers for one run (NaN where they do not apply)."""
    nan = float("nan")
    out: dict[str, Any] = {"theory_L0": nan, "theory_Lstar": nan, "theory_levels": None,
                           "theory_m_target": None, "theory_t_estimate": nan,
                           "theory_eq72_duration": nan, "theory_eq54_duration": nan,
                           "theory_n_conspicuous": None, "v0_rms": nan}
    lam = np.asarray(task.eigvals, dtype=float)
    inv_n = task.inv_context_mean()
    name = model_cfg["name"]
    heads = int(model_cfg["heads"])
    v0 = typical_value_weight(model_cfg)
    if params0 is not None and name in FLOW_FAMILIES:
        v0 = float(np.sqrt(np.mean(np.asarray(params0)[:heads] ** 2))) or v0
    out["v0_rms"] = v0
    if theory_applies(task):
        levels = th.fixed_point_losses(lam, inv_n)
        out["theory_L0"] = float(levels[0])
        out["theory_Lstar"] = float(levels[-1])
        out["theory_levels"] = [float(x) for x in levels]
        target = (1 + converge_rel) * levels[-1]
        m = int(np.argmax(levels <= target * (1 - 1e-12))) if np.any(levels <= target) else lam.size
        out["theory_m_target"] = m
    else:
        m = lam.size
    m = max(m, 1)
    if v0 > 0:
        out["theory_t_estimate"] = float(sum(1.0 / (lam[k] ** 2 * v0) for k in range(m)))
        if name in ("separate", "softmax_separate"):
            out["theory_eq72_duration"] = th.plateau_duration(float(lam[0]), v0)
            out["theory_n_conspicuous"] = th.n_conspicuous_plateaus(lam.size, int(model_cfg.get("rank", 1)))
        if name in ("merged", "cubic_mlp", "softmax_merged"):
            s0 = heads * v0 ** 2            # ‖w_2(0)‖² = ‖v(0)‖²
            if 0 < s0 < 1:
                out["theory_eq54_duration"] = th.merged_plateau_time(lam, s0)
    return out


def plan_flow(spec: dict[str, dict[str, Any]], horizon: Horizon) -> tuple[dict, dict[str, Any]]:
    """Fill the flow horizon (t_end, target) into a resolved spec; returns
    (spec, theory predictions from the init scale). Cheap: builds the task without rotation."""
    spec = {k: dict(v) for k, v in spec.items()}
    tr = spec["train"]
    task = build_task(dict(spec["task"], rotate=False))
    model = dict(spec["model"])
    if model.get("name") in ("merged", "cubic_mlp", "softmax_merged"):
        model["rank"] = 1
    theory = predictions(task, model, converge_rel=horizon.converge_rel)
    if tr.get("method", "flow") != "flow":
        return spec, theory
    if tr.get("target_loss") is None and math.isfinite(theory["theory_Lstar"]):
        tr["target_loss"] = (1 + horizon.converge_rel) * theory["theory_Lstar"]
    if tr.get("t_end") is None:
        est = theory["theory_t_estimate"]
        if not math.isfinite(est):
            raise ValueError("flow run without --time and no theory estimate (init scale 0?); give --time")
        tr["t_end"] = float(f"{horizon.horizon_factor * est:.6g}")
    return spec, theory


# ------------------------------------------------------------------------------ measuring
def measure(traj, theory: dict[str, Any]) -> dict[str, Any]:
    """Plateaus, drops and levels of a trajectory, matched to the Eq. 19 levels."""
    t, y = np.asarray(traj.time, float), np.asarray(traj.loss, float)
    ok = (t > 0) & np.isfinite(y) & (y > 0)
    out: dict[str, Any] = {"final_loss": traj.final_loss,
                           "final_time": float(t[-1]) if t.size else float("nan"),
                           "n_plateaus": 0, "n_drops": 0, "n_conspicuous": 0,
                           "plateau_levels": [], "plateau_starts": [], "plateau_ends": [],
                           "drop_times": [], "first_drop_time": float("nan"),
                           "level_rel_error_max": float("nan"), "n_levels_matched": 0}
    if ok.sum() >= 10:
        plateaus, drops = find_plateaus_and_drops(t[ok], y[ok])
        out |= {"n_plateaus": len(plateaus), "n_drops": len(drops),
                "n_conspicuous": count_conspicuous_plateaus(plateaus),
                "plateau_levels": [p.level for p in plateaus],
                "plateau_starts": [p.start for p in plateaus],
                "plateau_ends": [p.end for p in plateaus],
                "drop_times": [d.time for d in drops],
                "first_drop_time": drops[0].time if drops else float("nan")}
        levels = theory.get("theory_levels")
        if levels and plateaus:
            errs = []
            for p in plateaus:
                rel = min(abs(p.level - lv) / lv for lv in levels if lv > 0)
                if rel < 0.1:
                    errs.append(rel)
            out["n_levels_matched"] = len(errs)
            out["level_rel_error_max"] = max(errs) if errs else float("nan")
    lstar = theory.get("theory_Lstar", float("nan"))
    out["excess_loss_rel"] = (out["final_loss"] - lstar) / lstar if lstar and math.isfinite(lstar) \
        else float("nan")
    return out


# ------------------------------------------------------------------------------ running
def build(item: RunItem):
    """(task, model, TrainConfig) of a run, without a progress bar."""
    spec = {k: dict(v) for k, v in item.spec.items()}
    spec["train"]["progress"] = False
    return build_run(spec)


def flow_trajectories(items: list[RunItem], horizon: Horizon) -> tuple[list, np.ndarray, list]:
    """Integrate K compatible flow runs in one `population.integrate` call; returns
    ([(trajectory, model, cost columns)] per run, initial parameters `[K, P]`, tasks)."""
    built = [build(it) for it in items]
    tasks = [b[0] for b in built]
    models = [b[1] for b in built]
    cfg = built[0][2]
    fam = models[0].FAMILY
    if fam is None:
        raise ValueError(f"method='flow' needs a closed-form model; {models[0].config.name} has none")
    dims = models[0].dims
    p0 = np.stack([m.to_flat() for m in models])
    times = log_grid(cfg.t_end, horizon.n_records or cfg.n_records)
    snaps = log_grid(cfg.t_end, cfg.n_snapshots)
    record_params = p0.size * (times.size + snaps.size) <= MAX_RECORDED_FLOATS
    rec = np.union1d(times, snaps) if record_params else times
    kw = {"method": cfg.integrator, "t_end": cfg.t_end, "rtol": cfg.rtol, "atol": cfg.atol}
    if cfg.integrator == "rk4":
        kw["dt"] = cfg.dt
    max_evals = horizon.max_evals
    start = time.perf_counter()
    res = population.integrate(fam, p0 if len(items) > 1 else p0[0], dims,
                               [t.moments() for t in tasks] if len(items) > 1 else tasks[0].moments(),
                               record_times=rec, record_params=record_params,
                               target_loss=cfg.target_loss, grad_tol=cfg.grad_tol,
                               max_evals=max_evals, max_seconds=horizon.max_run_seconds, **kw)
    wall = time.perf_counter() - start
    meta = environment()
    out = []
    K = len(items)
    for k in range(K):
        if K == 1:
            t, loss = np.asarray(res.times), np.asarray(res.loss)
            prm = res.params
            fin, status, n_evals = res.final_params, res.status, int(res.n_evals)
        else:
            reached = ~np.isnan(res.loss[k])
            n = int(np.argmin(reached)) if not reached.all() else reached.size
            t, loss = np.asarray(res.times)[:n], np.asarray(res.loss[k])[:n]
            prm = None if res.params is None else res.params[k, :n]
            fin, status, n_evals = res.final_params[k], res.status[k], int(res.n_evals[k])
        t_fin = float(res.t_final if K == 1 else res.t_final[k])
        if t.size == 0 or t_fin > t[-1]:       # stopped between records: add the final state
            moments = tasks[k].moments()
            t = np.append(t, t_fin)
            loss = np.append(loss, population.loss_and_grad(fam, fin, dims, moments)[0])
            if prm is not None:
                prm = np.vstack([prm, fin[None]])
        keep = np.isin(t, times) | (t == t[-1])
        if record_params and prm is not None:
            snap = np.isin(t, snaps) | (t == t[-1])
            s_time, params = t[snap], np.asarray(prm)[snap]
            if not np.array_equal(params[-1], fin):
                s_time, params = np.append(s_time, t[-1]), np.vstack([params, fin])
        else:
            s_time, params = np.array([0.0, t[-1]]), np.stack([p0[k], fin])
        models[k].load_flat(fin)
        traj = Trajectory(time=t[keep], step=np.full(int(keep.sum()), -1), loss=loss[keep],
                          snapshot_time=s_time, params=params, status=status, n_evals=n_evals,
                          wall_time=wall / K)
        traj.config = {"task": to_jsonable(tasks[k]), "model": to_jsonable(models[k].config),
                       "train": to_jsonable(dataclasses.replace(cfg, progress=None))}
        traj.meta = meta
        counts = {c: int(getattr(res, c) if K == 1 else getattr(res, c)[k])
                  for c in ("n_steps", "n_rejected", "n_hvp")}
        out.append((traj, models[k], {"batch_size": K, "batch_wall_time": wall,
                                      "max_evals": max_evals, **counts}))
    return out, p0, tasks


def result_row(item: RunItem, traj, p0: np.ndarray | None, task, extra: dict[str, Any],
               horizon: Horizon) -> dict[str, Any]:
    """The result row of a finished run: config columns, horizon, cost, theory and measurements."""
    theory = predictions(task, item.spec["model"] | {"rank": traj.config["model"]["rank"]}, p0,
                         horizon.converge_rel)
    row = {"key": item.key, **item.columns,
           "t_end": item.spec["train"].get("t_end"),
           "target_loss": item.spec["train"].get("target_loss"),
           "integrator_used": item.spec["train"].get("integrator"),
           "status": traj.status, "error": None, "n_evals": traj.n_evals,
           "wall_time": traj.wall_time, **extra, **theory, **measure(traj, theory)}
    return row
