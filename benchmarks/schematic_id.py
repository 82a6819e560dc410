"""Benchmark: offline schematic IDs.

Targets (the foundation issue):
* computing an ID costs close to hashing it: at least 20,000 IDs per second on one core for a
  realistic 6-extension schematic;
* `talos-schematic id FILE` starts within 2x the time of `python -c "import typer, yaml"`;
* 2,000 files in one call add at most 50 microseconds each.

Run: `.venv/bin/python benchmarks/schematic_id.py` (or `make bench`). Prints its figures and
exits 1 when a target is missed. Start-up times are medians of repeated runs, with bytecode
compiled first so that both sides are measured the way an installed tool runs.
"""

from __future__ import annotations

import compileall
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from schematic.model import Schematic

EXTENSIONS = [
    "siderolabs/drbd",
    "siderolabs/iscsi-tools",
    "siderolabs/nvidia-container-toolkit-production",
    "siderolabs/nvidia-open-gpu-kernel-modules-production",
    "siderolabs/qemu-guest-agent",
    "siderolabs/util-linux-tools",
]
TOOL = Path(sys.executable).with_name("talos-schematic")


def ids_per_second(seconds: float = 1.0) -> tuple[float, float]:
    """IDs per second for a schematic built each time, and for the hash alone."""
    count = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        for _ in range(500):
            _ = Schematic.from_extensions(EXTENSIONS, ["console=ttyS0"]).id
        count += 500
    id_rate = count / (time.perf_counter() - started)
    body = Schematic.from_extensions(EXTENSIONS, ["console=ttyS0"]).canonical().encode()
    count = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds / 4:
        for _ in range(5000):
            hashlib.sha256(body).hexdigest()
        count += 5000
    return id_rate, count / (time.perf_counter() - started)


def _median_seconds(command: list[str], runs: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    package = Path(__file__).resolve().parents[1] / "schematic"
    compileall.compile_dir(str(package), quiet=1)
    for name in ("typer", "yaml", "click", "pydantic", "rich"):
        module = __import__(name)
        compileall.compile_dir(str(Path(module.__file__ or "").parent), quiet=1)

    id_rate, hash_rate = ids_per_second()
    print(f"IDs per second (6 extensions, model built each time): {id_rate:,.0f}")
    print(f"sha256 of the same bytes, per second:                 {hash_rate:,.0f}")

    work = Path(tempfile.mkdtemp(prefix="talos-schematic-bench-"))
    try:
        one = work / "one.yaml"
        one.write_text(Schematic.from_extensions(EXTENSIONS).canonical())
        files = []
        for i in range(2000):
            path = work / f"s{i:04d}.yaml"
            extensions = [*EXTENSIONS[:5], f"siderolabs/extension-{i}"]
            path.write_text(Schematic.from_extensions(extensions, [f"arg={i}"]).canonical())
            files.append(str(path))
        baseline = _median_seconds([sys.executable, "-c", "import typer, yaml"], runs=15, env=env)
        startup = _median_seconds([str(TOOL), "id", str(one)], runs=15, env=env)
        # One file and 2,000 files, run in turns: the difference of each pair cancels the
        # machine's drift, and the median of the differences is the cost of 1,999 files.
        extra: list[float] = []
        many_times: list[float] = []
        for _ in range(11):
            single = _median_seconds([str(TOOL), "id", str(one)], runs=1, env=env)
            many_times.append(_median_seconds([str(TOOL), "id", *files], runs=1, env=env))
            extra.append(many_times[-1] - single)
        many = statistics.median(many_times)
    finally:
        shutil.rmtree(work)
    per_file_us = statistics.median(extra) / (len(files) - 1) * 1e6
    print(f"python -c 'import typer, yaml':                       {baseline * 1000:.0f} ms")
    print(
        f"talos-schematic id FILE:                              {startup * 1000:.0f} ms"
        f" ({startup / baseline:.2f}x)"
    )
    print(f"talos-schematic id with 2,000 files:                  {many * 1000:.0f} ms")
    print(f"added per file:                                       {per_file_us:.0f} us")

    failures = []
    if id_rate < 20_000:
        failures.append(f"{id_rate:,.0f} IDs per second is under 20,000")
    if startup > 2 * baseline:
        failures.append(f"start-up {startup / baseline:.2f}x is over 2x")
    if per_file_us > 50:
        failures.append(f"{per_file_us:.0f} us per file is over 50 us")
    for failure in failures:
        print(f"MISSED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
