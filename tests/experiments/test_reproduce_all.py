"""`fastattn reproduce --all/--paper` (batch, resume, failures, output checks, progress), the claims
ledger and `fastattn report --compare`. Figures used here are the cheapest quick ones."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest

from fastattn import papers
from fastattn.cli import main
from fastattn.experiments import batch, claims, registry, report
from fastattn.experiments.claims import Claim
from fastattn.outputs import Output

FAST = ["zhang2025-fig14", "zhang2025-fig8"]


def _one_error_line(err: str, command: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"fastattn {command}: error: "), err
    return lines[0]


@pytest.fixture(scope="module")
def quick_two(tmp_path_factory):
    """Two quick figures run once into a folder (shared: each takes a few seconds)."""
    out = tmp_path_factory.mktemp("two")
    result = batch.run_all(FAST, out, quick=True)
    assert [o.status for o in result.outcomes] == ["done", "done"], result.outcomes
    return out


def test_second_run_recomputes_nothing(quick_two, monkeypatch):
    stamps = {n: (quick_two / f"{n}.json").stat().st_mtime_ns for n in FAST}
    monkeypatch.setattr(registry, "reproduce", lambda *a, **k: pytest.fail("recomputed"))
    seen = []
    result = batch.run_all(FAST, quick_two, quick=True, report=lambda k, n, o: seen.append((k, n)))
    assert [o.status for o in result.outcomes] == ["cached", "cached"]
    assert seen == [(1, 2), (2, 2)]
    assert {n: (quick_two / f"{n}.json").stat().st_mtime_ns for n in FAST} == stamps
    # the cached outcome carries the figure's own wall time, for the report
    assert all(o.wall_time > 0 for o in result.outcomes)


def test_an_interrupted_figure_is_recomputed_and_its_stale_records_removed(quick_two, tmp_path):
    import shutil

    out = tmp_path / "o"
    shutil.copytree(quick_two, out)
    # the second figure was in flight: no JSON, a stray run record of a run that no longer exists
    owned = Output(out, "reproduce")
    assert owned.remove(out / f"{FAST[1]}.json")
    owned.write(out / FAST[1] / "old_seed9.json", lambda fh: fh.write("{}"), "w")
    result = batch.run_all(FAST, out, quick=True)
    assert [o.status for o in result.outcomes] == ["cached", "done"], [o.error for o in result.outcomes]
    assert not (out / FAST[1] / "old_seed9.json").exists()
    assert (out / f"{FAST[1]}.json").exists()


def test_an_interrupted_figure_resumes_from_its_finished_runs(quick_two, tmp_path, monkeypatch):
    """The figure in flight had finished its runs (their records exist) but not its JSON: the next
    batch trains none of them again and gives the same summary; --overwrite trains them again."""
    import shutil

    out = tmp_path / "o"
    shutil.copytree(quick_two, out)
    assert Output(out, "reproduce").remove(out / f"{FAST[1]}.json")
    trained = []
    real = registry._train
    monkeypatch.setattr(registry, "_train", lambda s, m, *r: trained.append(s) or real(s, m, *r))
    result = batch.run_all(FAST[1:], out, quick=True)
    assert [o.status for o in result.outcomes] == ["done"] and trained == []
    old, new = (json.loads((d / f"{FAST[1]}.json").read_text())["summary"]
                for d in (quick_two, out))
    assert new == old
    batch.run_all(FAST[1:], out, quick=True, overwrite=True)
    assert trained


def test_a_failing_figure_does_not_stop_the_others(tmp_path, monkeypatch, capsys):
    real = registry.reproduce

    def flaky(name, out, quick=False, **options):
        if name == FAST[0]:
            raise RuntimeError("boom in the recipe")
        return real(name, out, quick=quick, **options)

    monkeypatch.setattr(registry, "reproduce", flaky)
    monkeypatch.setattr(batch, "select", lambda papers=(), names=(): list(FAST))
    code = main(["reproduce", "--all", "--quick", "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 1
    assert f"FAILED {FAST[0]}: RuntimeError: boom in the recipe" in captured.err
    assert (tmp_path / f"{FAST[1]}.json").exists()
    manifest = json.loads((tmp_path / batch.MANIFEST).read_text())
    assert manifest["figures"][FAST[0]]["status"] == "failed"
    assert manifest["figures"][FAST[1]]["status"] == "done"
    # the page lists the failure; the ledger marks its claims not run
    page = (tmp_path / "index.html").read_text()
    assert "boom in the recipe" in page
    rows = json.loads((tmp_path / "claims.json").read_text())
    assert all(r["status"] == "not_run" for r in rows if r["figure"] == FAST[0])


def test_out_is_checked_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(registry, "reproduce", lambda *a, **k: pytest.fail("worked before checking"))
    monkeypatch.setattr(batch, "select", lambda papers=(), names=(): list(FAST))
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert main(["reproduce", "--all", "--quick", "--out", str(a_file)]) == 2
    assert "is a file" in _one_error_line(capsys.readouterr().err, "reproduce")
    assert main(["reproduce", "--all", "--quick", "--out", str(a_file / "sub")]) == 2
    assert "not writable" in _one_error_line(capsys.readouterr().err, "reproduce")
    assert main(["reproduce", FAST[0], "--quick", "--out", str(a_file / "sub")]) == 2
    assert "not writable" in _one_error_line(capsys.readouterr().err, "reproduce")


def test_quick_and_full_do_not_mix_without_overwrite(tmp_path, monkeypatch, capsys):
    (tmp_path / batch.MANIFEST).write_text(json.dumps({"mode": "full", "quick": False}))
    monkeypatch.setattr(registry, "reproduce", lambda *a, **k: pytest.fail("worked before checking"))
    monkeypatch.setattr(batch, "select", lambda papers=(), names=(): list(FAST))
    assert main(["reproduce", "--all", "--quick", "--out", str(tmp_path)]) == 2
    line = _one_error_line(capsys.readouterr().err, "reproduce")
    assert "holds a full run" in line and "--overwrite" in line
    # a folder of figures without a manifest (single-figure runs) is checked by its figures' mode
    other = tmp_path / "other"
    other.mkdir()
    (other / "zhang2025-fig3.json").write_text(json.dumps({"quick": False, "summary": {}}))
    assert main(["reproduce", "--all", "--quick", "--out", str(other)]) == 2
    assert "holds full figures" in _one_error_line(capsys.readouterr().err, "reproduce")


def test_overwrite_recomputes_everything(quick_two, tmp_path):
    import shutil

    out = tmp_path / "o"
    shutil.copytree(quick_two, out)
    Output(out, "reproduce").write(out / batch.MANIFEST,
                                   lambda fh: fh.write(json.dumps({"mode": "full"})), "w")
    result = batch.run_all(FAST[:1], out, quick=True, overwrite=True)
    assert [o.status for o in result.outcomes] == ["done"]
    assert json.loads((out / batch.MANIFEST).read_text())["mode"] == "quick"


def test_single_figure_refuses_to_replace_a_finished_one(quick_two, tmp_path, monkeypatch, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / f"{FAST[0]}.json").write_bytes((quick_two / f"{FAST[0]}.json").read_bytes())
    monkeypatch.setattr(registry, "reproduce", lambda *a, **k: pytest.fail("worked before checking"))
    assert main(["reproduce", FAST[0], "--out", str(out)]) == 2
    line = _one_error_line(capsys.readouterr().err, "reproduce")
    assert "a quick run; a full run would mix the two" in line and "--overwrite" in line
    assert main(["reproduce", FAST[0], "--quick", "--out", str(out)]) == 2
    assert "--overwrite" in _one_error_line(capsys.readouterr().err, "reproduce")


def test_progress_lines_one_per_figure_also_when_piped(quick_two, monkeypatch, capsys):
    """Issue 41: piped, `reproduce --all` printed nothing for minutes; it prints the terminal's
    line per figure (stderr), and `--quiet` none."""
    stream = io.StringIO()
    printer = batch.progress_printer(stream)
    printer(3, 58, batch.Outcome("zhang2025-fig8", "done", 12.34))
    printer(4, 58, batch.Outcome("zhang2025-fig9", "failed", 1.0, "ValueError: x"))
    assert stream.getvalue().splitlines() == [
        "figure 3 of 58: zhang2025-fig8 done in 12.3 s [0 s elapsed]",
        "figure 4 of 58: zhang2025-fig9 FAILED after 1.0 s: ValueError: x [0 s elapsed]"]
    # under pytest stderr is not a terminal, as when piped
    monkeypatch.setattr(batch, "select", lambda papers=(), names=(): list(FAST))
    assert main(["reproduce", "--paper", "zhang2025", "--quick", "--out", str(quick_two)]) == 0
    captured = capsys.readouterr()
    lines = [x for x in captured.err.splitlines() if x.startswith("figure ")]
    assert [x.split(" [")[0] for x in lines] == [
        f"figure {k} of 2: {name} already finished (cached)" for k, name in enumerate(FAST, 1)]
    assert "2 figures: 0 computed, 2 already finished, 0 failed" in captured.out
    assert main(["reproduce", "--paper", "zhang2025", "--quick", "--quiet", "--out",
                 str(quick_two)]) == 0
    assert "figure 1 of" not in capsys.readouterr().err


def test_select_papers_and_unknown_paper():
    zhang = batch.select(["zhang2025"])
    assert zhang and all(n.startswith("zhang2025-") for n in zhang)
    assert len(batch.select()) == len(registry.FIGURES)
    with pytest.raises(ValueError, match="--paper 'nosuch' is not a paper"):
        batch.select(["nosuch"])


def test_select_computes_papers_in_registry_order_and_figures_numerically():
    """`reproduce --all` computes he2025-e2 before he2025-e10 and musat2025-fig9-11 before
    musat2025-fig12-14 (issue 35), one paper after another in the manifests' order."""
    names = batch.select()
    assert sorted(names) == sorted(registry.FIGURES)
    seen = list(dict.fromkeys(n.split("-")[0] for n in names))
    assert seen == [p for p in papers.names() if p in seen]
    assert len(seen) == len({n.split("-")[0] for n in names})     # each paper's figures together
    for paper in seen:
        stems: dict[str, list[list[int]]] = {}     # "fig#", "e#", "fig#-#": numbers in run order
        for n in names:
            if n.startswith(paper + "-"):
                tail = n.split("-", 1)[1]
                stems.setdefault(re.sub(r"\d+", "#", tail), []).append(
                    [int(x) for x in re.findall(r"\d+", tail)])
        for stem, numbers in stems.items():
            assert numbers == sorted(numbers), (paper, stem, numbers)
    assert names.index("he2025-e2") < names.index("he2025-e10")
    assert names.index("musat2025-fig9-11") < names.index("musat2025-fig12-14")
    assert batch.select(["sander2024"]) == [n for n in names if n.startswith("sander2024-")]


# ---- the claims ledger


def test_every_paper_has_at_least_ten_claims_and_they_point_at_listed_figures():
    rows = claims.load()
    assert len(rows) >= 60
    for paper in papers.names():
        assert sum(c.paper == paper for c in rows) >= 10, paper
    for c in rows:
        assert not c.figure or c.figure in registry.FIGURES, (c.key, c.figure)
        assert not c.figure or c.field.startswith("summary."), (c.key, c.field)
        assert c.claim and c.reason


def test_closed_form_claims_measure_their_values():
    """Claims with a `measure` function are cheap: evaluate them all (erratum ones included)."""
    for c in claims.load():
        if c.measure:
            row = claims.evaluate(c, Path("/nonexistent"), quick=True)
            assert row["status"] in ("reproduced", "erratum"), row


def _write_fig(folder: Path, name: str, summary: dict, quick: bool = True) -> None:
    (folder / f"{name}.json").write_text(json.dumps({"name": name, "quick": quick,
                                                     "summary": summary}))


def test_statuses(tmp_path):
    base = dict(paper="p", figure="zhang2025-fig1", field="summary.x", tolerance=0.01,
                reason="r")
    _write_fig(tmp_path, "zhang2025-fig1", {"x": 1.005, "y": [None, 2.0]})
    ok = claims.evaluate(Claim(key="a", claim="c", paper_value=1.0, **base), tmp_path, True)
    assert ok["status"] == "reproduced" and ok["measured"] == 1.005
    off = claims.evaluate(Claim(key="b", claim="c", paper_value=1.1, **base), tmp_path, True)
    assert off["status"] == "not_reproduced" and "1.005" in off["note"]
    err = claims.evaluate(Claim(key="c", claim="c", paper_value=1.1, corrected=1.0,
                                note="the paper double-counts", **base), tmp_path, True)
    assert err["status"] == "erratum" and err["note"] == "the paper double-counts"
    full_only = claims.evaluate(Claim(key="d", claim="c", paper_value=1.0, quick=False, **base),
                                tmp_path, True)
    assert full_only["status"] == "not_run" and "quick" in full_only["note"]
    assert full_only["measured"] is None
    missing = claims.evaluate(Claim(key="e", claim="c", paper_value=1.0,
                                    **{**base, "figure": "zhang2025-fig3"}), tmp_path, True)
    assert missing["status"] == "not_run"
    null = claims.evaluate(Claim(key="f", claim="c", paper_value=1.0,
                                 **{**base, "field": "summary.y.0"}), tmp_path, True)
    assert null["status"] == "not_run"
    bound = claims.evaluate(Claim(key="g", claim="c", paper_value=2.0, compare="at_most",
                                  **{**base, "field": "summary.y.1"}), tmp_path, True)
    assert bound["status"] == "reproduced"
    with pytest.raises(ValueError, match="tolerance's reason"):
        Claim("p", "k", "c", 1.0, figure="f", field="summary.x")


def test_compare_lists_changed_claims(tmp_path):
    row = {"paper": "p", "key": "k", "figure": "f", "paper_value": 1.0, "measured": 1.0,
           "status": "reproduced"}
    same = dict(row, key="same")
    old = [row, same, dict(row, key="gone")]
    new = [dict(row, measured=1.2, status="not_reproduced"), same]
    lines = report.compare(old, new)
    assert lines == ["p/gone: only in OLD",
                     "p/k: status reproduced -> not_reproduced; measured 1 -> 1.2 (paper 1) [f]"]
    a, b = tmp_path / "a", tmp_path / "b"
    for folder, rows in ((a, old), (b, new)):
        folder.mkdir()
        (folder / "claims.json").write_text(json.dumps(rows))
    assert main(["report", "--compare", str(a), str(b)]) == 0


def test_report_page_lists_every_claim(quick_two):
    rows, page = report.write_report(quick_two)
    text = page.read_text()
    assert text.count('<tr class="claim"') == len(rows) == len(claims.load(["zhang2025"]))
    for name in FAST:
        assert f'src="{name}.png"' in text
    assert "http://" not in text and "https://" not in text      # self-contained
    assert os.path.basename(str(page)) == "index.html"


def test_ctrl_c_loses_only_the_figure_in_flight(tmp_path):
    """A real SIGINT while the second figure computes: exit 130, the first figure stays finished
    (and is not recomputed by the next run), the second has no JSON."""
    import signal
    import subprocess
    import sys
    import time

    code = ("import sys\n"
            "from fastattn.cli import main\n"
            "from fastattn.experiments import batch\n"
            f"batch.select = lambda papers=(), names=(): {FAST!r}\n"
            "sys.exit(main(sys.argv[1:]))\n")
    args = [sys.executable, "-c", code, "reproduce", "--all", "--quick", "--out", str(tmp_path)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = tmp_path / f"{FAST[0]}.json"
    deadline = time.monotonic() + 240
    while not first.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert first.exists(), proc.communicate()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:        # the second figure finished before the signal landed
        pytest.skip("the second figure finished before SIGINT arrived")
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert not (tmp_path / f"{FAST[1]}.json").exists()
    result = batch.run_all(FAST, tmp_path, quick=True)
    assert [o.status for o in result.outcomes] == ["cached", "done"], [o.error for o in result.outcomes]


def test_lookup_keys_with_dots_and_lists():
    doc = {"summary": {"runs": {"fixed0.0": {"x": [1, {"y": 2}]}, "fixed0": {"0": 5}}}}
    assert claims.lookup(doc, "summary.runs.fixed0.0.x.1.y") == 2
    assert claims.lookup(doc, "summary.runs.fixed0.0.x.0") == 1
    with pytest.raises(KeyError):
        claims.lookup(doc, "summary.runs.fixed0.0.z")
    with pytest.raises(KeyError):
        claims.lookup(doc, "summary.runs.fixed0.0.x.7")


def test_bad_batch_input_is_one_line_before_work(tmp_path, capsys):
    out = tmp_path / "x"
    assert main(["reproduce", "--paper", "nosuch", "--out", str(out)]) == 2
    assert "--paper 'nosuch' is not a paper" in _one_error_line(capsys.readouterr().err, "reproduce")
    assert main(["reproduce", "zhang2025-fig8", "--all", "--out", str(out)]) == 2
    assert "not both" in _one_error_line(capsys.readouterr().err, "reproduce")
    assert main(["reproduce", "--all", "--workers", "0", "--out", str(out)]) == 2
    assert "--workers must be at least 1" in _one_error_line(capsys.readouterr().err, "reproduce")
    assert not out.exists()
    assert main(["report", str(out)]) == 2
    assert "is not a folder" in _one_error_line(capsys.readouterr().err, "report")
    assert main(["report", "--compare", str(tmp_path), str(tmp_path)]) == 2
    assert "claims.json does not exist" in _one_error_line(capsys.readouterr().err, "report")


def test_workers_run_figures_in_their_own_processes(quick_two, tmp_path):
    out = tmp_path / "w"
    result = batch.run_all(FAST, out, quick=True, workers=2)
    assert sorted(o.status for o in result.outcomes) == ["done", "done"], result.outcomes
    for name in FAST:
        mine = json.loads((out / f"{name}.json").read_text())["summary"]
        assert mine == json.loads((quick_two / f"{name}.json").read_text())["summary"]
