"""Sweeps: grid expansion, CLI parsing, resume after interruption, failed runs, executors."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import threading
import time

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from fastattn.cli import main  # noqa: E402
from fastattn.sweep import (  # noqa: E402
    Grid,
    Horizon,
    hooks,
    load_config,
    plan,
    read_table,
    run_sweep,
    runner,
    store,
)
from fastattn.sweep.cli import add_parsers  # noqa: E402
from fastattn.sweep.grid import grid_from_args, parse_axis, resolve, run_key  # noqa: E402

# tiny, fast flow runs: D ∈ {2, 3}, stiff integrator (P ≤ 200), a few hundred records
TINY = {"model": "separate", "dim": [2, 3], "context": [8, 32], "heads": "D", "rank": 1,
        "init_scale": 1e-2, "spectrum": "linear", "n_records": 120}
DETERMINISTIC = ["key", "dim", "context", "heads", "seed", "status", "final_loss", "n_evals", "n_hvp",
                 "n_steps", "n_drops", "theory_Lstar", "t_end", "target_loss"]


def _parser():
    p = argparse.ArgumentParser(prog="fastattn")
    add_parsers(p.add_subparsers(dest="command", required=True))
    return p


# ------------------------------------------------------------------------------ grid
def test_grid_expansion_is_the_cartesian_product_with_seeds():
    g = Grid({"dim": [4, 8], "context": [16, 64], "heads": 8, "model": "separate"}, seeds=2)
    pts = g.points()
    assert len(g) == len(pts) == 8
    assert g.shape == {"dim": 2, "context": 2, "seed": 2}
    assert {(p["dim"], p["context"], p["seed"]) for p in pts} == \
        {(d, n, s) for d in (4, 8) for n in (16, 64) for s in (0, 1)}
    spec = resolve(pts[-1])
    assert spec["model"]["init_seed"] == spec["task"]["rotation_seed"] == spec["task"]["data_seed"] == 1
    assert spec["train"]["eval_seed"] == 1_000_001
    with pytest.raises(ValueError, match="do not also sweep"):
        Grid({"init_seed": [0, 1]}, seeds=2)


def test_heads_and_init_may_be_expressions_of_D():
    spec = resolve({"dim": 16, "heads": "2*D", "init_scale": "1e-2*sqrt(D)"})
    assert spec["model"]["heads"] == 32
    assert spec["model"]["init_scale"] == pytest.approx(0.04)
    assert resolve({"dim": 16, "heads": "D/4"})["model"]["heads"] == 4
    with pytest.raises(ValueError, match="positive integer"):
        resolve({"dim": 6, "heads": "D/4"})
    with pytest.raises(ValueError):
        parse_axis("heads", "__import__('os')")


def test_inner_commas_are_slashes_on_the_command_line():
    assert parse_axis("spectrum", "0.4/0.3/0.2/0.1,linear") == ["0.4,0.3,0.2,0.1", "linear"]
    assert parse_axis("context", "8/16,32,1..4") == [[8, 16], 32, [1, 2, 3, 4]]
    assert parse_axis("init_scale", "1e-2,1e-3") == [1e-2, 1e-3]


def test_cli_parsing_builds_the_grid_and_defaults():
    args = _parser().parse_args(["sweep", "--model", "separate", "--dim", "4,8", "--context", "16,64",
                                 "--heads", "D", "--rank", "1", "--init-scale", "1e-2", "--seeds", "0..1",
                                 "--out", "x"])
    g = grid_from_args(args)
    assert len(g) == 8 and g.axes["heads"] == ["D"] and g.axes["dim"] == [4, 8]
    with pytest.raises(SystemExit):
        _parser().parse_args(["sweep", "--dim", "4,x", "--out", "x"])


@pytest.mark.parametrize("text", ["0..4", "0,3,7", "7", "0"])
def test_seeds_are_one_list_grammar_in_train_and_sweep(text, tmp_path, capsys):
    """`--seeds` is the list `train` reads, in a sweep too (LIST_GRAMMAR), from the command line
    and from a sweep file (as text or a TOML list, which `fastattn sweep FILE` honours: it once
    dropped the file's seeds). The one exception, documented: a bare K >= 1 is still the sweep's
    old count 0..K-1, with a deprecation line."""
    from fastattn.configs.options import run_list

    want = run_list(text)                       # train's
    if text == "7":
        with pytest.warns(FutureWarning, match=r"^--seeds 7 \(a count\) is deprecated; write "
                          r"--seeds 0\.\.6; a bare number will be one seed, as in train"):
            assert list(Grid({}, text).seed_values()) == list(range(7)) != want
        return
    assert list(Grid({}, text).seed_values()) == want
    path = tmp_path / "s.toml"
    for seeds in (repr(text).replace("'", '"'), str(want)):
        path.write_text(f'[sweep]\nseeds = {seeds}\n[grid]\nmodel = "separate"\ndim = 2\n'
                        'heads = 2\nt_end = 1.0\n')
        assert list(load_config(str(path))[0].seed_values()) == want
        assert main(["sweep", str(path), "--dry-run", "--out", str(tmp_path / "o")]) == 0
        out = capsys.readouterr().out
        assert out.endswith(f"{len(want)} runs\n") and f"'seed': {want[-1]}}}" in out


def test_config_file(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[sweep]\nseeds = 2\nworkers = 1\n[grid]\nmodel = "separate"\ndim = [4, 8]\n'
                    'context = [[8, 16], 32]\nspectrum = ["0.4,0.3,0.2,0.1"]\nheads = "D"\n')
    with pytest.warns(FutureWarning, match=r"^--seeds 2 \(a count\) is deprecated"):
        g, settings = load_config(str(path))        # the old count, in a file too
    assert settings == {"workers": 1}
    assert g.axes["context"] == [[8, 16], 32] and g.axes["spectrum"] == ["0.4,0.3,0.2,0.1"]
    assert len(g) == 8


def test_flow_horizon_from_theory():
    items = plan(Grid(TINY), Horizon(converge_rel=0.05, horizon_factor=10))
    assert len(items) == 4 and len({it.key for it in items}) == 4
    for it in items:
        tr = it.spec["train"]
        assert tr["integrator"] == "auto"            # the population module's RK45/Rodas4 switch
        assert tr["target_loss"] == pytest.approx(1.05 * it.theory["theory_Lstar"])
        assert tr["t_end"] == pytest.approx(10 * it.theory["theory_t_estimate"], rel=1e-5)


# ------------------------------------------------------------------------------ running
def test_sweep_writes_a_complete_table(tmp_path):
    df = run_sweep(TINY, tmp_path, seeds=2, workers=0, progress=False)
    assert len(df) == 8 and (df["status"] == "target_loss").all(), df[["status", "error"]]
    assert (df["final_loss"] <= 1.05 * df["theory_Lstar"] * (1 + 1e-9)).all()
    assert (df["n_plateaus"] >= 1).all() and (df["n_drops"] >= 1).any()
    assert all(len(v) == d + 1 for v, d in zip(df["theory_levels"], df["dim"], strict=True))
    table = pd.read_parquet(tmp_path / "results.parquet")
    assert sorted(table["key"]) == sorted(df["key"])
    for rec in df["record"]:
        assert (tmp_path / rec).exists()


def test_resume_never_recomputes_finished_runs(tmp_path):
    first = run_sweep(TINY, tmp_path, seeds=2, workers=0, progress=False, max_runs=3)
    assert len(first) == 3
    mtimes = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "runs").iterdir()}
    # an interrupted write leaves only a temporary file behind, never a partial row
    (tmp_path / "runs" / ".deadbeef.json.123.tmp").write_text('{"key": "dead')
    seen = []
    full = run_sweep(TINY, tmp_path, seeds=2, workers=0, progress=False, on_row=seen.append)
    assert len(seen) == 5 and not {r["key"] for r in seen} & set(first["key"])
    assert all((tmp_path / "runs" / n).stat().st_mtime_ns == t for n, t in mtimes.items())
    assert len(full) == 8 and full["key"].is_unique
    again = run_sweep(TINY, tmp_path, seeds=2, workers=0, progress=False, on_row=seen.append)
    assert len(seen) == 5
    pd.testing.assert_frame_equal(again, full)


def test_run_keys_hash_only_options_that_differ_from_their_defaults():
    spec = resolve({"dim": 8, "init_scale": 1e-2})
    assert run_key(spec) == run_key(resolve({"dim": 8}))                   # init 1e-2 is the default
    assert run_key(resolve({"dim": 8, "noise": 1})) == run_key(resolve({"dim": 8, "noise": 1.0}))
    assert run_key(resolve({"dim": 8, "noise": 0.1})) != run_key(spec)
    assert run_key(spec, {"max_evals": 10}) != run_key(spec)
    assert Horizon().run_settings() == {} and Horizon(max_evals=10).run_settings() == {"max_evals": 10}


def test_a_new_option_with_a_default_resumes_every_run(tmp_path, monkeypatch):
    """A sweep directory still resumes after an option (here a model field with a default) is
    added to a family's card: no key changes, nothing is recomputed. The option table is read when
    asked, so the new option is a sweep axis at once."""
    import dataclasses

    from fastattn.configs import MODEL_CARDS, Field

    first = run_sweep(TINY, tmp_path, seeds=2, workers=0, progress=False)
    mtimes = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "runs").iterdir()}
    card = MODEL_CARDS["separate"]
    monkeypatch.setitem(MODEL_CARDS, "separate", dataclasses.replace(
        card, fields=(*card.fields, Field("new_knob", float, "a new option", 0.0))))
    items = plan(Grid(TINY, 2), Horizon())
    assert all(it.spec["model"]["new_knob"] == 0.0 for it in items)
    assert {it.key for it in items} == set(first["key"])
    seen = []
    again = run_sweep(TINY, tmp_path, seeds=2, workers=0, progress=False, on_row=seen.append)
    assert seen == []
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "runs").iterdir()} == mtimes
    pd.testing.assert_frame_equal(again, first)
    changed = plan(Grid(dict(TINY, new_knob=0.5), 2), Horizon())
    assert not {it.key for it in changed} & set(first["key"])


def test_a_directory_with_old_keys_is_refused_with_a_clear_message(tmp_path):
    run_sweep(TINY, tmp_path, workers=0, progress=False, max_runs=1)
    doc = json.loads((tmp_path / "sweep.json").read_text())
    del doc["key_format"]                                   # as written before key format 2
    (tmp_path / "sweep.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"key format 1.*new --out directory"):
        run_sweep(TINY, tmp_path, workers=0, progress=False)
    assert len(read_table(tmp_path)) == 1


def test_the_runner_takes_the_theory_from_the_pairs_hooks(tmp_path, monkeypatch):
    """Another paper's hooks for (linear_regression, separate): its predictions, horizon and
    measurements are what the rows hold; the runner knows no formula of its own."""
    toy = hooks.Hooks(
        "toy", frozenset({("linear_regression", "separate")}),
        predictions=lambda task, model, p0, horizon: {"theory_toy_time": 10.0 * task.dim},
        flow_horizon=lambda theory, horizon: (theory["theory_toy_time"], None),
        measurements=lambda traj, theory, measured: {"toy_loss_ratio": measured["final_loss"] / traj.loss[0]})
    monkeypatch.setattr(runner, "hooks_for", lambda task, model: toy)
    df = run_sweep(dict(TINY, context=8), tmp_path, workers=0, progress=False)
    assert (df["t_end"] == 10.0 * df["dim"]).all() and df["target_loss"].isna().all()
    assert (df["status"] == "t_end").all() and (df["final_time"] == df["t_end"]).all()
    assert (df["toy_loss_ratio"] < 1).all()
    assert not [c for c in df if c.startswith(("theory_L", "theory_eq", "level_", "excess_"))]


def test_a_pair_without_hooks_runs_with_time_and_no_theory(tmp_path, monkeypatch):
    """Without a theory's horizon a flow runs to the preset's time (as `train` does), or to
    --t-end; a preset without a time needs --t-end."""
    import dataclasses

    from fastattn.configs import MODEL_CARDS

    monkeypatch.setattr(runner, "hooks_for", lambda task, model: None)
    (item,) = plan(Grid(dict(TINY, dim=2, context=8)))
    assert item.spec["train"]["t_end"] == 1e5 and item.theory == {}     # Fig. 3's preset
    card = MODEL_CARDS["separate"]
    (preset,) = card.presets["linear_regression"]
    untimed = dataclasses.replace(preset, train={"method": "flow"})
    monkeypatch.setitem(MODEL_CARDS, "separate", dataclasses.replace(
        card, presets={"linear_regression": (untimed,)}))
    with pytest.raises(ValueError, match=r"no theory for \(task, model\) = \(linear_regression, "
                                         r"separate\); give --t-end"):
        run_sweep(dict(TINY, dim=2, context=8), tmp_path / "a", workers=0, progress=False)
    assert not (tmp_path / "a").exists()
    df = run_sweep(dict(TINY, dim=2, context=8, t_end=50.0), tmp_path / "b", workers=0, progress=False)
    assert df["status"].iloc[0] == "t_end" and df["n_plateaus"].iloc[0] >= 1
    assert not [c for c in df if c.startswith("theory_")]


def _kill_workers_running(keys: set[str], out, stop: threading.Event) -> None:
    """Kill (SIGKILL) every worker process whose in-flight marker names one of `keys`."""
    killed = set()
    while not stop.is_set():
        for marker in (out / ".inflight").glob("*"):
            try:
                pid = int(marker.read_text()) if marker.name in keys else 0
            except (OSError, ValueError):      # gone, or not written yet
                continue
            if pid and pid not in killed:
                killed.add(pid)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def _sweep_killing(keys: set[str], out, **kw):
    stop = threading.Event()
    killer = threading.Thread(target=_kill_workers_running, args=(keys, out, stop), daemon=True)
    killer.start()
    try:
        return run_sweep(**kw, out=out, progress=False)
    finally:
        stop.set()
        killer.join()


def test_resume_after_a_killed_worker(tmp_path):
    """Worker processes killed mid-run (as by the OOM killer): those runs are retried once alone,
    then recorded as failed; the others finish; a resume with retry_failed reruns only those."""
    # the rk4 runs would take minutes (1e8 steps): they are running when they are killed
    grid = dict(TINY, dim=[2, 3], context=8, integrator=["auto", "rk4"], dt=1e-4, t_end=1e4)
    victims = {it.key for it in plan(Grid(grid), Horizon()) if it.spec["train"]["integrator"] == "rk4"}
    df = _sweep_killing(victims, tmp_path, grid=grid, workers=2)
    assert len(df) == 4
    bad = df[df["status"] == "error"]
    assert set(bad["key"]) == victims and bad["error"].str.contains("worker died").all()
    assert df[~df["key"].isin(victims)]["status"].isin(["t_end", "target_loss"]).all()
    seen = []
    _sweep_killing(victims, tmp_path, grid=grid, workers=2, retry_failed=True, on_row=seen.append)
    assert {r["key"] for r in seen} == victims


def test_failed_runs_are_recorded_and_do_not_stop_the_sweep(tmp_path, monkeypatch):
    """A run that fails while running (here: its integration raises at D = 3) is a row with its
    error; the other runs finish."""
    from fastattn.sweep import runner

    real = runner.population_runs

    def failing(models, tasks, *a, **kw):
        if tasks[0].dim == 3:
            raise FloatingPointError("integrator blew up")
        return real(models, tasks, *a, **kw)

    monkeypatch.setattr(runner, "population_runs", failing)
    df = run_sweep(TINY, tmp_path, workers=0, progress=False)
    bad = df[df["status"] == "error"]
    assert len(df) == 4 and sorted(bad["dim"]) == [3, 3]
    assert bad["error"].str.startswith("FloatingPointError: integrator blew up").all()
    assert (df[df["status"] != "error"]["final_loss"] > 0).all()


def test_batched_integration_equals_single_runs(tmp_path):
    a = run_sweep(TINY, tmp_path / "single", seeds=3, workers=0, progress=False)
    b = run_sweep(TINY, tmp_path / "batched", seeds=3, workers=0, progress=False, batch=3)
    assert (b["runs_in_batch"] == 3).all()
    cols = ["key", "status", "n_evals", "t_end"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    np.testing.assert_allclose(a["final_loss"], b["final_loss"], rtol=1e-10)


def test_local_process_pool_equals_in_process(tmp_path):
    a = run_sweep(TINY, tmp_path / "a", seeds=2, workers=0, progress=False)
    b = run_sweep(TINY, tmp_path / "b", seeds=2, workers=2, progress=False)
    pd.testing.assert_frame_equal(a[DETERMINISTIC], b[DETERMINISTIC])


def test_cli_sweep_and_plot(tmp_path, capsys, monkeypatch):
    """A sweep over D = 2, 3 and N = 8, 32 and its plots, each passing the figure checklist (its
    log axes ticked at the swept values, without overlapping labels)."""
    import figure_checklist as checklist

    from fastattn import plots

    drawn, save = [], plots.save
    monkeypatch.setattr(plots, "save", lambda fig, path, *a: drawn.append(fig) or save(fig, path, *a))
    p = _parser()
    out = str(tmp_path / "s")
    args = p.parse_args(["sweep", "--model", "separate", "--dim", "2,3", "--context", "8,32",
                         "--heads", "D", "--init-scale", "1e-2,3e-2", "--n-records", "120", "--workers", "0",
                         "--out", out, "--quiet"])
    assert args.func(args) == 0
    assert "8 runs" in capsys.readouterr().out
    assert len(read_table(out)) == 8
    for kind in ("duration", "levels", "heatmap"):
        args = p.parse_args(["plot", out, "--kind", kind])
        assert args.func(args) == 0
        assert (tmp_path / "s" / f"plot_{kind}.png").stat().st_size > 5_000
        fig = drawn[-1]
        renderer = checklist.rendered(fig)
        found = (checklist.layout(fig, renderer) + checklist.crowded_ticks(fig, renderer)
                 + checklist.axis_labels(fig) + checklist.font_sizes(fig))
        assert not found, (kind, found)
    swept = {"duration": ["2", "3"], "levels": ["8", "32"]}
    for fig, kind in zip(drawn, ("duration", "levels"), strict=False):
        ticks = [t.get_text() for t in fig.axes[1].get_xticklabels() if t.get_text()]
        assert ticks == swept[kind], (kind, ticks)
    doc = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert doc["n_runs"] == 8


def test_table_is_rebuilt_from_run_files(tmp_path):
    run_sweep(TINY, tmp_path, workers=0, progress=False)
    (tmp_path / store.TABLE).unlink()
    assert len(read_table(tmp_path)) == 4
