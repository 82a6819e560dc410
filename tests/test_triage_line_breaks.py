"""A log whose lines end in a carriage return alone (a serial console captured by a terminal
program, a file saved with old Mac line ends) is read line by line, however long: read as one
line it was cut at 64 KiB, and the evidence after the cut was read as nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from schematic.doctor.triage import triage_paths

# The NVRM line of tests/test_terminal_safety.py: TS103 (the GPU needs the open modules).
NVRM = (
    "[   87.300000] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85) installed in this "
    "system requires use of the NVIDIA open kernel modules."
)
FILLER = "[    1.000000] pci 0000:00:02.0: [1af4:1041] type 00 class 0x020000 PCIe Endpoint"


@pytest.mark.parametrize("lines", [10, 3000])  # under and over 64 KiB
def test_a_log_of_carriage_returns_alone_is_read_to_its_end(tmp_path: Path, lines: int) -> None:
    console = tmp_path / "console.log"
    console.write_bytes("\r".join([FILLER] * lines + [NVRM, ""]).encode())
    report = triage_paths([str(console)])
    assert [d.code for d in report.diagnoses] == ["TS103"]
    [evidence] = report.diagnoses[0].evidence[:1]
    assert (evidence.file, evidence.line) == (str(console), lines + 1)
