"""Drift as a reviewer reads it: a unified diff per drifted file, or a JSON list of paths.

:func:`schematic.output.disk.compare_outputs` says which files differ; this module says how.
The diff goes from what the directory holds to what ``generate`` would write, with the
directory's own paths (``--- DIR/pool/values.yaml``), so ``patch -p0`` run where ``check``
ran applies it; a missing file is diffed from ``/dev/null`` and an extra one to it.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path

from schematic.errors import OutputError
from schematic.output.disk import Drift, read_file
from schematic.output.outdir import INDEX
from schematic.safe_yaml import InputTooLargeError

__all__ = ["drift_diff", "drift_json"]

_NO_NEWLINE = "\\ No newline at end of file\n"
# After a tab, patch(1) ignores the rest of a ---/+++ line (it held timestamps).
_ON_DISK = "\t(in the directory)"
_GENERATED = "\t(as generate writes it)"
# Past these, a file is named as differing instead of diffed: difflib's time grows with the
# product of the two sides' lengths, and a generated file is a few kilobytes.
DIFF_MAX_BYTES = 1024 * 1024
DIFF_MAX_LINES = 20_000


def _lines(content: bytes) -> list[str]:
    # Generated files are UTF-8; a hand-edited one may not be, and must still diff.
    return content.decode("utf-8", errors="replace").splitlines(keepends=True)


def _diff(old: list[str], new: list[str], old_name: str, new_name: str) -> Iterator[str]:
    for line in difflib.unified_diff(old, new, old_name, new_name):
        if line.endswith("\n"):
            yield line
        else:
            # The last line of a file without a final newline, marked as diff(1) does.
            yield line + "\n" + _NO_NEWLINE


def _read(directory: Path, name: str) -> bytes | None:
    """The file as the directory holds it; None when it is too large to diff (read no
    further than the bound, so a replaced 200 MB file costs a megabyte)."""
    try:
        return read_file(directory, name, DIFF_MAX_BYTES) or b""
    except InputTooLargeError:
        return None
    except OSError as err:
        raise OutputError(f"{directory / name}: cannot read: {err.strerror}") from None


def drift_diff(
    directory: Path, expected: Mapping[str, bytes], drift: Drift, *, index: bool = False
) -> str:
    """A unified diff of every changed, missing and extra file, in path order; ``index.yaml``
    only with ``index`` (its digests change with every other file: noise to a reviewer). A
    side over :data:`DIFF_MAX_BYTES` or :data:`DIFF_MAX_LINES` is not diffed: a line says the
    files differ, as diff(1) says of binary files (patch(1) skips it)."""
    paths = sorted({*drift.changed, *drift.missing, *drift.extra} - (set() if index else {INDEX}))
    missing, extra = set(drift.missing), set(drift.extra)
    chunks: list[str] = []
    for path in paths:
        shown = f"{directory}/{path}"
        held = b"" if path in missing else _read(directory, path)
        wanted = b"" if path in extra else expected[path]
        old = None if held is None else _lines(held)
        new = _lines(wanted) if len(wanted) <= DIFF_MAX_BYTES else None
        if old is None or new is None or max(len(old), len(new)) > DIFF_MAX_LINES:
            chunks.append(f"Files {shown} and its generated text differ (too large to diff)\n")
            continue
        old_name = "/dev/null" if path in missing else shown + _ON_DISK
        new_name = "/dev/null" if path in extra else shown + _GENERATED
        chunks.extend(_diff(old, new, old_name, new_name))
    return "".join(chunks)


def drift_json(
    drift: Drift, *, directory: Path, cluster_file: Path, diff: str | None = None
) -> str:
    """``{"directory", "cluster", "upToDate", "changed", "missing", "extra", "leftFolders"}``
    (and ``diff``
    when given) as stable JSON text ending in a newline."""
    document: dict[str, object] = {
        "directory": str(directory),
        "cluster": str(cluster_file),
        "upToDate": not drift,
        "changed": list(drift.changed),
        "missing": list(drift.missing),
        "extra": list(drift.extra),
        "leftFolders": list(drift.left),
    }
    if diff is not None:
        document["diff"] = diff
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
