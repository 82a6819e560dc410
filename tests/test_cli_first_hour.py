"""What a new user meets in the first hour, run as they type it: a pipe to `head`, the names
they look for, the hints an unknown name gets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands

register_all_commands()


# --- a closed pipe --------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["profiles"], ["explain", "--list"]])
def test_a_reader_that_left_ends_the_run_quietly(args: list[str]) -> None:
    # `talos-schematic profiles | head -2`, with `head` gone before the first write, so the
    # write meets the closed pipe every time (a live `head` races the writer).
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "schematic", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 0
    assert done.stderr == ""


def test_a_reader_that_stays_reads_everything() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "schematic", "explain", "--list"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("TS001")
    assert len(done.stdout.splitlines()) > 10


# --- profiles shows the aliases -----------------------------------------------------------------


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def test_profiles_shows_each_profiles_aliases_beside_its_name(tmp_path: Path) -> None:
    (tmp_path / "lab.yaml").write_text("name: lab\nplatform: metal\ncpuVendor: amd\n")
    (tmp_path / "lab-gpu.yaml").write_text(
        "name: lab-gpu\naliases: [bench, bench-2]\nplatform: metal\ncpuVendor: amd\n"
    )
    listed = run("profiles", "--profiles", str(tmp_path))
    assert listed.exit_code == 0, listed.stderr
    rows = {row.split()[0]: row for row in listed.stdout.splitlines()}
    # The aliases the README's examples name, findable in the text a user reads.
    assert "kubevirt-l40s (l40s) " in rows["kubevirt-l40s"]
    assert "(hgx-b200-8x, hgx-b200, dgx-b200)" in rows["metal-hgx-b200-8x"]
    assert "(rtx-pro-6000-blackwell-server)" in rows["kubevirt-rtx-pro-6000-blackwell-server"]
    assert "(bench, bench-2)" in rows["lab-gpu"]
    assert "(" not in rows["lab"]  # a profile without aliases shows none
    # Every alias the JSON lists is in the text too.
    documents = json.loads(run("profiles", "--profiles", str(tmp_path), "-f", "json").stdout)
    for document in documents:
        for alias in document.get("aliases") or []:
            assert alias in rows[document["name"]]
