"""A Grafana panel's data, exported: "Download CSV" and the DataFrame JSON of Inspect → Data.

The CSV is Grafana's ``toCSV`` (grafana/grafana ``packages/grafana-data/src/utils/csv.ts``): a
header of quoted display names (``"Time","node_boot_time_seconds{instance=""10.0.0.5:9100""}"``),
the locale's delimiter, then one row per time with the time formatted or in epoch
milliseconds. A Prometheus series' default display name is ``metric{label="value", ...}``; a
legend that leaves the metric out names no metric, and such a column says nothing. The
DataFrame JSON is a list of frames (``schema.fields`` with each field's ``labels``,
``data.values`` column by column), as pasted in grafana/grafana#79618; a Prometheus frame's value
field carries the series' labels, ``__name__`` among them.

Both become Prometheus query answers, read by the one metrics reader (``interpret``, through
``documents.read_grafana_csv`` for the CSV).
"""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime
from typing import Any

__all__ = ["csv_answer", "frames_answer", "recognise_grafana_csv"]

_HEADER = re.compile(r'^(?:sep=.\r?\n)?"Time"(?P<delimiter>[,;\t])"')
_SERIES = re.compile(r"^(?P<name>[A-Za-z_:][\w:]*)?\{(?P<labels>.*)\}$")
_LABEL = re.compile(r'(?P<key>[A-Za-z_]\w*)="(?P<value>(?:[^"\\]|\\.)*)"')
_FORMATTED_TIME = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S")


def recognise_grafana_csv(text: str) -> bool:
    """Whether ``text`` starts with Grafana's CSV header (an Excel ``sep=`` line allowed)."""
    return bool(_HEADER.match(text.lstrip()[:4096]))


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
        for layout in _FORMATTED_TIME:
            try:
                return datetime.strptime(text, layout).replace(tzinfo=UTC).timestamp()
            except ValueError:
                continue
        return None
    # Grafana writes raw times in epoch milliseconds.
    return number / 1000 if number > 1e11 else number


def csv_answer(text: str) -> tuple[dict[str, Any], int] | None:
    """A Grafana CSV's series that name their metric, as a query answer, and the header's
    line; None when ``text`` is no such CSV."""
    body = text.lstrip("\ufeff")
    start = len(body) - len(body.lstrip())
    header_line = body.count("\n", 0, start) + 1
    head = _HEADER.match(body.lstrip())
    if head is None:
        return None
    lines = body.lstrip().splitlines()
    if lines and lines[0].startswith("sep="):
        lines, header_line = lines[1:], header_line + 1
    rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=head["delimiter"]))
    header, samples = (rows[0], rows[1:]) if rows else ([], [])
    result: list[dict[str, Any]] = []
    for column, display in enumerate(header[1:], 1):
        labels = _labels(display)
        if not labels:
            continue
        values = []
        for row in samples:
            when = _seconds(row[0]) if row else None
            if when is None or column >= len(row) or not row[column].strip():
                continue
            values.append([when, row[column].strip()])
        result.append({"metric": labels, "values": values})
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}, header_line


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
