"""bench/gpu_table.py on pytest-benchmark JSON written by pytest-benchmark itself, on CPU: the CUDA
kernel benchmarks are skipped here, so a stand-in benchmark file labels every test_cuda_kernel case
through the same ``label_kernel`` with made-up device medians, and the table must place each one
by its group and fields (not by its test name, which the stand-in's differs from)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gpu_table import table
from test_kernels_bench import CUDA_DIMS, CUDA_IMPLS, CUDA_KERNEL_CASES, CUDA_PASSES

BENCH = Path(__file__).resolve().parent

STAND_IN = """
import pytest
from test_kernels_bench import CUDA_IMPLS, CUDA_KERNEL_CASES, CUDA_PASSES, label_kernel

@pytest.mark.parametrize("mode", CUDA_PASSES)
@pytest.mark.parametrize("impl", CUDA_IMPLS)
@pytest.mark.parametrize("case", range(len(CUDA_KERNEL_CASES)))
def test_stand_in(benchmark, case, impl, mode):
    label_kernel(benchmark, *CUDA_KERNEL_CASES[case], impl, mode)
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    ms = {MEDIANS}[(case, impl, mode)]
    benchmark.extra_info.update(device_median_ms=ms, GB_per_s=1000 / ms)
"""


def _median(case: int, impl: str, mode: str, scale: float) -> float:
    """Distinct per case; the fastest impl rotates with the case, so bold lands in every column."""
    rank = (CUDA_IMPLS.index(impl) + case) % len(CUDA_IMPLS)
    return scale * (1 + case) * (1 + rank) * (2 if mode == "fwd+bwd" else 1)


def _run(tmp_path: Path, name: str, scale: float) -> Path:
    medians = {(c, i, m): _median(c, i, m, scale) for c in range(len(CUDA_KERNEL_CASES))
               for i in CUDA_IMPLS for m in CUDA_PASSES}
    (tmp_path / f"stand_in_{name}.py").write_text(STAND_IN.replace("{MEDIANS}", repr(medians)))
    out = tmp_path / f"{name}.json"
    # without the xdist worker's variables: pytest-benchmark disables itself where PYTEST_XDIST_WORKER
    # is set, and this run must time (its JSON is what the table reads)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(BENCH.parent), str(BENCH)])
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull,
                    "--rootdir", str(tmp_path), f"stand_in_{name}.py", "--benchmark-json", str(out)],
                   cwd=tmp_path, env=env, check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    """A first run of every case and a later one with every median halved."""
    tmp = tmp_path_factory.mktemp("gpu_table")
    return _run(tmp, "first", 1.0), _run(tmp, "later", 0.5)


def _rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()[2:]]


def _label(case: tuple) -> str:
    op, *sizes = case
    return f"{op} ({', '.join(f'{k}={v}' for k, v in zip(CUDA_DIMS[op], sizes, strict=True))})"


def test_one_row_per_op_shape_pass_with_each_impl_in_its_column(runs):
    rows = _rows(table(runs[0], None, peak_gbs=4000.0))
    expected = [(c, m) for c in range(len(CUDA_KERNEL_CASES)) for m in CUDA_PASSES]
    assert [(r[0], r[1]) for r in rows] == [(_label(CUDA_KERNEL_CASES[c]), m) for c, m in expected]
    for row, (c, m) in zip(rows, expected, strict=True):
        times = {i: _median(c, i, m, 1.0) for i in CUDA_IMPLS}
        best = min(times, key=times.get)
        assert row[2:5] == [f"**{t:.3g}**" if i == best else f"{t:.3g}" for i, t in times.items()]
        gbs = 1000 / times["triton"]
        assert row[5:] == [f"{gbs:.0f}", f"{100 * gbs / 4000.0:.0f} %"]


def test_after_shows_the_later_triton_time_beside_the_first(runs):
    rows = _rows(table(runs[0], runs[1], peak_gbs=4000.0))
    expected = [(c, m) for c in range(len(CUDA_KERNEL_CASES)) for m in CUDA_PASSES]
    for row, (c, m) in zip(rows, expected, strict=True):
        assert row[2] == f"{_median(c, 'triton', m, 1.0):.3g}"
        assert row[3].strip("*") == f"{_median(c, 'triton', m, 0.5):.3g}"
        assert row[4].strip("*") == f"{_median(c, 'reference', m, 1.0):.3g}"


def test_a_run_without_groups_is_refused_in_one_line(tmp_path):
    old = tmp_path / "old.json"
    old.write_text('{"benchmarks": [{"name": "test_cuda_kernel[icl_readout-1-2-3-4-triton-fwd]", '
                   '"group": null, "extra_info": {"device_median_ms": 1.0, "GB_per_s": 2.0}}]}')
    with pytest.raises(SystemExit, match=r"old\.json: benchmark .* before bench/groups\.py"):
        table(old, None, 4800.0)


def test_chunked_and_fla_columns_appear_where_the_file_has_them(tmp_path):
    """The implementations only some groups have get a column after Triton's, "—" elsewhere."""
    def bench(op, impl, ms):
        return {"name": f"{op}-{impl}", "group": f"{op} fwd",
                "extra_info": {"op": op, "shape": {"B": 2}, "pass": "fwd", "impl": impl,
                               "device_median_ms": ms, "GB_per_s": 1000 / ms}}
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps({"benchmarks": [
        bench("causal_linear_attention", "triton", 2.0), bench("causal_linear_attention", "fla", 1.0),
        bench("causal_linear_attention", "reference", 3.0),
        bench("icl_readout_next_token", "triton", 4.0),
        bench("icl_readout_next_token", "chunked", 5.0)]}))
    text = table(path, None, peak_gbs=4000.0)
    assert text.splitlines()[0].split("|")[3:7] == [" Triton ms ", " chunked ms ", " fla ms ",
                                                     " eager ms "]
    rows = _rows(text)
    assert rows[0][2:7] == ["2", "—", "**1**", "3", "—"]
    assert rows[1][2:7] == ["**4**", "5", "—", "—", "—"]


def test_of_copy_and_tflops_columns_come_from_the_same_run(tmp_path):
    """The device copy measured in the run gives "of copy"; a bench that counts flops gives the
    Triton TFLOP/s; neither column appears in a run without them (the tests above)."""
    info = {"op": "causal_linear_attention", "shape": {"B": 2}, "pass": "fwd", "impl": "triton",
            "device_median_ms": 2.0, "GB_per_s": 1500.0, "flops": 10, "TFLOP_per_s": 12.5}
    path = tmp_path / "copy.json"
    path.write_text(json.dumps({"benchmarks": [
        {"name": "k", "group": "g", "extra_info": info},
        {"name": "copy", "group": "c", "extra_info": {"device_median_ms": 2.0,
                                                     "copy_GB_per_s": 3000.0}}]}))
    lines = table(path, None, peak_gbs=4500.0).splitlines()
    assert lines[0].split("|")[-3:-1] == [" of copy ", " Triton TFLOP/s "]
    assert _rows("\n".join(lines))[0][-4:] == ["1500", "33 %", "50 %", "12.5"]
