"""`generate` against the interpreter's own start-up: the shipped example, and memory.

Targets: the shipped example (``examples/cluster.yaml``, every output kind written to a fresh
directory) within 2.5x of ``python -c "import typer, pydantic, yaml"`` timed in the same run, and
peak memory under 300 MB, also on a 500-pool cluster file (a large real cluster has tens of pools;
its time is printed for the record, with no target).

For the record it also times the example with the input files' pydantic models defined and
built first (``schematic.inputs.documents``, which now serve only the JSON Schemas): what
reading the files through the models would add at the least, the reader option not taken. Times are
medians of several runs; memory is the child's peak RSS. Output goes to a RAM-backed temporary
directory where the system has one (``/dev/shm``), so that the disk's speed is not measured; the
package is byte-compiled first, as an installed one is. Baseline and measured runs alternate, so
that a change in machine load affects both. Prints the figures; exits 1 when a target is missed.

    .venv/bin/python benchmarks/generate.py
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"
RUNS = 11
LARGE_RUNS = 3
POOLS = 500
EXAMPLE_FACTOR = 2.5
# The example run with the input models built before it, as a reader using them would.
_WITH_MODELS = (
    "import sys\n"
    "from schematic.inputs import documents\n"
    "documents.ClusterDocument.model_rebuild(force=True)\n"
    "documents.ProfileDocument.model_rebuild(force=True)\n"
    "from schematic.cli import main\n"
    "sys.argv = ['talos-schematic', *sys.argv[1:]]\n"
    "main()\n"
)
MEMORY_LIMIT_MB = 300.0

# Pool shapes the large file cycles through: shipped profiles, inline hardware, extras,
# per-pool NVIDIA settings and Cozystack pass-through values.
_SHAPES = (
    "    profile: kubevirt-rtx-pro-6000-blackwell-server\n    maxReplicas: 4\n",
    "    profile: kubevirt-cpu\n    instanceType: u1.large\n    roles: [worker]\n",
    "    profile: kubevirt-l40s\n    nvidia: {tier: lts}\n    diskSize: 100Gi\n",
    "    hardware:\n      platform: kubevirt\n      gpus: [{id: '10de:2330', count: 2}]\n"
    "    extensions: [siderolabs/iscsi-tools]\n    kernelArgs: [console=ttyS0]\n",
    "    profile: kubevirt-v100-pcie-16gb\n    resources: {cpu: 8, memory: 64Gi}\n",
    "    profile: kubevirt-cpu\n    extensions: [siderolabs/drbd]\n    kernelModules: []\n",
)


def large_cluster(pools: int) -> str:
    """A cluster file of ``pools`` pools."""
    lines = [
        "cluster: big",
        "namespace: tenant-big",
        "cozystack: {version: osimage}",
        "talos:",
        "  version: v1.13.9",
        "pools:",
    ]
    text = "\n".join(lines) + "\n"
    body = "".join(
        f"  - name: pool-{index:05d}\n{_SHAPES[index % len(_SHAPES)]}" for index in range(pools)
    )
    return text + body


def _seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT
    )
    return time.perf_counter() - started


def _interleaved(baseline: list[str], commands: list[list[str]]) -> tuple[list[float], float]:
    """Baseline times, and the commands' median, run alternately so that load drift cancels."""
    base: list[float] = []
    timed: list[float] = []
    for command in commands:
        base.append(_seconds(baseline))
        timed.append(_seconds(command))
    return base, statistics.median(timed)


def _compile_bytecode() -> None:
    """Byte-compile the package, as installing it would; the baseline's imports are compiled."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "schematic")],
        check=True,
        stdout=subprocess.DEVNULL,
        env=env,
    )


def _scratch_root() -> str | None:
    """A RAM-backed directory when there is one: the figures are about generating, not disks."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def main() -> int:
    python = sys.executable
    generate = [python, "-m", "schematic", "generate"]
    with tempfile.TemporaryDirectory(dir=_scratch_root()) as scratch:
        work = Path(scratch)
        _compile_bytecode()
        startup = [python, "-c", "import typer, pydantic, yaml"]
        _seconds([*generate, str(EXAMPLE)])  # warm the file cache
        base_example, example = _interleaved(
            startup,
            [[*generate, str(EXAMPLE), "--out", str(work / f"example-{n}")] for n in range(RUNS)],
        )
        base_models, with_models = _interleaved(
            startup,
            [
                [
                    python,
                    "-c",
                    _WITH_MODELS,
                    "generate",
                    str(EXAMPLE),
                    "--out",
                    str(work / f"m-{n}"),
                ]
                for n in range(RUNS)
            ],
        )
        big_file = work / "big.yaml"
        big_file.write_text(large_cluster(POOLS), "utf-8")
        base_large, large = _interleaved(
            startup,
            [
                [*generate, str(big_file), "--out", str(work / f"big-{n}")]
                for n in range(LARGE_RUNS)
            ],
        )
        baseline = statistics.median(base_example + base_models + base_large)
        written = sum(1 for path in (work / "big-0").rglob("*") if path.is_file())
    # The largest child by far is the large-file run; ru_maxrss is in KiB on Linux.
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if sys.platform == "darwin":
        peak_mb /= 1024  # bytes there

    checks = [
        (
            "example",
            f"{example:.3f} s = {example / baseline:.2f}x start-up",
            example <= EXAMPLE_FACTOR * baseline,
            f"<= {EXAMPLE_FACTOR:g}x",
        ),
        (
            "peak memory",
            f"{peak_mb:.0f} MB",
            peak_mb < MEMORY_LIMIT_MB,
            f"< {MEMORY_LIMIT_MB:g} MB",
        ),
    ]
    print(
        f"start-up (import typer, pydantic, yaml): {baseline:.3f} s "
        f"(median of {2 * RUNS + LARGE_RUNS})"
    )
    print(f"output written under {_scratch_root() or tempfile.gettempdir()}")
    failed = False
    for name, figure, ok, target in checks:
        print(f"{name}: {figure} (target {target}) {'ok' if ok else 'MISSED'}")
        failed |= not ok
    print(f"{POOLS} pools: {large:.3f} s = {large / baseline:.1f}x start-up, {written} files")
    print(
        f"example with the input models built first (the pydantic-reader option, not taken): "
        f"{with_models:.3f} s = {with_models / baseline:.2f}x start-up, "
        f"+{1000 * (with_models - example):.0f} ms"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
