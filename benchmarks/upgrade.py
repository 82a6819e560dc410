"""`upgrade` on 10,000 pools against `generate` on the same file.

An upgrade report plans the cluster file twice (at both releases) and compares every pool, so
its natural yardstick is one `generate -f json` of the same file. Targets: on a 10,000-pool
file from Talos 1.12 to 1.13, the JSON report within 2x of `generate -f json`, both when every
pool follows and when some pools break (a Volta pool pinned to the production tier, which
595 no longer drives: those pools are planned shape by shape to say why); peak memory under
300 MB. Times are medians of runs alternating with the baseline, so that load drift affects
both. Prints the figures; exits 1 when a target is missed.

    .venv/bin/python benchmarks/upgrade.py
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 3
POOLS = 10_000
FACTOR = 2.0
MEMORY_LIMIT_MB = 300.0

_SHAPES = (
    "    profile: kubevirt-cpu\n    instanceType: u1.large\n",
    "    profile: kubevirt-l4\n    maxReplicas: 4\n",
    "    profile: kubevirt-l40s\n    nvidia: {tier: lts}\n    diskSize: 100Gi\n",
    "    hardware:\n      platform: kubevirt\n      gpus: [{id: '10de:2330', count: 2}]\n"
    "    extensions: [siderolabs/iscsi-tools]\n",
    "    profile: kubevirt-v100-pcie-16gb\n    resources: {cpu: 8, memory: 64Gi}\n",
)
_BREAKING = "    profile: kubevirt-v100-pcie-16gb\n    nvidia: {tier: production}\n"


def cluster(pools: int, *, breaking: bool) -> str:
    """A cluster file on Talos v1.12.6; every tenth pool breaks on 1.13 when ``breaking``."""
    head = "cluster: big\ntalos:\n  version: v1.12.6\npools:\n"
    body = "".join(
        f"  - name: pool-{index:05d}\n"
        + (_BREAKING if breaking and index % 10 == 9 else _SHAPES[index % len(_SHAPES)])
        for index in range(pools)
    )
    return head + body


def _seconds(command: list[str], expected: int) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        command, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT
    )
    elapsed = time.perf_counter() - started
    if done.returncode != expected:
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}, expected {expected}")
    return elapsed


def main() -> int:
    tool = [sys.executable, "-m", "schematic"]
    checks = []
    with tempfile.TemporaryDirectory() as scratch:
        for breaking in (False, True):
            path = Path(scratch) / f"big-{breaking}.yaml"
            path.write_text(cluster(POOLS, breaking=breaking), "utf-8")
            # generate plans the file as it is; for the breaking one, at the release it follows.
            generate = [*tool, "generate", str(path), "-f", "json"]
            upgrade = [*tool, "upgrade", str(path), "--to", "v1.13.9", "--json"]
            base, timed = [], []
            for _ in range(RUNS):
                base.append(_seconds(generate, 0))
                timed.append(_seconds(upgrade, 3 if breaking else 0))
            baseline, measured = statistics.median(base), statistics.median(timed)
            label = "some pools break" if breaking else "every pool follows"
            checks.append(
                (
                    f"{POOLS} pools, {label}",
                    f"{measured:.2f} s = {measured / baseline:.2f}x generate ({baseline:.2f} s)",
                    measured <= FACTOR * baseline,
                    f"<= {FACTOR:g}x",
                )
            )
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if sys.platform == "darwin":
        peak_mb /= 1024  # bytes there
    checks.append(
        ("peak memory", f"{peak_mb:.0f} MB", peak_mb < MEMORY_LIMIT_MB, f"< {MEMORY_LIMIT_MB:g} MB")
    )
    failed = False
    for name, figure, ok, target in checks:
        print(f"{name}: {figure} (target {target}) {'ok' if ok else 'MISSED'}")
        failed |= not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
