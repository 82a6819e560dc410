"""A Grafana panel's data, exported: "Download CSV" and the DataFrame JSON of Inspect → Data.

The CSV is Grafana's ``toCSV`` (grafana/grafana ``packages/grafana-data/src/utils/csv.ts``): a
header of quoted display names (``"Time","node_boot_time_seconds{instance=""10.0.0.5:9100""}"``),
the locale's delimiter, then one row per time with the time formatted or in epoch
milliseconds. A Prometheus series' default display name is ``metric{label="value", ...}``
(``{__name__="metric", ...}`` once "Series joined by time" has merged the frames); a legend
that leaves the metric out (``{{instance}}``, an alias) names no metric, and such a column is
not read: what its numbers measure is not in the file. The
DataFrame JSON is a list of frames (``schema.fields`` with each field's ``labels``,
``data.values`` column by column), as pasted in grafana/grafana#79618; a Prometheus frame's value
field carries the series' labels, ``__name__`` among them.

Grafana 6 and older wrote two other layouts, both still pasted: "series as columns", an unquoted
header (``Time;valA;valB``) over ISO 8601 times (grafana/grafana#4041), and "series as rows"
(``"Series";"Time";"Value"``, one row per sample, grafana/grafana#14578). Their columns are the
series' aliases, which name no metric unless the alias does.

Both become Prometheus query answers, read by the one metrics reader (``interpret``, through
``documents.read_grafana_csv`` for the CSV).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = ["CsvExport", "csv_answer", "frames_answer", "recognise_grafana_csv", "unnamed_columns"]

_HEADER = re.compile(r'^(?:sep=.\r?\n)?"Time"(?P<delimiter>[,;\t])"')
# Grafana 6 and older: "series as columns" without quotes (its next line a time), and
# "series as rows".
_COLUMNS_HEADER = re.compile(
    r"^Time(?P<delimiter>[,;\t])[^\r\n]+\r?\n\s*(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\d{10,13}\b)"
)
_ROWS_HEADER = re.compile(
    r'^"?Series"?(?P<delimiter>[,;\t])"?Time"?(?P=delimiter)"?Value"?\r?$', re.MULTILINE
)
_SERIES = re.compile(r"^(?P<name>[A-Za-z_:][\w:]*)?\{(?P<labels>.*)\}$")
_LABEL = re.compile(r'(?P<key>[A-Za-z_]\w*)="(?P<value>(?:[^"\\]|\\.)*)"')


def _head(text: str) -> re.Match[str] | None:
    start = text.lstrip("\ufeff").lstrip()[:4096]
    return _HEADER.match(start) or _COLUMNS_HEADER.match(start) or _ROWS_HEADER.match(start)


def recognise_grafana_csv(text: str) -> bool:
    """Whether ``text`` starts with a header of Grafana's CSV (an Excel ``sep=`` line allowed)."""
    return _head(text) is not None


def _labels(display: str) -> dict[str, str]:
    """A display name's metric and labels (``__name__`` for the metric); {} when it names
    none."""
    found = _SERIES.match(display.strip())
    if found is None:
        return {}
    labels = {m["key"]: m["value"] for m in _LABEL.finditer(found["labels"])}
    if found["name"]:
        labels["__name__"] = found["name"]
    return labels if "__name__" in labels else {}


def _seconds(cell: str) -> float | None:
    text = cell.strip()
    try:
        number = float(text)
    except ValueError:
        # Formatted ("2026-11-25 16:01:00") or ISO 8601 with a zone ("...T11:50:00.000Z").
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    # Grafana writes raw times in epoch milliseconds.
    return number / 1000 if number > 1e11 else number


@dataclass(frozen=True)
class CsvExport:
    """A Grafana CSV read: its series that name their metric as a query answer, the header's
    line, and the series whose legend names no metric (``column 2 "10.0.0.5:9100"``)."""

    answer: dict[str, Any]
    line: int
    unnamed: tuple[str, ...]


def unnamed_columns(export: CsvExport) -> str:
    """Why the columns of ``export`` whose legend leaves the metric out were not read, and how
    to export them so they are."""
    shown = ", ".join(export.unnamed[:3])
    more = len(export.unnamed) - 3
    shown += f" and {more} more" if more > 0 else ""
    return (
        f"{shown}: a series legend without its metric's name (metric{{label=...}} was "
        "expected), so what the numbers measure is unknown; export the panel again with its "
        "series named by their metric: the Prometheus query's Legend set to Verbose (all "
        "label names and values), or a legend format that starts with {{__name__}}"
    )


def _columns(rows: list[list[str]], by_row: bool) -> list[tuple[str, list[list[Any]]]]:
    """Each series' display name and its (time, value) samples, in the file's order."""
    series: dict[str, list[list[Any]]] = {}
    if by_row:  # "Series", "Time", "Value"
        for row in rows[1:]:
            when = _seconds(row[1]) if len(row) >= 3 else None
            if when is not None and row[2].strip():
                series.setdefault(row[0], []).append([when, row[2].strip()])
        return list(series.items())
    header = rows[0] if rows else []
    for column, display in enumerate(header[1:], 1):
        values = series.setdefault(display, [])
        for row in rows[1:]:
            when = _seconds(row[0]) if row else None
            if when is not None and column < len(row) and row[column].strip():
                values.append([when, row[column].strip()])
    return list(series.items())


def csv_answer(text: str) -> CsvExport | None:
    """A Grafana CSV's series that name their metric, as a query answer; None when ``text``
    is no such CSV."""
    body = text.lstrip("\ufeff")
    start = len(body) - len(body.lstrip())
    header_line = body.count("\n", 0, start) + 1
    head = _head(body)
    if head is None:
        return None
    lines = body.lstrip().splitlines()
    if lines and lines[0].startswith("sep="):
        lines, header_line = lines[1:], header_line + 1
    rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=head["delimiter"]))
    by_row = head.re is _ROWS_HEADER
    result: list[dict[str, Any]] = []
    unnamed: list[str] = []
    for column, (display, values) in enumerate(_columns(rows, by_row), 2):
        labels = _labels(display)
        if labels:
            result.append({"metric": labels, "values": values})
        else:
            unnamed.append(f'series "{display}"' if by_row else f'column {column} "{display}"')
    answer = {"status": "success", "data": {"resultType": "matrix", "result": result}}
    return CsvExport(answer, header_line, tuple(unnamed))


def frames_answer(value: Any) -> dict[str, Any] | None:
    """A Grafana DataFrame JSON frame (or list of them) as a query answer; None for anything
    else."""
    frames = value if isinstance(value, list) else [value]
    if not frames or not all(_is_frame(f) for f in frames):
        return None
    result: list[dict[str, Any]] = []
    for frame in frames:
        fields = frame["schema"]["fields"]
        columns = frame["data"]["values"]
        times = next((columns[i] for i, f in enumerate(fields) if f.get("type") == "time"), None)
        if not isinstance(times, list):
            continue
        for index, field in enumerate(fields):
            if field.get("type") != "number" or index >= len(columns):
                continue
            labels = dict(field.get("labels") or {})
            if "__name__" not in labels and field.get("name") not in (None, "", "Value"):
                labels["__name__"] = field["name"]
            if "__name__" not in labels:
                continue
            pairs = [
                [t / 1000 if t > 1e11 else t, str(v)]
                for t, v in zip(times, columns[index], strict=False)
                if isinstance(t, (int, float)) and v is not None
            ]
            result.append({"metric": labels, "values": pairs})
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


def _is_frame(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    schema, data = value.get("schema"), value.get("data")
    return (
        isinstance(schema, dict)
        and isinstance(schema.get("fields"), list)
        and all(isinstance(f, dict) for f in schema["fields"])
        and isinstance(data, dict)
        and isinstance(data.get("values"), list)
    )
