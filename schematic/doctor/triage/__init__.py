"""`talos-schematic triage`: name the failure from what a broken cluster shows.

    files ─> readers (one per source format, chosen by content) ─> signals ─> diagnose ─> formats
             (readers/)                                            (signals)  (diagnose)  (formats)

The inputs are what can be collected with standard tools from a cluster that is already broken
— serial consoles, ``talosctl dmesg``/``get``/``services``/``logs``, ``kubectl get -o
json|yaml``, ``nvidia-smi``, device-plugin and fabric-manager logs, Prometheus query answers —
in any mix of files and directories. ``triage --commands`` prints how to collect them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from schematic.doctor.triage.diagnose import Diagnosis, diagnose
from schematic.doctor.triage.readers import DocumentError, Reading, read_evidence
from schematic.errors import TriageInputError
from schematic.safe_yaml import InputTooLargeError, NotTextError, decode_text, read_bytes

__all__ = ["Diagnosis", "Reading", "TriageReport", "triage_paths"]


@dataclass(frozen=True)
class TriageReport:
    """What was read and what it shows."""

    diagnoses: tuple[Diagnosis, ...]
    readings: tuple[Reading, ...]

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnoses)

    @property
    def unrecognised(self) -> tuple[Reading, ...]:
        return tuple(r for r in self.readings if not r.format)


def _files(paths: Sequence[str]) -> list[str]:
    found: list[str] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(names):
                    child = Path(root) / name
                    # A FIFO or device below a directory would block or never end.
                    if not name.startswith(".") and child.is_file():
                        found.append(str(child))
        elif given == "-" or path.exists():
            found.append(given)
        else:
            raise TriageInputError(f"{given}: no such file or directory")
    return found


def _read(file: str) -> Reading:
    try:
        text = decode_text(read_bytes(file))
    except NotTextError as err:
        return Reading(file, "", (), f"not UTF-8 text ({err.strerror})")
    except InputTooLargeError as err:
        raise TriageInputError(
            f"{file}: {err.strerror}; raise --max-input-size to read it"
        ) from None
    except OSError as err:
        raise TriageInputError(f"{file}: cannot read: {err.strerror or err}") from None
    try:
        return read_evidence(text, file)
    except DocumentError as err:
        where = f"{file}:{err.line}" if err.line else file
        raise TriageInputError(f"{where}: {err}") from None


def triage_paths(paths: Sequence[str]) -> TriageReport:
    """Read every file below ``paths`` and diagnose what they show.

    Raises TriageInputError for a path that does not exist or cannot be read, a file larger
    than the input limit, or one nested beyond the reading limits. Files no reader recognises
    are listed in the report, not errors.
    """
    readings = tuple(_read(file) for file in _files(paths))
    signals = [signal for reading in readings for signal in reading.signals]
    return TriageReport(tuple(diagnose(signals)), readings)
