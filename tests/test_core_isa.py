"""The multi-level core: the loader picks the highest x86-64 level the CPU runs, FASTATTN_ISA forces
a lower one, and every level the machine has computes what the default level computes, to rounding."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fastattn._core_loader import ISA_LEVELS, cpu_level
from fastattn.info import core_report

V2 = "cx16 lahf_lm popcnt sse4_1 sse4_2 ssse3 sse sse2"
V3 = V2 + " avx avx2 bmi1 bmi2 f16c fma abm movbe xsave"
V4 = V3 + " avx512f avx512bw avx512cd avx512dq avx512vl"


@pytest.mark.parametrize(("flags", "level"), [
    (V2, 2), (V3, 3), (V4, 4),
    (V4.replace(" avx512vl", ""), 3),       # AVX-512 F without VL is not v4
    (V3.replace(" fma", "") + " avx512f avx512bw avx512cd avx512dq avx512vl", 2),  # levels nest
    ("sse sse2", 2),                         # below v2: the lowest level the build makes
])
def test_cpu_level_reads_the_flags_line(flags, level):
    cpuinfo = f"processor\t: 0\nvendor_id\t: X\nflags\t\t: {flags}\nbugs\t\t: none\n"
    assert cpu_level(cpuinfo) == level


def _run(code: str, isa: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "FASTATTN_ISA"}
    if isa is not None:
        env["FASTATTN_ISA"] = isa
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)


def test_an_unknown_level_is_refused_in_one_line():
    result = _run("import fastattn", "sse9")
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert "FASTATTN_ISA='sse9'" in last and "baseline, avx2, avx512" in last


MULTI = core_report()["isa"].startswith("x86-64-v")
#: the levels this build has and this CPU runs, by FASTATTN_ISA name
LEVELS = [name for name, n in ISA_LEVELS.items() if MULTI and n <= cpu_level()]

# An exact objective's loss and gradient at a random point, and ten fused He Adam steps, as JSON.
WORK = """
import json, numpy as np
import fastattn
from fastattn.info import core_report
from fastattn.models import MultiHeadSoftmax, SeparateKQ
from fastattn.population import objective_for
from fastattn.tasks import LinearRegression
from fastattn.training import train
task = LinearRegression(6, context=11, spectrum=[0.3, 0.25, 0.2, 0.12, 0.08, 0.05], rotate=True)
model = SeparateKQ(6, heads=3, rank=2, init_scale=0.3, init_seed=4)
loss, grad = objective_for(task, model).loss_grad(model.to_flat())
he = LinearRegression(5, context=13, spectrum=[1.0] * 5, noise=0.1, w_cov=np.eye(5) / 5, data_seed=3)
traj = train(MultiHeadSoftmax(5, 4, init_seed=2), he, method="adam", lr=1e-2, steps=10,
             batch_size=32, progress=False)
print(json.dumps({"isa": core_report()["isa"], "loss": float(loss), "grad": grad.tolist(),
                  "he": traj.final_params.tolist(), "engine": traj.backend["engine"]}))
"""


@pytest.mark.skipif(not MULTI, reason="a single-module core (FASTATTN_ISA=native or generic build)")
def test_the_loader_runs_the_highest_level_the_cpu_has():
    # in a fresh process without FASTATTN_ISA: the suite itself may run with a level forced
    result = _run("from fastattn.info import core_report; print(core_report()['isa'])", None)
    assert result.stdout.strip() == f"x86-64-v{cpu_level()}", result.stderr
    forced = os.environ.get("FASTATTN_ISA")
    if forced in ISA_LEVELS:
        assert core_report()["isa"] == f"x86-64-v{ISA_LEVELS[forced]}"


@pytest.mark.skipif(not MULTI, reason="a single-module core (FASTATTN_ISA=native or generic build)")
def test_a_level_above_the_cpu_is_refused():
    above = [name for name, n in ISA_LEVELS.items() if n > cpu_level()]
    if not above:
        pytest.skip("this CPU runs the highest level")
    result = _run("import fastattn", above[0])
    assert result.returncode != 0 and "this CPU runs" in result.stderr.strip().splitlines()[-1]


@pytest.mark.slow
@pytest.mark.skipif(not MULTI, reason="a single-module core (FASTATTN_ISA=native or generic build)")
def test_every_level_computes_what_the_default_computes():
    """Vector width changes the order of sums: float64 objectives agree to ~1e-13 relative, the
    float32 He step (10 Adam steps) to ~1e-5; a level that miscompiled or misdispatched would not."""
    default = _run(WORK, None)
    assert default.returncode == 0, default.stderr
    ref = json.loads(default.stdout)
    assert "fused" in ref["engine"]
    for name in LEVELS:
        result = _run(WORK, name)
        assert result.returncode == 0, result.stderr
        got = json.loads(result.stdout)
        assert got["isa"] == f"x86-64-v{ISA_LEVELS[name]}"
        np.testing.assert_allclose(got["loss"], ref["loss"], rtol=1e-12)
        np.testing.assert_allclose(got["grad"], ref["grad"], rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(got["he"], ref["he"], rtol=1e-4, atol=1e-6)


@pytest.mark.skipif(not MULTI or shutil.which("objdump") is None,
                    reason="needs a multi-level core and objdump")
def test_lower_levels_hold_no_wider_vector_instructions():
    """What makes the wheel run on an AVX2-only (or SSE4.2-only) node: the modules for those levels
    use no AVX-512 (zmm) or, at v2, AVX (ymm) register, which -march=native builds did."""
    import fastattn._core_loader as loader

    folder = Path(loader.core.__file__).parent
    for level, banned in ((2, ("ymm", "zmm")), (3, ("zmm",))):
        (so,) = folder.glob(f"_core_x86_64_v{level}*")
        text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(so)], capture_output=True,
                              text=True, check=True).stdout
        assert not [reg for reg in banned if reg in text], f"x86-64-v{level} module uses {banned}"
    (v4,) = folder.glob("_core_x86_64_v4*")
    assert "zmm" in subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(v4)],
                                   capture_output=True, text=True, check=True).stdout
