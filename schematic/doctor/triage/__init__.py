"""`talos-schematic triage`: name the failure from what a broken cluster shows.

    files ─> readers (one per source format, chosen by content) ─> signals ─> diagnose ─> formats
             (readers/)                                            (signals)  (diagnose)  (formats)

The inputs are what can be collected with standard tools from a cluster that is already broken
— serial consoles, ``talosctl dmesg``/``get``/``services``/``logs``, ``kubectl get -o
json|yaml``, ``nvidia-smi``, device-plugin and fabric-manager logs, Prometheus query answers —
in any mix of files and directories. ``triage --commands`` prints how to collect them.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from schematic.doctor.triage.archive import Source, is_zip, node_folders, unpacked
from schematic.doctor.triage.causes.unknown import UNEXPLAINED_FAILURE
from schematic.doctor.triage.diagnose import Committed, CommittedPool, Diagnosis, diagnose
from schematic.doctor.triage.readers import DocumentError, Reading, file_reading, read_evidence
from schematic.doctor.triage.readers.documents import read_json_chunks
from schematic.doctor.triage.signals import Evidence, Kind
from schematic.errors import TriageInputError, printable
from schematic.safe_yaml import (
    InputKind,
    InputTooLargeError,
    NotTextError,
    check_file_size,
    decode_text,
    files_below,
    max_input_size,
    read_bytes,
    read_problem,
)

__all__ = [
    "FAILURES",
    "HEALTHY",
    "NOT_JUDGED",
    "Diagnosis",
    "Reading",
    "TriageReport",
    "committed_output",
    "triage_paths",
]

FAILURES = "failures"
HEALTHY = "healthy"
NOT_JUDGED = "not judged"


@dataclass(frozen=True)
class TriageReport:
    """What was read and what it shows."""

    diagnoses: tuple[Diagnosis, ...]
    readings: tuple[Reading, ...]

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnoses)

    @property
    def judged(self) -> bool:
        """Whether any input was read as evidence: without one, "no failure" means nothing
        was looked at, not a healthy cluster. Lists with no items are read, yet alone they
        show nothing of the nodes."""
        return any(
            r.format and any(s.kind is not Kind.EMPTY_LIST for s in r.signals)
            for r in self.readings
        )

    @property
    def has_failures(self) -> bool:
        """An error diagnosed, an NVIDIA or Talos error line no cause explains, or a failure
        whose cause holds only if the node runs Talos: warnings, since their cause is unknown
        or uncertain, but never a healthy cluster."""
        return self.has_errors or any(
            d.code == UNEXPLAINED_FAILURE or d.if_talos for d in self.diagnoses
        )

    @property
    def verdict(self) -> str:
        """``failures`` (an error diagnosed or an error line unexplained), ``healthy`` (judged,
        neither) or ``not judged`` (no input read as evidence), the three states a script
        tells apart by exit code."""
        if self.has_failures:
            return FAILURES
        return HEALTHY if self.judged else NOT_JUDGED

    @property
    def unrecognised(self) -> tuple[Reading, ...]:
        return tuple(r for r in self.readings if not r.format)

    @property
    def read_in_part(self) -> tuple[Reading, ...]:
        """Files read as evidence of which a part was not read (its note says which)."""
        return tuple(r for r in self.readings if r.format and r.problem)


def _files(paths: Sequence[str], stack: ExitStack, limit: int) -> list[Source]:
    """Every file to read: those below each folder, each given file, and the members of a
    zip archive (a `talosctl support` bundle), with the path each was found at."""
    found: list[Source] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            try:
                # A FIFO or device below a directory would block or never end.
                children = [child for child in files_below(path) if child.is_file()]
            except OSError as err:
                # A folder that cannot be listed is evidence not read: a diagnosis from the
                # rest could name the look-alike, or nothing, and exit 0.
                raise TriageInputError(
                    f"{printable(str(err.filename), one_line=True)}: {read_problem(err)}"
                ) from None
            # The folder's own name counts: `triage bundle/10.0.0.5` names the node too.
            base = path.resolve().parent
            for child in children:
                relative = os.path.relpath(child.resolve(), base)
                if is_zip(str(child)):
                    found += stack.enter_context(unpacked(str(child), limit))
                else:
                    found.append(Source(str(child), str(child), relative))
        elif given != "-" and is_zip(given):
            found += stack.enter_context(unpacked(given, limit))
        elif given == "-" or path.exists():
            found.append(Source(given, given, ""))
        else:
            shown = printable(given, one_line=True)
            raise TriageInputError(f"{shown}: no such file or directory")
    return found


def _as_found(reading: Reading, source: Source, node: str) -> Reading:
    """``reading`` under the name the report gives the file, its node-less signals given the
    node its folder names."""
    if reading.file == source.name and not node:
        return reading
    signals = tuple(
        replace(
            s,
            node=s.node or node,
            evidence=replace(s.evidence, file=source.name),
        )
        for s in reading.signals
    )
    return replace(reading, file=source.name, signals=signals)


# A JSON document is read as it streams, within its kind's limit (schematic.safe_yaml.BUDGETS):
# a cluster's `kubectl get pods -A -o json` (56 MB for 5,000 pods) as JSON evidence, a metrics
# query answer, which costs more a byte, within its own. Anything else is read whole, within
# the evidence limit.
_CHUNK = 1 << 20
# A Prometheus answer names its resultType first ({"status":...,"data":{"resultType":...), a
# VictoriaMetrics export line or a pasted result list starts with a series' "metric".
_METRICS_HEAD = re.compile(rb'"resultType"\s*:|^\[?\s*\{\s*"metric"\s*:')


def _chunks(file: str, limit: int, kind: InputKind) -> Iterator[str]:
    """The text of ``file``, a megabyte at a time (UTF-8, a BOM dropped)."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    total = 0
    with open(file, "rb") as handle:
        while True:
            data = handle.read(_CHUNK)
            total += len(data)
            if total > limit:
                raise InputTooLargeError(limit, kind)
            try:
                yield decoder.decode(data, final=not data)
            except UnicodeDecodeError as err:
                raise NotTextError(
                    f"{err.reason} at byte {total - len(data) + err.start}"
                ) from None
            if not data:
                return


def _json_kind(file: str) -> InputKind | None:
    """What a regular file that starts (after white space and a BOM) like a JSON document is:
    a metrics query answer or other JSON evidence; None when it starts otherwise."""
    try:
        if file == "-" or not stat.S_ISREG(os.stat(file).st_mode):
            return None
        with open(file, "rb") as handle:
            head = handle.read(4096).removeprefix(codecs.BOM_UTF8).lstrip()
    except OSError:
        return None
    if head[:1] not in (b"{", b"["):
        return None
    return InputKind.METRICS if _METRICS_HEAD.search(head) else InputKind.EVIDENCE_JSON


# No tool prints a line this long; beyond it a line is read cut, so a 16 MiB line costs the
# readers' patterns 64 KiB each. Line numbers stay those of the file.
_LONGEST_LINE = 65536


def _line_breaks(text: str) -> str:
    """Lines that end in a carriage return alone (no line feed anywhere: a console saved by a
    terminal program) as lines: read as one line, such a log was cut at 64 KiB. A carriage
    return among lines that end in line feeds is a terminal's overwrite, left to the paste
    cleaner."""
    return text.replace("\r", "\n") if "\n" not in text and "\r" in text else text


def _has_long_line(text: str) -> bool:
    """Whether a line of ``text`` is longer than :data:`_LONGEST_LINE`. Such a line holds an
    offset that is a multiple of that length, so only the line around each of those offsets
    is looked at, and only that far either side: linear, whatever the lines (a pattern tried
    at each line's start costs a tenth of a second on sixteen million blank lines)."""
    for offset in range(_LONGEST_LINE, len(text), _LONGEST_LINE):
        before = text.rfind("\n", max(0, offset - _LONGEST_LINE - 1), offset)
        after = text.find("\n", offset, offset + _LONGEST_LINE + 1)
        start = before + 1 if before >= 0 else max(0, offset - _LONGEST_LINE - 1)
        end = after if after >= 0 else min(len(text), offset + _LONGEST_LINE + 1)
        if end - start > _LONGEST_LINE:
            return True
    return False


def _cut_long_lines(text: str) -> str:
    if not _has_long_line(text):
        return text
    return "\n".join(line[:_LONGEST_LINE] for line in text.split("\n"))


def _read(file: str, max_json_size: int | None) -> Reading:
    json_problem = ""
    try:
        kind = _json_kind(file)
        if kind is not None:
            limit = max_json_size or max_input_size(kind)
            # Refused by its size before any of it is read: past its limit, its cost is not
            # bounded by the promise.
            check_file_size(os.stat(file), limit, kind)
            try:
                notes: list[str] = []
                signals = list(read_json_chunks(_chunks(file, limit, kind), file, notes))
                return file_reading(file, "json", signals, notes)
            except DocumentError as err:
                if err.fatal:
                    raise
                # What looks like JSON and is not ("[   12.345678] ...", "[talos] ...", a
                # fenced paste, a document broken further on) is tried as text; the JSON's
                # error is reported when the text readers find nothing either.
                if err.line not in (None, 1):
                    json_problem = f"line {err.line}: {err}"
        try:
            text = decode_text(read_bytes(file, kind=InputKind.EVIDENCE))
        except InputTooLargeError:
            if json_problem:
                return Reading(file, "", (), json_problem)
            raise
    except NotTextError as err:
        return Reading(file, "", (), f"not UTF-8 text ({err.strerror})")
    except InputTooLargeError as err:
        raise TriageInputError(f"{file}: {err.strerror}") from None
    except OSError as err:
        raise TriageInputError(f"{file}: cannot read: {err.strerror or err}") from None
    except DocumentError as err:
        where = f"{file}:{err.line}" if err.line else file
        raise TriageInputError(f"{where}: {err}") from None
    try:
        reading = read_evidence(_cut_long_lines(_line_breaks(text)), file)
    except DocumentError as err:
        if json_problem and not err.fatal:
            return Reading(file, "", (), json_problem)
        where = f"{file}:{err.line}" if err.line else file
        raise TriageInputError(f"{where}: {err}") from None
    if json_problem and not reading.format:
        return Reading(file, "", (), json_problem)
    return reading


def committed_output(directory: str) -> Committed:
    """The pools a `generate --out` directory commits (its ``index.yaml``), for ``--against``."""
    from schematic.errors import OutputError
    from schematic.output.outdir import INDEX, read_index

    shown = printable(directory, one_line=True)
    try:
        index = read_index(Path(directory))
    except OutputError as err:
        raise TriageInputError(f"--against {shown}: {err}") from None
    except OSError as err:
        raise TriageInputError(f"--against {shown}: {err.strerror or err}") from None
    if index is None:
        raise TriageInputError(
            f"--against {shown}: no {INDEX} (give a directory `generate --out` wrote)"
        )
    file = str(Path(directory) / INDEX)
    lines = _schematic_lines(decode_text(read_bytes(file, kind=InputKind.OUTPUT_RECORD)))
    pools = []
    for entry in index.pools:
        name = str(entry["name"])
        ids = tuple(
            dict.fromkeys(
                str(entry[key]) for key in ("schematicID", "offlineSchematicID") if entry.get(key)
            )
        )
        where = Evidence(
            file, lines.get(name, 1), f"pool {name} schematicID: {ids[0] if ids else '?'}"
        )
        extensions = tuple(str(e) for e in entry.get("extensions") or ())
        pools.append(CommittedPool(name, ids, extensions, where))
    return Committed(index.cluster, tuple(pools))


def _schematic_lines(text: str) -> dict[str, int]:
    """Pool name → the line of its ``schematicID`` in the index (else of its ``- name:``), read
    in one pass: an index of thousands of pools is not searched once per pool."""
    found: dict[str, int] = {}
    pool = ""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("- name: "):
            pool = stripped.removeprefix("- name: ")
            found.setdefault(pool, number)
        elif pool and stripped.startswith("schematicID: "):
            found[pool] = number
            pool = ""
    return found


def triage_paths(
    paths: Sequence[str], *, max_json_size: int | None = None, against: str | None = None
) -> TriageReport:
    """Read every file below ``paths`` and diagnose what they show.

    JSON documents are read as they stream, up to ``max_json_size`` (by default their kind's
    limit: JSON evidence, or a metrics query answer); every other file up to the evidence limit
    (:data:`schematic.safe_yaml.BUDGETS`). A file past its limit is refused before it is read.

    Raises TriageInputError for a path that does not exist or cannot be read, a file larger
    than its limit, or one nested beyond the reading limits. Files no reader recognises, and
    notes that are not evidence, are listed in the report, not errors.
    """
    committed = committed_output(against) if against is not None else None
    # An archive's member may be any evidence: the largest kind's limit, then its own.
    member_limit = max_json_size or max_input_size(InputKind.EVIDENCE_JSON)
    with ExitStack() as stack:
        sources = _files(paths, stack, member_limit)
        nodes = node_folders(sources)
        readings = tuple(
            _as_found(_read(source.path, max_json_size), source, nodes.get(source.name, ""))
            for source in sources
        )
    signals = [signal for reading in readings for signal in reading.signals]
    return TriageReport(tuple(diagnose(signals, committed)), readings)
