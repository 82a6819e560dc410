"""Run every benchmark in this folder, print their figures, and fail if any target is missed.

Run: `make bench` (or `.venv/bin/python benchmarks/run.py [NAME ...]`). Each benchmark is a
script that prints its own figures and exits non-zero when it misses its target. Timings
depend on the machine being otherwise idle.
"""

from __future__ import annotations

import compileall
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = (
    "schematic_id",
    "generate",
    "factory_register",
    "upgrade",
    "hostile",
    "hostile_input",
    "hostile_shapes",
    "triage",
    "lint",
    "check_diff",
)


def byte_compile() -> None:
    """Compile the tool and the packages installed beside it, as ``pip install`` does: the set-up
    installs without compiling (faster), and where ``PYTHONDONTWRITEBYTECODE`` is set no run
    ever writes the bytecode, so each would compile what it imports (0.15 s of a triage run)
    and the figures would measure the compiler."""
    for folder in (HERE.parent / "schematic", Path(sysconfig.get_path("purelib"))):
        compileall.compile_dir(folder, quiet=1, workers=0)


def main(names: list[str]) -> int:
    byte_compile()
    missed = []
    for name in names or BENCHMARKS:
        print(f"== {name}", flush=True)
        done = subprocess.run([sys.executable, str(HERE / f"{name}.py")], check=False)
        if done.returncode != 0:
            missed.append(name)
        print(flush=True)
    if missed:
        print(f"targets missed: {', '.join(missed)}")
        return 1
    print("all targets met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
