"""The suite's own machinery in tests/conftest.py: how many workers `pytest -n auto` starts."""

import os

import pytest
from conftest import pytest_xdist_auto_num_workers, usable_cpus


@pytest.mark.parametrize(("affinity", "cpu_max", "want"), [
    (2, None, 2),                   # no cgroup v2 CPU file: every CPU the process may run on
    (64, "max 100000", 64),         # no quota
    (64, "200000 100000", 2),       # a container limited to 2 CPUs on a 64-core host
    (64, "150000 100000", 2),       # 1.5 CPUs: a second worker uses the half
    (64, "50000 100000", 1),        # less than one CPU: still one worker
    (4, "800000 100000", 4),        # a quota above the CPUs the process may run on
])
def test_usable_cpus_caps_the_affinity_by_the_cgroup_quota(affinity, cpu_max, want):
    assert usable_cpus(affinity, cpu_max) == want


def test_auto_starts_between_one_worker_and_one_a_cpu_unless_the_variable_says(pytestconfig,
                                                                                monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    assert 1 <= pytest_xdist_auto_num_workers(pytestconfig) <= os.cpu_count()
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    assert pytest_xdist_auto_num_workers(pytestconfig) is None      # xdist reads the variable
