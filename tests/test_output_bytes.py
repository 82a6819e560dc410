"""Escaping is for terminals: a pipe or file gets the data itself; a file name that is no
UTF-8 is shown escaped, never as a raw byte and never as a traceback.

Run as real processes, since what matters is whether stdout is a terminal and how the locale
encodes it: `generate -f schematic > f` must hold the bytes `--out` writes even when a kernel
argument holds U+202E (a right-to-left override), and a file named with the byte 0x9b (a
one-byte CSI on a terminal) must reach neither stdout raw nor a strict UTF-8 encoder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from schematic.errors import printable

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "cluster.yaml"
DMESG = ROOT / "tests" / "data" / "triage" / "ts201-lldpd-waits" / "dmesg.txt"


def _run(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "schematic", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        check=False,
    )


def test_a_piped_schematic_holds_the_bytes_out_writes(tmp_path: Path) -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert "kernelArgs: [console=ttyS0]" in text
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(text.replace("[console=ttyS0]", '[console=ttyS0, "x=a\u202eb"]'))
    piped = _run("generate", str(cluster), "-f", "schematic", "--pool", "l40s", cwd=tmp_path)
    assert piped.returncode == 0, piped.stderr
    written = _run("generate", str(cluster), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    on_disk = (tmp_path / "out" / "l40s" / "schematic.yaml").read_bytes()
    assert "x=a\u202eb".encode() in on_disk
    # stdout names the pool on a first comment line; the rest is the file.
    assert piped.stdout.split(b"\n", 1)[1] == on_disk


def test_printable_escapes_a_byte_a_file_name_decoded_to() -> None:
    name = b"node-\x9b1.log".decode("utf-8", "surrogateescape")
    assert printable(name) == "node-\\udc9b1.log"


@pytest.mark.parametrize(
    "env",
    [
        {"LC_ALL": "C"},
        {"LC_ALL": "C.UTF-8"},
        {"LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8:strict"},
    ],
)
@pytest.mark.parametrize("command", ["triage", "id"])
def test_a_file_name_that_is_no_utf8_is_shown_escaped(
    tmp_path: Path, env: dict[str, str], command: str
) -> None:
    folder = tmp_path / "evidence"
    folder.mkdir()
    name = os.fsencode(folder) + b"/node-\x9b1.log"
    with open(name, "wb") as handle:
        handle.write(DMESG.read_bytes())
    done = _run(
        command, str(folder) if command == "triage" else os.fsdecode(name), cwd=tmp_path, **env
    )
    output = done.stdout + done.stderr
    assert b"Traceback" not in output
    assert b"\x9b" not in output
    assert b"node-\\udc9b1.log" in output
    assert done.returncode == (3 if command == "triage" else 1), output
