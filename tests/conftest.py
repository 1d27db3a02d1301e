import math
import os
import random
from pathlib import Path

import numpy as np
import pytest
import torch

# The tests use tiny tensors: one intra-op thread avoids OpenMP spin-waits, which make small ops
# hundreds of times slower when the machine's cores are busy with other work.
torch.set_num_threads(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fastattn-seed", type=int, default=None, metavar="N",
        help="seed every test's random draws with N (the `rng` fixture, torch's, numpy's and "
             "Python's global generators) to replay a failure; by default each test draws a fresh "
             "seed, printed with a failing test's output")


def usable_cpus(affinity: int, cpu_max: str | None) -> int:
    """The CPUs this process may keep busy: those it may run on (`affinity`), capped by a cgroup v2
    CPU quota (`cpu_max`, the text of /sys/fs/cgroup/cpu.max: "QUOTA PERIOD" or "max PERIOD"),
    rounded up. A container's CPU limit shows only there: os.cpu_count and psutil count the host."""
    if cpu_max:
        quota, _, period = cpu_max.strip().partition(" ")
        if quota != "max":
            return max(1, min(affinity, math.ceil(int(quota) / int(period))))
    return affinity


@pytest.hookimpl(optionalhook=True)      # a hook of pytest-xdist, which a run may lack
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`pytest -n auto` (README, "Tests"): one worker a usable CPU (`usable_cpus`), not one a host
    core, since each worker holds its own torch (a few hundred MB); PYTEST_XDIST_AUTO_NUM_WORKERS,
    where set, still decides (None: xdist's own rule)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cpu_max = Path("/sys/fs/cgroup/cpu.max")
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return usable_cpus(affinity or 1, cpu_max.read_text() if cpu_max.exists() else None)


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.getoption("fastattn_seed")
    if seed is None:
        return "fastattn seed: fresh per test, printed on failure (replay: --fastattn-seed N)"
    return f"fastattn seed: {seed} for every test (--fastattn-seed)"


@pytest.fixture(autouse=True)
def fastattn_seed(request: pytest.FixtureRequest) -> int:
    """This test's seed: `--fastattn-seed N`, else fresh from the OS. It seeds torch's, numpy's and
    Python's global generators too, so that a test drawing from them replays with the same option."""
    seed = request.config.getoption("fastattn_seed")
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**32))
    print(f"rng seed = {seed} (replay: pytest --fastattn-seed {seed} '{request.node.nodeid}')")
    torch.manual_seed(seed)
    np.random.seed(seed)  # noqa: NPY002 -- the legacy global generator, for code drawing from it
    random.seed(seed)
    return seed


@pytest.fixture
def rng(fastattn_seed: int) -> np.random.Generator:
    """The random inputs of a test, from its printed seed."""
    return np.random.default_rng(fastattn_seed)
