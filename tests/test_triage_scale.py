"""Joining nodes across files and ``--against`` cost what the inputs hold, not their product.

A log named after its node is joined to it by the file's name; a node is matched to the pool
an output index commits by its name's tokens. Both once looked every known name (or pool) up
per file (or node): 2,000 nodes with 100 logs took 45 s, 1,000 pools against 1,000 nodes 39 s.
The shapes here are larger than those and must take well under a second of CPU each; the
figures are CPU time of this process, so a busy machine does not fail them.
"""

from __future__ import annotations

import time

from schematic.doctor.triage.diagnose import Committed, CommittedPool
from schematic.doctor.triage.model import Machine, build_model
from schematic.doctor.triage.signals import Evidence, Kind, Signal

# The CPU seconds each shape may take: the quadratic forms took minutes.
BUDGET = 3.0


def _node(name: str, address: str) -> Signal:
    return Signal(
        Kind.NODE,
        name,
        Evidence("nodes.json", 1, f"node {name}"),
        name,
        (("addresses", address), ("labels", f"kubernetes.io/hostname={name}")),
    )


def _wait(file: str) -> Signal:
    # A console line names no node: the file's name does.
    return Signal(
        Kind.SERVICE_WAITING,
        "",
        Evidence(file, 3, 'waiting for 1 services: service "ext-x" to be up'),
        "ext-x",
        (("uptime", "12.5"),),
    )


def test_logs_named_after_nodes_join_them_in_linear_time() -> None:
    names = [f"gpu-pool-{n % 100}-w{n:05d}" for n in range(20_000)]
    signals = [
        _node(name, f"10.{n // 65536}.{n // 256 % 256}.{n % 256}") for n, name in enumerate(names)
    ]
    logs = {f"logs/{names[n * 10]}.console.log": names[n * 10] for n in range(2_000)}
    signals += [_wait(file) for file in logs]
    started = time.process_time()
    model = build_model(signals)
    spent = time.process_time() - started
    joined = {file: m.name for m in model.machines.values() for file in m.files if file in logs}
    assert joined == logs
    assert spent < BUDGET, f"{spent:.1f} s"


def test_a_log_is_joined_to_the_longest_whole_name_it_holds() -> None:
    signals = [_node("worker-1", "10.0.0.1"), _node("worker-10", "10.0.0.10")]
    signals += [_wait("worker-10.log"), _wait("dump-worker-1/console.txt"), _wait("worker-100.log")]
    model = build_model(signals)
    files = {f: m.name for m in model.machines.values() for f in m.files if f != "nodes.json"}
    assert files == {
        "worker-10.log": "worker-10",
        "dump-worker-1/console.txt": "worker-1",
        "worker-100.log": "",  # no known name stands alone in it
    }


def _committed(pools: int) -> Committed:
    where = Evidence("index.yaml", 1, "")
    return Committed(
        "c", tuple(CommittedPool(f"pool-{n}", (f"{n:064x}",), (), where) for n in range(pools))
    )


def test_machines_find_their_committed_pool_in_linear_time() -> None:
    committed = _committed(16_000)
    machines = [
        Machine(name=f"kubernetes-c-pool-{n}-md0-x7k2p", names={f"kubernetes-c-pool-{n}-md0-x7k2p"})
        for n in range(0, 16_000, 4)
    ]
    started = time.process_time()
    found = [committed.pool_of(machine) for machine in machines]
    spent = time.process_time() - started
    assert [p.name if p else None for p in found] == [f"pool-{n}" for n in range(0, 16_000, 4)]
    assert spent < BUDGET, f"{spent:.1f} s"


def test_the_longest_pool_standing_as_whole_tokens_wins() -> None:
    where = Evidence("index.yaml", 1, "")
    committed = Committed(
        "c", tuple(CommittedPool(n, ("0" * 64,), (), where) for n in ("gpu", "gpu-big", "pu"))
    )
    by_name = {
        "tenant-gpu-big-x7k2p": "gpu-big",
        "tenant-gpu-x7k2p": "gpu",
        "tenant-gpus-x7k2p": None,  # "gpu" is no whole token of it, nor "pu"
    }
    for name, pool in by_name.items():
        found = committed.pool_of(Machine(name=name, names={name}))
        assert (found.name if found else None) == pool, name
    labelled = Machine(name="n", names={"n"}, pool="c-pu")
    assert committed.pool_of(labelled) == committed.pools[2]
