"""`check --diff` on a generated file replaced by a large one: bounded memory and time.

A generated directory (the shipped example) has one pool's ``values.yaml`` replaced by a 40 MB
and then a 200 MB file; ``check --diff`` must report the drift (exit 3) with a peak resident
size under 300 MB and in a few seconds (it read the file whole and diffed it: 1.6 GB for 40 MB,
7.8 GB and 56 s for 200 MB). Each run is a child of its own, so its peak is its own.

    .venv/bin/python benchmarks/check_diff.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"
PEAK_LIMIT_MB = 300
SECONDS_LIMIT = 10.0
_MEASURE = """
import resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
elapsed = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(done.returncode, elapsed, peak)
"""


def _check(out: Path) -> tuple[int, float, float]:
    """Exit code, seconds and peak MB of one `check --diff` run."""
    command = [sys.executable, "-m", "schematic", "check", str(EXAMPLE), "--out", str(out)]
    measured = subprocess.run(
        [sys.executable, "-c", _MEASURE, *command, "--diff"],
        check=True,
        capture_output=True,
        text=True,
    )
    code, seconds, peak = measured.stdout.split()
    return int(code), float(seconds), float(peak)


def main() -> int:
    failed = False
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out"
        subprocess.run(
            [sys.executable, "-m", "schematic", "generate", str(EXAMPLE), "--out", str(out)],
            check=True,
            stderr=subprocess.DEVNULL,
        )
        target = out / "rtx6000" / "values.yaml"
        for megabytes in (40, 200):
            line = b"key: " + b"x" * 74 + b"\n"
            with target.open("wb") as handle:
                for _ in range(megabytes * 1024 * 1024 // len(line)):
                    handle.write(line)
            code, seconds, peak = _check(out)
            ok = code == 3 and peak < PEAK_LIMIT_MB and seconds < SECONDS_LIMIT
            failed |= not ok
            print(
                f"check --diff, values.yaml replaced by {megabytes} MB: exit {code}, "
                f"{seconds:.2f} s, peak {peak:.0f} MB (target: exit 3, < {PEAK_LIMIT_MB} MB, "
                f"< {SECONDS_LIMIT:g} s) {'ok' if ok else 'MISSED'}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
