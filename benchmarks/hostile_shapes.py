"""Every reader fed hostile shapes at its kind's default size limit: worst time and peak memory.

Each input kind has its own default limit (``schematic.safe_yaml.INPUT_LIMITS``, the table
``docs/security.md`` shows). This feeds each command the shapes that cost a reader most per
byte, each just under the limit of the kind that command reads (and, for the refusals, the
issue's own reproductions far over it):

- a one-line flow list of one-character items (``[1,1,...]``), a flow list of mappings, a block
  list, a mapping of distinct keys (also: 16,000 unknown keys, located one by one), a stream of
  tiny documents (``---\\na: 1``), random scalars (seeded); each also as a planted output index
  (``generate --out``, ``check --out``, ``triage --against``), refused by its YAML nodes; and
  indexes in the tool's shape up to those nodes (of pools, of files), and planted
  journals, at the same limit;
- for plain-text logs: blank lines, short lines, lines that each hold a keyword, lines that each
  make a signal, continuation lines, a long whitespace run inside a value (also in a described
  pod); for lspci text: one node's device line repeated, a long whitespace run before a class
  code, in an ``lspci -mm`` field and in a file marker;
- a factory answering 1 M extension names (32 MB of JSON) to ``extensions --live``;
- ``triage`` of a ``nodes.json`` of 500 and 2,000 nodes with 100 logs named after nodes, and
  ``--against`` 1,000 pools with 1,000 nodes (labelled, or named after their pools) and an
  index of 16,000 pools: names joined by lookup, not one scan per file or node.

Target: every run of every command within 5 s and 500 MB (peak resident set of the command's
process) with a 20 % margin: 4 s and 400 MB. Also at their kinds' limits: log lines each
naming another node; JSON evidence (64 MiB) of minimal pods each on its own node, and of
empty objects; a metrics answer (4 MiB) of one series of samples, and of a series per node.
The time is judged on the wall clock on an idle machine, and on the process's CPU time
when the load average is above the number of cores (each command runs on one thread, so on an
idle machine the two agree; a busy machine adds waits for a core to the wall clock). Each
command runs as its own child, measured from a small launcher; one run each (the figures are
worst cases, not medians). Prints the worst shape per command and the load average before and
after.

    .venv/bin/python benchmarks/hostile_shapes.py
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from schematic.safe_yaml import BUDGET_OF, INPUT_LIMITS, InputKind

ROOT = Path(__file__).resolve().parents[1]
SECONDS = 5.0
PEAK_MB = 500.0
# Each budget is met with this much to spare: a figure within it only on a quiet day is not.
MARGIN = 0.2
MIB = 1 << 20
SEED = 38

_LAUNCH = """
import resource, subprocess, sys, time
started = time.perf_counter()
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
elapsed = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
peak = usage.ru_maxrss / 1024 if sys.platform != "darwin" else usage.ru_maxrss / 1024 / 1024
print(code, elapsed, usage.ru_utime + usage.ru_stime, peak)
"""


def _run(command: list[str], env: dict[str, str] | None = None) -> tuple[int, float, float, float]:
    """Exit code, wall seconds, CPU seconds and peak MB of one run of ``command``."""
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCH, *command],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        check=True,
    )
    code, seconds, cpu, peak = done.stdout.split()
    return int(code), float(seconds), float(cpu), float(peak)


def _repeat(unit: str, size: int, head: str = "", tail: str = "") -> str:
    return head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail


def yaml_shapes(size: int, rng: random.Random) -> dict[str, str]:
    """The YAML shapes that cost a composer most per byte, each of about ``size`` bytes."""
    keys: list[str] = []
    total = 0
    while total < size - 16:
        line = f"k{len(keys)}: 1\n"
        keys.append(line)
        total += len(line)
    words: list[str] = []
    total = 0
    while total < size - 16:
        word = "".join(rng.choice("abcdefghij0123456789") for _ in range(rng.randint(1, 6)))
        words.append(word)
        total += len(word) + 1
    return {
        "flow list of 1-character items": _repeat("1,", size, "[", "1]"),
        "flow list of mappings": _repeat("{a: 1},", size, "[", "{}]"),
        "block list": _repeat("- 1\n", size),
        "distinct keys": "".join(keys),
        "tiny documents": _repeat("---\na: 1\n", size),
        "random scalars (seeded)": "[" + ",".join(words) + "]",
    }


def index_shapes(size: int, rng: random.Random) -> dict[str, str]:
    """The YAML shapes as an output index: a mapping marked as the tool's."""
    head = "generator: talos-schematic\n"
    shapes = yaml_shapes(size - 64, rng)
    return {
        shape: head
        + (
            text
            if shape in ("distinct keys", "tiny documents")
            else f"x:\n{text}"
            if text.startswith("-")
            else f"x: {text}"
        )
        for shape, text in shapes.items()
    }


_INDEX_HEAD = (
    "generator: talos-schematic\ncluster: c\ntalos: v1.13.9\n"
    "imageFactoryURL: https://factory.talos.dev\nlayout: osimage\ncozystack: osimage\n"
    "kinds:\n- cozystack\n"
)


def _lines_within(size: int, line: Callable[[int], str], most: int) -> str:
    """Lines ``line(0)``, ``line(1)``... while they fit ``size`` bytes, at most ``most``."""
    lines: list[str] = []
    total = 0
    while len(lines) < most:
        text = line(len(lines))
        if total + len(text) > size:
            break
        lines.append(text)
        total += len(text)
    return "".join(lines)


def well_formed_index_shapes(size: int, nodes: int) -> dict[str, str]:
    """Indexes in the tool's own shape, of about ``size`` bytes and fewer than ``nodes`` YAML
    nodes: what the readers do with every entry once the index is composed. A pool of one
    extension is 8 nodes, a file 2."""
    pool = "- name: gpu-pool-{0}\n  schematicID: '{0:064x}'\n  extensions:\n  - e\n"
    room = size - len(_INDEX_HEAD) - 200
    pools = _lines_within(room, pool.format, nodes // 8 - 50)
    files = _lines_within(room, lambda n: f"  p{n % 1000}/f{n}.yaml: '{n:064x}'\n", nodes // 2 - 50)
    return {
        "pools to the node budget": f"{_INDEX_HEAD}pools:\n{pools}files: {{}}\n",
        "files to the node budget": (
            f"{_INDEX_HEAD}pools:\n{pool.format(0).replace('gpu-pool-0', 'gpu')}files:\n{files}"
        ),
    }


def journal_shapes(size: int) -> dict[str, str]:
    """A planted journal of about ``size`` bytes: entries the recovery looks each up for."""
    digest = "ab" * 32
    shapes = {
        "journal: temporary files of writes": lambda n: (
            f"write {digest} p{n % 500}/f{n}.yaml\n"
            f"temp {digest} p{n % 500}/.f{n}.yaml.0123abcd.tmp\n"
        ),
        "journal: folders made": lambda n: f"made 1:{n} p{n}\ndir p{n}\n",
        "journal: removals": lambda n: f"remove {digest} p{n % 500}/f{n}.yaml\n",
    }
    head = "talos-schematic journal 2\n"
    return {
        shape: head + _lines_within(size - len(head), line, size) for shape, line in shapes.items()
    }


def log_shapes(size: int) -> dict[str, str]:
    signal = "[ 87.300000] NVRM: RmInitAdapter failed! (0x22:0x56:884)\n"
    return {
        "blank lines": "\n" * size,
        "short lines": _repeat("a\n", size),
        "a keyword on every line": _repeat("NVIDIA x\n", size),
        "a signal on every line": _repeat(signal, size),
        "a signal on every short line": _repeat("OOMKilled\n", size),
        "continuation lines": _repeat("    NVRM: x\n", size, "[ 1.0] NVRM: start\n"),
        "continuation lines, a signal on the last": _repeat(
            "    NVRM: x\n", size, "[ 1.0] NVRM: start\n", "    NVRM: RmInitAdapter failed\n"
        ),
        "continuation lines of a signal": _repeat(
            "    NVRM: x\n", size, "[ 1.0] NVRM: RmInitAdapter failed\n"
        ),
        "blank lines, then a signal": "\n" * (size - len(signal)) + signal,
        # Each line names another node: 150,000 machines for the diagnoses (were 45 s).
        "lines each naming another node": _distinct_nodes(size),
        # The device plugin's config header: each makes the next 220 lines read.
        "a config header on every line": _repeat("Running with config:\n", size),
        "a config header every 221 short lines": _repeat(
            "Running with config:\n" + "a\n" * 220, size
        ),
        # A keyword a pattern searches a long run after, filling every message up to the
        # 8 KiB a message is read to (an unbounded run made this 5.5 s).
        "8 KiB lines of one keyword": _repeat(("nv-fabricmanager " * 480)[:8150] + "\n", size),
        # A lazy run before a whitespace run made these quadratic (a 40 kB run took 5 s).
        "one line, a whitespace run in a value": "State : a" + " " * (size - 12) + "b\n",
        "kubectl describe pod, one keyword repeated in a message": _DESCRIBE_POD
        + "    Message: "
        + _repeat("nv-fabricmanager ", size - len(_DESCRIBE_POD) - 16)
        + "\n",
        "kubectl describe pod, a whitespace run in a value": _DESCRIBE_POD
        + "    Message: a"
        + " " * (size - len(_DESCRIBE_POD) - 17)
        + "b\n",
    }


_DESCRIBE_POD = "Name: p\nNamespace: d\nNode: n1/10.0.0.1\nContainers:\n  c:\n"


def _distinct_nodes(size: int) -> str:
    lines: list[str] = []
    total = 0
    while True:
        line = f"w{len(lines):07d}: {_WAIT}"
        if total + len(line) > size:
            return "".join(lines)
        lines.append(line)
        total += len(line)


def metrics_shapes(size: int) -> dict[str, str]:
    """Prometheus query answers of about ``size`` bytes: one series of many samples, and a
    series per node (each naming its node)."""

    def answer(series: list[str]) -> str:
        return (
            '{"status":"success","data":{"resultType":"matrix","result":['
            + ",".join(series)
            + "]}}"
        )

    sample = '[1700000000,"1000000"]'
    one = (
        '{"metric":{"__name__":"node_memory_MemAvailable_bytes","node":"w1"},"values":['
        + ",".join([sample] * ((size - 200) // (len(sample) + 1)))
        + "]}"
    )
    each = (
        '{{"metric":{{"__name__":"node_boot_time_seconds","node":"w{0:07d}"}},'
        '"values":[[1700000000,"1699990000"]]}}'
    )
    count = (size - 100) // (len(each.format(0)) + 1)
    return {
        "one series of samples": answer([one]),
        "a series per node": answer([each.format(n) for n in range(count)]),
    }


def json_shapes(size: int) -> dict[str, str]:
    """``kubectl get -o json`` lists of about ``size`` bytes: minimal pods, each on its own
    node, and a list of empty objects (each item read on its own)."""
    pod = (
        '{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p{0}","namespace":"d"}},'
        '"spec":{{"nodeName":"w{0:07d}"}},"status":{{"containerStatuses":[{{"restartCount":1}}]}}}}'
    )
    items: list[str] = []
    total = 100
    while total + len(pod.format(len(items))) + 1 < size:
        items.append(pod.format(len(items)))
        total += len(items[-1]) + 1
    return {
        "minimal pods, a node each": '{"apiVersion":"v1","kind":"List","items":['
        + ",".join(items)
        + "]}",
        "empty objects": '{"items":[' + ",".join(["{}"] * ((size - 20) // 3)) + "]}",
    }


def lspci_shapes(size: int) -> dict[str, str]:
    line = (
        "00:01.0 VGA compatible controller [0300]: NVIDIA Corporation AD102GL [L40S] "
        "[10de:26b9] (rev a1)\n"
    )
    return {
        "one device line repeated": _repeat(line, size),
        # A lazy run before a whitespace run, or shlex on a long field, made these quadratic.
        "a whitespace run before the class code": "00:01.0 VGA"
        + " " * (size - 90)
        + "x [0300]: NVIDIA Corporation AD102GL [L40S] [10de:26b9]\n",
        "a whitespace run in an lspci -mm field": '00:01.0 "VGA'
        + " " * (size - 80)
        + 'x [0300]" "NVIDIA Corporation [10de]" "AD102GL [26b9]"\n',
        "a whitespace run in a file marker": "==> a"
        + " " * (size - 100)
        + "b <==\n00:01.0 VGA compatible controller [0300]: NVIDIA Corporation [10de:26b9]\n",
    }


class _Catalogue(BaseHTTPRequestHandler):
    """A factory whose extension list is a million names (12 MB), well-formed JSON."""

    body = b""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        # The tool stops reading at its limit and hangs up: that is the behaviour measured.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(self.body)


# Talos's own line for a service a boot waits for (as tests/data/triage/ts201-lldpd-waits).
_WAIT = (
    "[talos] task startAllServices (1/1): waiting for 1 services: service "
    '"ext-nvidia-persistenced" to be up\n'
)


def _nodes(count: int, name: str = "gpu-pool") -> list[dict[str, Any]]:
    """Node objects as `kubectl get nodes -o json` prints them (the fields triage reads)."""
    nodes = []
    for number in range(count):
        node_name = f"{name}-{number % 1000}-w{number:05d}"
        address = f"10.{number // 65536}.{number // 256 % 256}.{number % 256}"
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node_name, "labels": {"kubernetes.io/hostname": node_name}},
                "spec": {"providerID": f"kubevirt://{node_name}"},
                "status": {
                    "addresses": [
                        {"address": address, "type": "InternalIP"},
                        {"address": node_name, "type": "Hostname"},
                    ],
                    "conditions": [{"status": "True", "type": "Ready"}],
                },
            }
        )
    return nodes


def _write_nodes(path: Path, nodes: list[dict[str, Any]]) -> None:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))


def joined(folder: Path, count: int) -> list[str]:
    """A nodes.json of ``count`` nodes and 100 console logs named after nodes."""
    folder.mkdir()
    nodes = _nodes(count)
    _write_nodes(folder / "nodes.json", nodes)
    for number in range(100):
        name = nodes[number * count // 100]["metadata"]["name"]
        lines = "".join(f"[{second:8d}.000000] {_WAIT}" for second in range(1, 40))
        (folder / f"{name}.log").write_text(lines)
    return [str(folder)]


def index(folder: Path, pools: int) -> Path:
    """An output directory whose index lists ``pools`` pools (their extensions when the index
    stays under its size limit with them)."""
    folder.mkdir()
    extensions = "  extensions:\n  - siderolabs/nvidia-open-gpu-kernel-modules-production\n"
    entries = "".join(
        f"- name: pool-{number}\n  schematicID: '{number:064x}'\n"
        + (extensions if pools <= 1000 else "")
        for number in range(pools)
    )
    (folder / "index.yaml").write_text(
        "# Generated by talos-schematic generate; regenerate instead of editing.\n"
        "generator: talos-schematic\ncluster: c\ntalos: v1.13.9\n"
        "imageFactoryURL: https://factory.talos.dev\nlayout: talos\nkinds:\n- schematic\n"
        f"pools:\n{entries}files: {{}}\n"
    )
    return folder


def against(folder: Path, pools: int, count: int, *, labelled: bool = True) -> list[str]:
    """``nodes.json`` of ``count`` nodes named ``gpu-pool-<n>-w<number>`` and ``--against`` an
    index of ``pools`` pools ``pool-<n>``: each node's pool by its label, or (``labelled``
    false) found as a token of its name."""
    folder.mkdir()
    out = index(folder / "out", pools)
    nodes = _nodes(count)
    for number, node in enumerate(nodes):
        if labelled:
            node["metadata"]["labels"]["node.kubernetes.io/pool"] = f"pool-{number % pools}"
        # Every other node runs another schematic than its pool commits.
        running = f"{number % pools + number % 2:064x}"
        node["metadata"]["annotations"] = {"extensions.talos.dev/schematic": running}
    _write_nodes(folder / "nodes.json", nodes)
    return [str(folder / "nodes.json"), "--against", str(out)]


def main() -> int:
    tool = [sys.executable, "-m", "schematic"]
    rng = random.Random(SEED)
    # Per command: the worst CPU seconds, the wall seconds of that run, the peak MB, the shape.
    worst: dict[str, tuple[float, float, float, str]] = {}
    load_before = os.getloadavg()

    def measure(
        name: str,
        command: list[str],
        shape: str,
        env: dict[str, str] | None = None,
        ends: tuple[int, ...] | None = None,
    ) -> None:
        code, seconds, cpu, peak = _run([*tool, *command], env)
        # lint and triage end 4 when nothing could be checked: what most of these shapes hold.
        if ends is None:
            ends = (0, 1, 3, 4) if name.startswith(("triage", "lint")) else (0, 1, 3)
        if code not in ends:
            raise SystemExit(f"{name} on {shape}: exit {code}")
        previous = worst.get(name)
        top = max(peak, previous[2] if previous else 0.0)
        if previous is None or cpu > previous[0]:
            worst[name] = (cpu, seconds, top, shape)
        else:
            worst[name] = (previous[0], previous[1], top, previous[3])

    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)

        def write(name: str, text: str) -> str:
            path = work / name
            path.write_text(text)
            return str(path)

        # The YAML shapes at each limit a command reads under, made once per size.
        made: dict[int, dict[str, str]] = {}

        def shapes_under(kind: InputKind) -> dict[str, str]:
            size = INPUT_LIMITS[kind] - 64
            if size not in made:
                made[size] = yaml_shapes(size, random.Random(f"{SEED}-{size}"))
                made[size]["16,000 unknown keys"] = "".join(f"k{i}: 1\n" for i in range(16_000))
            return made[size]

        (work / "empty.yaml").write_text("a: 1\n")
        cluster = work / "cluster.yaml"
        cluster.write_text(
            "cluster: c\nnamespace: tenant-c\ncozystack: {version: osimage}\n"
            "talos: {version: v1.13.9}\npools:\n  - {name: gpu, profile: ./profile.yaml}\n"
        )
        # Each command, the kind of input it reads the file as, and its words.
        commands: dict[str, tuple[InputKind, Callable[[str], list[str]]]] = {
            "id (schematic)": (InputKind.SCHEMATIC, lambda f: ["id", f]),
            "generate (cluster file)": (InputKind.CLUSTER, lambda f: ["generate", f]),
            "check (cluster file)": (
                InputKind.CLUSTER,
                lambda f: ["check", f, "--out", str(work / "out")],
            ),
            "upgrade (cluster file)": (
                InputKind.CLUSTER,
                lambda f: ["upgrade", f, "--to", "v1.13.9"],
            ),
            "lint (lint input)": (InputKind.LINT, lambda f: ["lint", f]),
            "lint --config-patch (config patch)": (
                InputKind.CONFIG_PATCH,
                lambda f: ["lint", "--config-patch", f"@{f}", str(work / "empty.yaml")],
            ),
            "lint --hardware (profile)": (
                InputKind.PROFILE,
                lambda f: ["lint", "--hardware", f, str(work / "empty.yaml")],
            ),
            "detect (YAML hardware dump)": (InputKind.HARDWARE_DOCUMENTS, lambda f: ["detect", f]),
            "detect --against (profile)": (
                InputKind.PROFILE,
                lambda f: ["detect", str(work / "lspci.txt"), "--against", f],
            ),
            "init --pool (profile)": (
                InputKind.PROFILE,
                lambda f: ["init", str(work / "init.yaml"), "--pool", f"gpu={f}"],
            ),
            "triage (YAML evidence)": (InputKind.EVIDENCE_DOCUMENTS, lambda f: ["triage", f]),
        }
        (work / "lspci.txt").write_text(
            "00:01.0 VGA compatible controller [0300]: NVIDIA Corporation AD102GL [L40S] "
            "[10de:26b9] (rev a1)\n"
        )
        for name, (kind, command) in commands.items():
            for index, (shape, text) in enumerate(shapes_under(kind).items()):
                if name.startswith("triage"):
                    text = (
                        "kind: Pod\n" + text
                        if shape != "tiny documents"
                        else text.replace("a: 1", "kind: Pod")
                    )
                path = write(f"in-{index}.yaml", text)
                measure(name, command(path), shape)
        # The profile named by a cluster file: `profile: ./f`.
        for shape, text in shapes_under(InputKind.PROFILE).items():
            (work / "profile.yaml").write_text(text)
            measure("generate with profile: ./f (profile)", ["generate", str(cluster)], shape)

        # An output directory's index just under its own limit, in each shape: what a planted
        # index costs each reader of it before it is refused (exit 1: the index is the tool's
        # by its marker, and not one the tool writes; by its YAML nodes, most of them).
        record = INPUT_LIMITS[InputKind.OUTPUT_RECORD] - 64
        owned = work / "owned.yaml"
        owned.write_text(
            "cluster: c\nnamespace: tenant-c\ncozystack: {version: osimage}\n"
            "talos: {version: v1.13.9}\n"
            "pools:\n  - {name: gpu, profile: kubevirt-l40s}\n"
        )
        out = work / "index-out"
        console = write("console.log", "[    5.559842] NVRM: RmInitAdapter failed!\n")
        readers_of_the_index = (
            ("generate --out (output index)", ["generate", str(owned), "--out", str(out)]),
            ("check --out (output index)", ["check", str(owned), "--out", str(out)]),
            ("triage --against (output index)", ["triage", console, "--against", str(out)]),
        )

        def planted(name: str, text: str) -> None:
            """``out`` holding ``text`` as ``name`` alone (a run it let through wrote more),
            and some of the pool folders a planted journal names."""
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            for number in range(0, 500, 50):
                (out / f"p{number}").mkdir()
            (out / name).write_text(text)

        for shape, text in index_shapes(record, rng).items():
            for name, words in readers_of_the_index:
                planted("index.yaml", text)
                measure(name, words, shape, ends=(1,))
        # Within the node budget, in the tool's own shape: composed, then each entry acted on.
        budget = BUDGET_OF[InputKind.OUTPUT_RECORD].max_nodes or 0
        for shape, text in well_formed_index_shapes(record, budget).items():
            for name, words in readers_of_the_index:
                planted("index.yaml", text)
                measure(name, words, shape)
        # A planted journal just under the same limit: a killed run's, found by the next.
        for shape, text in journal_shapes(record).items():
            for name, words in readers_of_the_index[:2]:
                planted(".talos-schematic-journal", text)
                measure(name, words, shape)

        # The reproductions, far over the limits: refused at once.
        measure(
            "id (schematic)",
            ["id", write("flow14.yaml", "[" + "1," * 7_000_000 + "1]")],
            "14 MB one-line flow list (refused)",
        )
        measure(
            "detect (YAML hardware dump)",
            ["detect", write("docs16.yaml", _repeat("---\na: 1\n", 16 * MIB))],
            "16 MiB of tiny documents (refused)",
        )
        million = "".join(f"k{i}: 1\n" for i in range(1_000_000))
        measure(
            "lint --config-patch (config patch)",
            [
                "lint",
                "--config-patch",
                f"@{write('keys1m.yaml', million)}",
                str(work / "empty.yaml"),
            ],
            "1 M keys (refused)",
        )

        # Text inputs just under their kinds' limits.
        logs = log_shapes(INPUT_LIMITS[InputKind.EVIDENCE] - 64)
        for index, (shape, text) in enumerate(logs.items()):
            measure("triage (text evidence)", ["triage", write(f"log-{index}.log", text)], shape)
        for index, (shape, text) in enumerate(
            lspci_shapes(INPUT_LIMITS[InputKind.HARDWARE] - 64).items()
        ):
            dump = write(f"nodes-{index}.txt", text)
            measure("detect (lspci text dump)", ["detect", dump], shape)

        # JSON evidence and a metrics answer, each just under its kind's limit.
        for kind, shapes_of in (
            (InputKind.EVIDENCE_JSON, json_shapes),
            (InputKind.METRICS, metrics_shapes),
        ):
            for index, (shape, text) in enumerate(shapes_of(INPUT_LIMITS[kind] - 64).items()):
                path = write(f"{kind.name.lower()}-{index}.json", text)
                measure(f"triage ({kind.value})", ["triage", path], shape)

        # Many nodes named across files, and --against a large index: joined by lookup.
        for shape, args in {
            "500 nodes and 100 node-named logs": joined(work / "j500", 500),
            "2,000 nodes and 100 node-named logs": joined(work / "j2000", 2000),
            "--against 1,000 pools, 1,000 labelled nodes": against(work / "a1000", 1000, 1000),
            "--against 1,000 pools, 1,000 nodes named after them": against(
                work / "n1000", 1000, 1000, labelled=False
            ),
            "--against 16,000 pools, one node": against(work / "a16000", 16000, 1),
        }.items():
            measure("triage (nodes joined across files)", ["triage", *args], shape)

        # A factory answering a million extension names.
        _Catalogue.body = json.dumps(
            [{"name": f"siderolabs/x{i}"} for i in range(1_000_000)]
        ).encode()
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Catalogue)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}"
            measure(
                "extensions --live (factory answer)",
                ["extensions", "--talos", "v1.13.9", "--live", "--factory", url],
                f"1 M extension names ({len(_Catalogue.body) / 1e6:.0f} MB)",
                {"XDG_CACHE_HOME": str(work / "cache")},
            )
        finally:
            server.shutdown()

    load_after = os.getloadavg()
    failed = False
    busy = max(load_before[0], load_after[0]) > (os.cpu_count() or 1)
    for name, (cpu, seconds, peak, shape) in worst.items():
        # Each command is one thread: on an idle machine its wall time is its CPU time. On a
        # busy one the wall time also counts the waits for a core, so the CPU time is judged.
        ok = (cpu if busy else seconds) <= (1 - MARGIN) * SECONDS and peak <= (1 - MARGIN) * PEAK_MB
        failed |= not ok
        print(
            f"{name}: worst {cpu:.2f} s CPU ({seconds:.2f} s wall; {shape}), peak {peak:.0f} MB "
            f"(budget {SECONDS:g} s, {PEAK_MB:g} MB, less {MARGIN:.0%}) {'ok' if ok else 'MISSED'}"
        )
    judged = "CPU time (the machine was busy)" if busy else "wall time"
    print(
        f"load average before {load_before[0]:.1f}, after {load_after[0]:.1f} "
        f"on {os.cpu_count()} cores; judged on {judged}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
