"""A long run says its expected time before it starts (issue 41): the rate is measured on the run
itself (setup cancelled), `fastattn train` prints one line above `LONG_RUN` with a shorter --steps
run, and `fastattn info --task T --model M` states it from the card's declared rate.

Cost: about 2 CPU seconds (Sander's exact GD on `autoregressive diag`, 10⁻⁵ s a step, is the one
run trained for real; the other rates are faked or declared)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastattn.cli import main
from fastattn.configs import MODEL_CARDS, pairs
from fastattn.info import REFERENCE, default_run
from fastattn.training import expected
from fastattn.training.expected import (
    LONG_RUN,
    MIN_PROBED_STEPS,
    PROBE_STEPS,
    duration,
    estimate,
    expected_line,
    short_steps,
)

CHEAP = ["--task", "autoregressive", "--model", "diag"]       # exact GD, 10⁻⁵ s a step


def test_the_rate_is_the_difference_of_two_probes_so_setup_cancels(monkeypatch):
    """A fake trainer on a fake clock: each run costs 7 s of setup plus 0.25 s a step. The rate is
    0.25 exactly (t(2p) − t(p)) / p; a rate of one probe over its steps would include setup."""
    now = [0.0]
    seen = []

    def fake_train(model, task, config):
        seen.append(config)
        now[0] += 7.0 + 0.25 * config.steps

    monkeypatch.setattr("fastattn.training.trainer.train", fake_train)
    from fastattn.training.build import build_default

    task, model, config = build_default("autoregressive", "diag", train={"target_loss": 1.0})
    assert expected.seconds_per_step(model, task, config, clock=lambda: now[0]) == 0.25
    assert [c.steps for c in seen] == [1, PROBE_STEPS, 2 * PROBE_STEPS]
    assert all(c.target_loss is None and c.n_records == 1 for c in seen)   # no early stop


def test_a_measured_rate_is_positive_and_leaves_the_model_unchanged():
    from fastattn.training.build import build_default

    task, model, config = build_default("autoregressive", "diag")
    before = model.to_flat().copy()
    assert expected.seconds_per_step(model, task, config) >= 0
    assert (model.to_flat() == before).all()
    with pytest.raises(ValueError, match="method='flow' has no step count"):
        expected.seconds_per_step(model, task, config.__class__(method="flow", t_end=1.0))


@pytest.mark.parametrize("seconds, text", [(0.2, "< 1 s"), (40.4, "40 s"), (14 * 60 + 10, "14 min"),
                                           (2 * 3600 + 58 * 60, "2 h 58 min")])
def test_duration(seconds, text):
    assert duration(seconds) == text


def test_the_shorter_run_offered_is_the_largest_round_count_that_fits():
    rounds = sorted(m * 10 ** k for m in (1, 2, 5) for k in range(8))
    for rate, steps in ((0.267, 40_000), (0.01, 500_000), (4.2, 32_000), (700.0, 10)):
        short = short_steps(rate, steps)
        fitting = [n for n in rounds if n <= steps and rate * n <= LONG_RUN]
        assert short == (fitting[-1] if fitting else 1)


def test_the_line_appears_only_above_the_threshold():
    assert expected_line(LONG_RUN / 1000, 1000, "x") is None
    line = expected_line(0.267, 40_000, "measured")
    assert line.startswith(estimate(0.267, 40_000, "measured"))
    assert f"--steps {short_steps(0.267, 40_000)} runs in ≈ " in line


def _train(tmp_path: Path, capsys, steps: int) -> list[str]:
    assert main(["train", *CHEAP, "--steps", str(steps), "--out", str(tmp_path)]) == 0
    return capsys.readouterr().out.splitlines()


def test_train_prints_the_expected_time_before_a_long_run(monkeypatch, tmp_path, capsys):
    """With a measured rate of 1 s a step, 1000 steps (17 min) say so, before the run's summary."""
    monkeypatch.setattr(expected, "seconds_per_step", lambda *a, **k: 1.0)
    out = _train(tmp_path, capsys, MIN_PROBED_STEPS)
    line = expected_line(1.0, MIN_PROBED_STEPS,
                         f"on this machine, measured over {PROBE_STEPS} steps")
    assert out[0] == f"fastattn train: {line}"
    assert out[1].startswith("gd: status=")


def test_train_is_silent_below_the_threshold_and_does_not_probe_short_runs(monkeypatch, tmp_path,
                                                                           capsys):
    monkeypatch.setattr(expected, "seconds_per_step", lambda *a, **k: LONG_RUN / MIN_PROBED_STEPS)
    assert not any("expected ≈" in x for x in _train(tmp_path, capsys, MIN_PROBED_STEPS))

    def never(*a, **k):
        raise AssertionError("a run of fewer than MIN_PROBED_STEPS steps was probed")

    monkeypatch.setattr(expected, "seconds_per_step", never)
    _train(tmp_path / "short", capsys, MIN_PROBED_STEPS - 1)


def test_every_stepped_pair_declares_its_rate():
    missing = [(t, m) for t, ms in pairs().items() for m in ms
               if default_run(t, m)["steps"] is not None
               and t not in MODEL_CARDS[m].seconds_per_step]
    assert not missing


def test_the_docs_table_quotes_every_declared_rate():
    table = (Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md").read_text()
    for t, ms in pairs().items():
        for m in ms:
            rate = MODEL_CARDS[m].seconds_per_step.get(t)
            if rate is not None:
                assert f"| {t} | {m} | {default_run(t, m)['steps']} | {rate:g} |" in table, (t, m)


def test_info_states_a_pair_s_expected_time_and_offers_a_shorter_run(capsys):
    task, model = "modular_addition", "transformer"
    run = default_run(task, model)
    assert main(["info", "--task", task, "--model", model]) == 0
    out = capsys.readouterr().out
    assert "  " + expected_line(run["seconds_per_step"], run["steps"], REFERENCE) in out
    assert main(["info"]) == 0                                  # the full listing names it too
    assert expected_line(run["seconds_per_step"], run["steps"], REFERENCE) in capsys.readouterr().out


def test_info_of_a_short_pair_states_its_time_without_an_offer(capsys):
    """A short default run is estimated and no shorter run is offered; --measure adds the rate
    timed here; --json carries both."""
    assert main(["info", *CHEAP, "--measure"]) == 0
    out = capsys.readouterr().out
    run = default_run("autoregressive", "diag")
    assert estimate(run["seconds_per_step"], run["steps"], REFERENCE) in out
    assert f"measured over {PROBE_STEPS} steps" in out and "--steps" not in out
    assert main(["info", *CHEAP, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["seconds_per_step"] == run["seconds_per_step"]
    assert report["measured_seconds_per_step"] is None


@pytest.mark.parametrize("argv, words", [
    (["--task", "induction"], "--task and --model name a pair together"),
    (["--task", "induction", "--model", "gram19", "--measure"], "is an exact flow"),
])
def test_info_pair_errors_are_one_line(argv, words, capsys):
    assert main(["info", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1
