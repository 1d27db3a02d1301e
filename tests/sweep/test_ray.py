"""The Ray executor (issue 27 item 4): a local cluster started by the sweep listens on 127.0.0.1
only, and its table equals the local executor's."""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'fastattn[ray]')")

from fastattn.sweep import run_sweep  # noqa: E402

TINY = {"model": "separate", "dim": [2, 3], "context": [8, 32], "heads": "D", "rank": 1,
        "init_scale": 1e-2, "spectrum": "linear", "n_records": 120}
DETERMINISTIC = ["key", "dim", "context", "heads", "seed", "status", "final_loss", "n_evals", "n_hvp",
                 "n_steps", "n_drops", "theory_Lstar", "t_end", "target_loss"]


def _descendants(root: int) -> set[int]:
    parent = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    out, grew = {root}, True
    while grew:
        new = {p for p, pp in parent.items() if pp in out} - out
        out |= new
        grew = bool(new)
    return out - {root}


def _ip(hex_addr: str) -> ipaddress._BaseAddress:
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return ipaddress.IPv4Address(raw[::-1])
    return ipaddress.IPv6Address(b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))


def listening_addresses(pids: set[int]) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state that one of `pids` holds (/proc)."""
    inodes = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:
                addr, port = f[1].split(":")
                out.add((str(_ip(addr)), int(port, 16)))
    return out


def _is_loopback(addr: str) -> bool:
    ip = ipaddress.ip_address(addr)
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_local_ray_cluster_listens_on_loopback_only_and_equals_local(tmp_path, monkeypatch):
    local = run_sweep(TINY, tmp_path / "local", seeds=2, workers=0, progress=False)
    seen: set[tuple[str, int]] = set()

    def snapshot(row):          # called in the driver while the cluster runs
        seen.update(listening_addresses(_descendants(os.getpid())))

    try:
        monkeypatch.chdir(tmp_path)      # a relative --out: resolved before the Ray workers see it
        remote = run_sweep(TINY, "ray-out", seeds=2, executor="ray", workers=2, progress=False,
                           on_row=snapshot)
    finally:
        if ray.is_initialized():
            ray.shutdown()
    assert seen, "no listening socket of the Ray processes was found"
    assert all(_is_loopback(a) for a, _ in seen), sorted(seen)
    assert (tmp_path / "ray-out" / "results.parquet").exists()
    pd.testing.assert_frame_equal(local[DETERMINISTIC], remote[DETERMINISTIC])
    assert os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_sweep_without_an_address_starts_its_own_instance_beside_a_running_cluster(tmp_path):
    """A cluster someone left running on this machine (recorded in /tmp/ray/ray_current_cluster,
    which Ray joins when given no address) is not joined: the sweep's instance is its own."""
    from ray.cluster_utils import Cluster

    from fastattn.sweep.executors import loopback_only

    with loopback_only():
        other = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False})
    joined: set[str] = set()
    try:
        remote = run_sweep({**TINY, "dim": 2, "context": 8}, tmp_path / "ray", seeds=1,
                           executor="ray", workers=1, progress=False,
                           on_row=lambda row: joined.add(ray.get_runtime_context().gcs_address))
    finally:
        if ray.is_initialized():
            ray.shutdown()
        other.shutdown()
    assert (remote["status"] != "error").all(), remote[["key", "error"]]
    assert joined and other.address not in joined, (other.address, joined)


#: runs long enough (about 1-2 s each: a fixed-step RK4 flow) that a node is killed while it runs one
SLOW = {"model": "separate", "dim": [2, 3], "context": [8, 32], "heads": "D", "rank": 1,
        "init_scale": 1e-2, "spectrum": "linear", "n_records": 60, "integrator": "rk4", "dt": 1e-3,
        "t_end": 500.0}


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_sweep_on_a_multi_node_cluster_survives_a_node_killed_mid_run(tmp_path):
    """Issue 37 item 7: a head (no CPUs) and two worker nodes on 127.0.0.1; the first worker node
    is killed (no graceful stop) while it runs a batch. The sweep finishes on the other node, and
    its table equals the local executor's: no row lost, none duplicated, none an error."""
    from ray.cluster_utils import Cluster

    from fastattn.sweep.executors import loopback_only
    from fastattn.sweep.store import INFLIGHT

    local = run_sweep(SLOW, tmp_path / "local", seeds=2, workers=0, progress=False)
    with loopback_only():
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "node_ip_address": "127.0.0.1", "include_dashboard": False})
        nodes = [cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1") for _ in range(2)]
        cluster.wait_for_nodes()
    victim, raylet = nodes[0], nodes[0].all_processes["raylet"][0].process.pid
    out = tmp_path / "ray"
    state: dict = {"killed": set(), "listening": set(), "rows": []}

    def on_row(row):            # in the driver, between batches: kill the victim mid-run once
        state["rows"].append(row["key"])
        state["listening"] |= listening_addresses(_descendants(os.getpid()) | _descendants(raylet))
        if state["killed"]:
            return
        running = {int(m.read_text()) for m in (out / INFLIGHT).glob("*")}
        mine = running & _descendants(raylet)
        if mine:
            cluster.remove_node(victim, allow_graceful=False)
            state["killed"] = mine

    try:
        remote = run_sweep(SLOW, out, seeds=2, executor="ray", address=cluster.address,
                           progress=False, on_row=on_row)
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
    assert state["killed"], "the victim node never ran a batch while the sweep collected rows"
    assert state["listening"] and all(_is_loopback(a) for a, _ in state["listening"]), \
        sorted(state["listening"])
    assert sorted(state["rows"]) == sorted(local["key"])        # each run collected once
    assert len(list((out / "runs").glob("*.json"))) == len(local)
    assert (remote["status"] != "error").all(), remote[["key", "error"]]
    pd.testing.assert_frame_equal(local[DETERMINISTIC], remote[DETERMINISTIC])
