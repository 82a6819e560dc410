"""`talos-schematic id`: schematic IDs computed offline, as the Image Factory would answer them."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from schematic.cli.base import MaxInputSizeOption, TextFormat, TextFormatOption, app, json_alias
from schematic.errors import printable

_FILES = typer.Argument(
    metavar="[FILE]...",
    help="Schematic files (YAML or JSON). None, or '-', reads standard input.",
    show_default=False,
)


# Paragraphs are single strings: the help keeps the line breaks it is given.
_HELP = "\n\n".join(
    (
        "Print the schematic ID of each FILE, byte for byte what the factory would answer.",
        "The output keeps one shape whatever the number of files, so a glob that matches one "
        'file reads like one that matches many: each named file prints an "<id>  <file>" line, '
        "in argument order, like sha256sum; standard input alone (no FILE, or '-') prints the "
        'bare 64-hex ID. --format json (or --json) always prints a JSON list of {"file", "id", '
        '"canonical"} '
        'objects. With --canonical, the canonical documents are separated by "---" lines.',
        "A body the factory would refuse (HTTP 400) is reported on stderr naming its file and "
        "line; the other files are still processed and the exit status is 1.",
        "Examples:\n"
        "  talos-schematic id pools/*/schematic.yaml\n"
        "  ID=$(talos-schematic id < schematic.yaml)\n"
        "  talos-schematic id --json a.yaml | jq -r '.[0].id'",
    )
)


@app.command(
    "id",
    short_help="Print the schematic ID of each file, as the Image Factory computes it.",
    help=_HELP,
)
def id_command(
    files: Annotated[list[str] | None, _FILES] = None,
    canonical: Annotated[
        bool, typer.Option("--canonical", help="Print the canonical YAML instead of the ID.")
    ] = False,
    output_format: TextFormatOption = TextFormat.text,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help='The same as --format json: a JSON list with one {"file", "id", "canonical"} '
            'object per input (file "-" for standard input), however many inputs there '
            "are.",
        ),
    ] = False,
    legacy_quoting: Annotated[
        bool,
        typer.Option(
            "--legacy-quoting",
            help="Marshal as Image Factory before v1.5.0 did (go-yaml v3, or v4 up to rc.4): "
            "YAML-1.1 words double-quoted, an indentation indicator on literal blocks that "
            "start with a line break.",
        ),
    ] = False,
    max_input_size: MaxInputSizeOption = None,
) -> None:
    """Print the schematic ID of each FILE (the help text is _HELP)."""
    as_json = json_alias(output_format, as_json, TextFormat.text) == TextFormat.json
    # The pydantic-free decoder: hashing many files should cost little more than reading them.
    from schematic.core.decode import schematic_id_of
    from schematic.errors import SchematicError

    # Bounded by --max-input-size; os.read underneath skips the buffered file object. Imported
    # here, once: an import statement in a function run per file costs as much as a read.
    from schematic.safe_yaml import InputKind, read_bytes

    names = files or ["-"]
    standard_input_alone = names == ["-"]
    # Output is gathered and written in one go: with thousands of files, a write per line
    # (unbuffered when PYTHONUNBUFFERED is set) would cost more than hashing. It is flushed
    # before each error, so stdout and stderr keep argument order on a terminal.
    pending: list[str] = []
    failed = False
    records: list[dict[str, str]] = []
    documents = 0

    def complain(message: str) -> None:
        _write(pending)
        print(f"talos-schematic: {message}", file=sys.stderr)

    for name in names:
        try:
            schematic_id, text = schematic_id_of(
                read_bytes(name, kind=InputKind.SCHEMATIC), name, legacy_quoting=legacy_quoting
            )
        except SchematicError as err:
            complain(str(err))
            failed = True
            continue
        except OSError as err:
            complain(f"{printable(name, one_line=True)}: cannot read: {err.strerror or err}")
            failed = True
            continue
        if as_json:
            records.append({"file": name, "id": schematic_id, "canonical": text})
        elif canonical:
            pending.append("---\n" + text if documents else text)
            documents += 1
        elif standard_input_alone:
            pending.append(schematic_id + "\n")
        else:
            pending.append(f"{schematic_id}  {printable(name, one_line=True)}\n")
    if as_json:
        pending.append(json.dumps(records, indent=2, ensure_ascii=False) + "\n")
    _write(pending)
    if failed:
        raise typer.Exit(1)


def _write(pending: list[str]) -> None:
    if pending:
        sys.stdout.write("".join(pending))
        sys.stdout.flush()
        pending.clear()
