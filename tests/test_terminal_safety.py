"""Nothing from outside rewrites the terminal: evidence, file names and arguments reach stdout
and stderr with their control characters, C1 controls and bidirectional overrides escaped.

Evidence comes from tenant workloads (pod logs, serial consoles), file names from whoever made
the folder, arguments from a pasted command line: each may hold ESC (an OSC 52 clipboard write,
a screen clear), a one-byte CSI, a carriage return or a right-to-left override. Text and
Markdown show them as escapes (``\\x1b``, ``\\u009b``, ``\\u202e``); JSON and SARIF carry the
exact text, as JSON escapes.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.doctor.triage import triage_paths
from schematic.errors import printable

register_all_commands()

# What must never reach a terminal raw, written out here rather than taken from the code: C0
# controls but tab and line feed, DEL, C1, and the bidirectional overrides, isolates and marks.
FORBIDDEN = re.compile(
    "["
    + "".join(chr(c) for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in "\t\n")
    + "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069]"
)
# An OSC 52 clipboard write, a screen clear, a one-byte CSI, a carriage return, a NUL, DEL and
# a right-to-left override: what a hostile pod log would print.
HOSTILE = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\x9b31m\x00\x7f\u202e\u2066\x08"
# A line the triage log reader turns into a diagnosis (TS111: proprietary modules on a GPU
# that needs the open ones), with the hostile text at its end.
NVRM = (
    "[   87.300000] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85) installed in this "
    "system requires use of the NVIDIA open kernel modules. "
)


def run(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    previous = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(
            app, list(args), env={"TALOS_SCHEMATIC_FACTORY": "http://127.0.0.1:9"}
        )
    finally:
        os.chdir(previous)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def clean(*streams: str) -> None:
    for text in streams:
        found = FORBIDDEN.search(text)
        assert found is None, f"{found.group()!r} reached the terminal: {text!r}"


def test_printable_escapes_every_terminal_control_and_keeps_the_rest() -> None:
    text = "".join(chr(c) for c in range(0x2100)) + HOSTILE
    shown = printable(text)
    assert FORBIDDEN.search(shown) is None
    assert "\t" in shown and "\n" in shown and "é" in shown
    assert printable("a\nb\tc", one_line=True) == "a\\nb\\tc"
    # The \u escapes of C1 and bidirectional controls mean the same characters in JSON.
    assert json.loads(f'"{printable(chr(0x9B) + chr(0x202E))}"') == "\x9b\u202e"


def _evidence_texts(folder: Path) -> list[str]:
    """The evidence lines as the library reads them (a reader may drop colour sequences)."""
    report = triage_paths([str(folder)])
    return [e.text for d in report.diagnoses for e in d.evidence]


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_triage_text_and_markdown_escape_evidence_and_file_names(tmp_path: Path, fmt: str) -> None:
    name = "con\x1b[31msole\u202e.log"
    (tmp_path / name).write_text(NVRM + HOSTILE + "\n")
    (tmp_path / "unknown\x1b]0;x\x07.txt").write_text("nothing here\n")
    code, out, err = run("triage", "--format", fmt, str(tmp_path))
    assert code == 3, err
    clean(out, err)
    assert "TS1" in out
    [text] = _evidence_texts(tmp_path)
    assert "\u202e" in text and "\x9b" in text
    assert printable(text, one_line=True).replace("|", "\\|").replace("`", "'") in out
    assert "\\u202e" in out and "\\u009b" in out
    assert "unknown\\x1b]0;x\\x07.txt" in err


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_triage_json_and_sarif_carry_the_exact_text(tmp_path: Path, fmt: str) -> None:
    (tmp_path / "console.log").write_text(NVRM + HOSTILE + "\n")
    code, out, err = run("triage", "--format", fmt, str(tmp_path))
    assert code == 3, err
    clean(out, err)
    document = json.loads(out)
    if fmt == "json":
        texts = [e["text"] for d in document["diagnoses"] for e in d["evidence"]]
    else:
        texts = [
            location["message"]["text"]
            for result in document["runs"][0]["results"]
            for location in result["locations"]
        ]
    assert texts == _evidence_texts(tmp_path)


def test_triage_stderr_summary_keeps_a_file_name_with_a_line_break_on_one_line(
    tmp_path: Path,
) -> None:
    (tmp_path / "a\nb.txt").write_text("nothing here\n")
    code, _, err = run("triage", str(tmp_path))
    assert code == 4  # nothing read: not judged
    assert err.count("\n") == 1 and "a\\nb.txt" in err


@pytest.mark.parametrize("option", ["--cluster", "--namespace", "--node"])
@pytest.mark.parametrize(
    "value", ["x; touch /tmp/P #", "$(reboot)", "a'b", "gpu\x1b[2J", "UPPER", "-n", ""]
)
def test_triage_commands_refuse_what_cannot_be_a_kubernetes_name(option: str, value: str) -> None:
    code, out, err = run("triage", "--commands", option, value)
    assert code == 2
    assert out == ""
    clean(err)


@pytest.mark.parametrize(
    ("cluster", "namespace", "node"),
    [("gpu", "tenant-a", "10.244.3.17"), ("b200", "tenant-root", "fd00::7"), ("a", "b", "w-1.lan")],
)
def test_triage_commands_paste_names_the_shell_reads_back_unchanged(
    cluster: str, namespace: str, node: str
) -> None:
    code, out, _ = run(
        "triage", "--commands", "--cluster", cluster, "--namespace", namespace, "--node", node
    )
    assert code == 0
    for line in out.splitlines():
        if line and not line.startswith("#"):
            # Every command splits into words the shell would see: nothing unbalanced.
            shlex.split(line, comments=True)
    assert f"kubectl -n {namespace} get vmi" in out
    assert f'talosctl --talosconfig "$creds/talosconfig" config add {cluster} ' in out
    assert f"-e {node} -n {node}'" in out


def test_generate_and_id_keep_a_file_name_with_a_line_break_on_its_line(tmp_path: Path) -> None:
    example = Path(__file__).parent.parent / "examples" / "cluster.yaml"
    out = tmp_path / "a\nb\x1b[2J"
    code, stdout, err = run("generate", str(example), "--out", str(out))
    assert code == 0, err
    clean(stdout, err)
    [summary] = [line for line in err.splitlines() if "files written to" in line]
    assert "a\\nb\\x1b[2J" in summary
    schematic = tmp_path / "s\nx\u202e.yaml"
    schematic.write_text("customization: {}\n")
    code, stdout, err = run("id", str(schematic))
    assert code == 0, err
    clean(stdout, err)
    assert len(stdout.splitlines()) == 1 and "s\\nx\\u202e.yaml" in stdout


# Each command that names its input, with what it needs besides the file: none of them may
# talk to a factory here (verify fails on the file before it would).
NAMING_COMMANDS = {
    "id": [],
    "generate": [],
    "check": ["--out", "out"],
    "lint": [],
    "triage": [],
    "detect": [],
    "verify": ["--factory", "http://127.0.0.1:9"],
    "upgrade": ["--to", "v1.13.9"],
}
# What makes each command name the file: YAML it cannot parse, bytes that are not UTF-8 text,
# and a file that is not there.
BAD_INPUTS = {"not YAML": b"a: [\n", "not text": b"\xff\xfe\x00x\n", "missing": None}


@pytest.mark.parametrize("command", sorted(NAMING_COMMANDS))
@pytest.mark.parametrize("bad", sorted(BAD_INPUTS))
def test_a_file_name_with_a_line_break_stays_on_the_line_of_its_message(
    tmp_path: Path, command: str, bad: str
) -> None:
    name = "a\nb\x1b[2J.yaml"
    content = BAD_INPUTS[bad]
    if content is not None:
        (tmp_path / name).write_bytes(content)
    code, out, err = run(command, name, *NAMING_COMMANDS[command], cwd=tmp_path)
    assert code != 0 or command in ("lint", "triage"), (code, out, err)
    clean(out, err)
    shown = "a\\nb\\x1b[2J.yaml"
    # Whatever names the file names it whole, on one line: no line starts inside the name,
    # and the message (or lint's and triage's summary) is one line.
    for line in (*out.splitlines(), *err.splitlines()):
        assert not line.startswith("b\\x1b"), (out, err)
    assert shown in out + err, (out, err)
    # (lint's fixed "nothing checked" line, which names no file, aside)
    assert len([line for line in err.splitlines() if "nothing checked" not in line]) == 1, err


@pytest.mark.parametrize(
    "args",
    [
        ["generate", "cluster.yaml", "--out", "o\nx\x1b[2J"],
        ["check", "cluster.yaml", "--out", "o\nx\x1b[2J"],
        ["verify", "--out", "o\nx\x1b[2J", "--factory", "http://127.0.0.1:9"],
        ["triage", "console.log", "--against", "o\nx\x1b[2J"],
    ],
)
def test_an_output_directory_named_with_a_line_break_is_named_on_one_line(
    tmp_path: Path, args: list[str]
) -> None:
    # Every refusal about an output directory names a path inside it.
    example = Path(__file__).parent.parent / "examples" / "cluster.yaml"
    (tmp_path / "cluster.yaml").write_text(example.read_text())
    (tmp_path / "console.log").write_text(NVRM + "\n")
    (tmp_path / "o\nx\x1b[2J").mkdir()
    (tmp_path / "o\nx\x1b[2J" / "index.yaml").write_text("foo: 1\n")
    code, out, err = run(*args, cwd=tmp_path)
    assert code == 1, (out, err)
    clean(out, err)
    assert len(err.splitlines()) == 1, err
    assert "o\\nx\\x1b[2J" in err and "not written by talos-schematic" in err
