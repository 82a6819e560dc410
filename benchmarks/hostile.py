"""Bounded work on hostile inputs, against the interpreter's own start-up.

Targets, each relative to ``python -c "import typer, pydantic, yaml"`` timed in the same run:

- ``detect`` on an lspci dump of 10,000 and of 40,000 identical nodes: the larger within 4.5x the
  smaller's time (linear is 4x; the list search it replaced made it 16x);
- ``generate`` with a GPU ``count`` of 1,000,000 and of 99999999999999999999999 refused (exit 1)
  within 1.5x a ``generate`` of the same file with ``count: 1`` (they took 10 s and 700 MB, and
  forever);
- ``generate --out /`` refused within 1.5x that same ``generate`` (it walked the whole disk
  first).

Medians of several runs, each timed by the CPU time (user and system) of its process; baseline
and measured runs alternate. Prints the figures; exits 1 when a target is missed.

    .venv/bin/python benchmarks/hostile.py
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 5
NORMAL_FACTOR = 1.5
LINEAR_FACTOR = 4.5
_LINE = (
    "00:01.0 VGA compatible controller [0300]: NVIDIA Corporation AD102GL [L40S] [10de:26b9] "
    "(rev a1)"
)
_CLUSTER = """\
cluster: c
namespace: tenant-c
cozystack: {{version: osimage}}
talos: {{version: v1.13.9}}
pools:
  - name: gpu
    hardware: {{platform: kubevirt, gpus: [{{id: "10de:26b9", count: {count}}}]}}
"""


def _seconds(command: list[str], expect: int = 0) -> float:
    """The CPU seconds (user and system) of one run of ``command``: on a shared machine the
    wall clock also counts the waits for a core, which made ratios of 0.2 s runs flap."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        command, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    elapsed = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}, expected {expect}")
    return elapsed


def _median(command: list[str], baseline: list[str], expect: int = 0) -> tuple[float, float]:
    base: list[float] = []
    timed: list[float] = []
    for _ in range(RUNS):
        base.append(_seconds(baseline))
        timed.append(_seconds(command, expect))
    return statistics.median(base), statistics.median(timed)


def main() -> int:
    python = sys.executable
    tool = [python, "-m", "schematic"]
    startup = [python, "-c", "import typer, pydantic, yaml"]
    checks: list[tuple[str, str, bool, str]] = []
    bases: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        detect_times = {}
        for nodes in (10_000, 40_000):
            dump = work / f"nodes-{nodes}.txt"
            dump.write_text("".join(f"==> node{i} <==\n{_LINE}\n" for i in range(nodes)))
            base, detect_times[nodes] = _median([*tool, "detect", str(dump)], startup)
            bases.append(base)
        ratio = detect_times[40_000] / detect_times[10_000]
        checks.append(
            (
                "detect 40,000 / 10,000 identical nodes",
                f"{detect_times[40_000]:.2f} s / {detect_times[10_000]:.2f} s = {ratio:.2f}x",
                ratio <= LINEAR_FACTOR,
                f"<= {LINEAR_FACTOR:g}x",
            )
        )
        cluster = work / "ok.yaml"
        cluster.write_text(_CLUSTER.format(count=1))
        base, normal = _median([*tool, "generate", str(cluster)], startup)
        bases.append(base)
        refusals: list[tuple[str, str, list[str]]] = [
            (f"GPU count {count} refused", _CLUSTER.format(count=count), [])
            for count in ("1000000", "99999999999999999999999")
        ]
        refusals.append(("generate --out / refused", _CLUSTER.format(count=1), ["--out", "/"]))
        for index, (name, text, extra) in enumerate(refusals):
            hostile = work / f"hostile-{index}.yaml"
            hostile.write_text(text)
            base, refused = _median([*tool, "generate", str(hostile), *extra], startup, 1)
            bases.append(base)
            checks.append(
                (
                    name,
                    f"{refused:.3f} s = {refused / normal:.2f}x a normal generate ({normal:.3f} s)",
                    refused <= NORMAL_FACTOR * normal,
                    f"<= {NORMAL_FACTOR:g}x",
                )
            )
    print(f"start-up (import typer, pydantic, yaml): {statistics.median(bases):.3f} s")
    failed = False
    for name, figure, ok, target in checks:
        print(f"{name}: {figure} (target {target}) {'ok' if ok else 'MISSED'}")
        failed |= not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
