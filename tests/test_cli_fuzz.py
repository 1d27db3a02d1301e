"""Property-based fuzz of the command line's parsers and the sweep grammar (issue 37 item 8).

Random and adversarial values go to `fastattn sweep` and `fastattn train` in this process: a value
is either accepted (the command gets to planning or to its output folder, which the tests stop
it at) or refused in one line `fastattn <cmd>: error: …` with exit status 2, never a traceback,
a hang or a file written. The example count comes from the hypothesis profile "fastattn-ci"
(modest: CI's 2 cores); FASTATTN_FUZZ_EXAMPLES raises it for a longer local hunt.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fastattn.cli import main  # noqa: E402
from fastattn.sweep.grid import MAX_EXPONENT, MAX_MAGNITUDE, evaluate  # noqa: E402

settings.register_profile(
    "fastattn-ci", max_examples=int(os.environ.get("FASTATTN_FUZZ_EXAMPLES", "40")),
    deadline=None, derandomize=False, print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
FUZZ = settings.get_profile("fastattn-ci")


class Reached(BaseException):
    """Raised where a command would start its work: the input was accepted."""


#: adversarial fragments: huge, non-finite, negative, empty, syntax, unicode, injection
NASTY = ["", " ", "-1", "0", "nan", "inf", "-inf", "1e400", "-1e400", "9**9**9", "D/0", "exp(1000)",
         "int(1e400)", "2**64", "(" * 50, "1..100000000", "1..", "..", ",", ",,", "/", "D", "N",
         "__import__('os').system('true')", "lambda: 0", "[1]*10**9", "1_000", "0x10", "１",
         "\x00", "\n", "'", '"', "--out", "-", "1e-400", "D**D**D", "sqrt(-1)", "log(0)",
         "max()", "round(1e300, -400)", "10**12*10", "True", "None", "1j"]
text = st.one_of(st.sampled_from(NASTY), st.text(max_size=30),
                 st.from_regex(r"[-+*/(). 0-9eDN,]{1,25}", fullmatch=True),
                 st.builds(str, st.floats(allow_nan=True, allow_infinity=True)),
                 st.builds(str, st.integers(-10**30, 10**30)))


def _check_outcome(run, capsys, out: Path, command: str) -> None:
    """`run()` either reaches the work (Reached) or exits 2 with one error line; nothing written."""
    capsys.readouterr()
    try:
        code = run()
    except Reached:
        code = None
    except SystemExit as stop:                       # argparse refusing a value
        code = stop.code
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    if code is not None:
        lines = [ln for ln in err.strip().splitlines() if ": warning: " not in ln]
        assert code == 2, (code, err)
        assert len(lines) == 1 and lines[0].startswith(f"fastattn {command}: error: "), err
    assert not out.exists(), sorted(out.rglob("*"))


@pytest.fixture
def stop_before_work(monkeypatch):
    """Planning (sweep) and building the runs (train) raise Reached: accepted input builds
    nothing."""
    import fastattn.cli_options
    from fastattn import cli
    from fastattn.sweep import api
    from fastattn.sweep import cli as sweep_cli

    def reached(*_a, **_k):
        raise Reached

    # both stop where they would build their tasks and models: sizes are not bounded yet (a
    # random --dim of 10^5 allocates D² floats and the machine kills the process)
    monkeypatch.setattr(sweep_cli, "plan", reached)
    monkeypatch.setattr(api, "plan", reached)
    monkeypatch.setattr(fastattn.cli_options, "build_run", reached)
    monkeypatch.setattr(cli, "check_output", reached)


SWEEP_OPTIONS = ["--heads", "--init-scale", "--dim", "--context", "--spectrum", "--rank", "--t-end",
                 "--target-loss", "--init-seed", "--seeds", "--workers", "--batch", "--max-evals",
                 "--converge-rel", "--lr", "--integrator", "--n-records"]


@FUZZ
@given(option=st.sampled_from(SWEEP_OPTIONS), value=text)
def test_sweep_values_are_accepted_or_one_line(option, value, capsys, stop_before_work):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "s"
        argv = ["sweep", "--model", "separate", "--dim", "2", "--heads", "2", "--context", "8",
                "--t-end", "5", f"{option}={value}", "--out", str(out), "--dry-run"]
        _check_outcome(lambda: main(argv), capsys, out, "sweep")


TRAIN_OPTIONS = ["--dim", "--heads", "--init-scale", "--context", "--spectrum", "--t-end", "--target-loss",
                 "--init-seed", "--data-seed", "--seeds", "--lrs", "--threads", "--n-records", "--rtol",
                 "--integrator", "--method", "--lr", "--steps", "--noise", "--rank", "--name"]


@FUZZ
@given(option=st.sampled_from(TRAIN_OPTIONS), value=text)
def test_train_values_are_accepted_or_one_line(option, value, capsys, stop_before_work):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "t"
        argv = ["train", "--task", "linear_regression", "--model", "separate", "--dim", "2",
                "--heads", "2", "--t-end", "5", f"{option}={value}", "--out", str(out)]
        _check_outcome(lambda: main(argv), capsys, out, "train")


#: the sweep grammar: numbers, D, N, operators and functions, nested
atoms = st.one_of(st.integers(-10**6, 10**6).map(str), st.floats(-1e6, 1e6).map(repr),
                  st.sampled_from(["D", "N", "1e400", "0", "-0.0", "1e-300"]))
expressions = st.recursive(
    atoms, lambda inner: st.one_of(
        st.builds(lambda a, op, b: f"({a}){op}({b})", inner,
                  st.sampled_from(["+", "-", "*", "/", "//", "**"]), inner),
        st.builds(lambda f, a: f"{f}({a})", st.sampled_from(
            ["sqrt", "log", "log2", "exp", "int", "round", "abs", "max", "min", "os.system"]), inner),
        st.builds(lambda a: f"-({a})", inner)),
    max_leaves=12)


@FUZZ
@given(expr=expressions, dim=st.integers(1, 64), n=st.integers(1, 4096))
def test_the_grammar_gives_a_bounded_number_or_one_line_error(expr, dim, n):
    try:
        value = evaluate(expr, {"D": dim, "N": n})
    except ValueError as exc:
        assert len(str(exc).splitlines()) == 1 and str(exc)
        return
    assert isinstance(value, (int, float)) and not isinstance(value, bool)
    assert math.isfinite(value) and abs(value) <= MAX_MAGNITUDE


@FUZZ
@given(base=st.integers(2, 10**6), exponent=st.integers(MAX_EXPONENT + 1, 10**12))
def test_powers_above_the_limit_are_refused_without_computing_them(base, exponent):
    with pytest.raises(ValueError, match="above the limit"):
        evaluate(f"{base}**{exponent}", {"D": 1, "N": 1})
