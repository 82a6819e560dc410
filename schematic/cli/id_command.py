"""`talos-schematic id`: schematic IDs computed offline, as the Image Factory would answer them."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from schematic.cli.base import MaxInputSizeOption, app

_FILES = typer.Argument(
    metavar="[FILE]...",
    help="Schematic files (YAML or JSON). None, or '-', reads standard input.",
    show_default=False,
)


@app.command(
    "id", short_help="Print the schematic ID of each file, as the Image Factory computes it."
)
def id_command(
    files: Annotated[list[str] | None, _FILES] = None,
    canonical: Annotated[
        bool, typer.Option("--canonical", help="Print the canonical YAML instead of the ID.")
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help='Print {"id", "canonical"} (a list with "file" for several inputs).'
        ),
    ] = False,
    legacy_quoting: Annotated[
        bool,
        typer.Option(
            "--legacy-quoting",
            help="Marshal as Image Factory before v1.5.0 did (go-yaml v3): YAML-1.1 words "
            "double-quoted, an indentation indicator on literal blocks that start with a "
            "line break.",
        ),
    ] = False,
    max_input_size: MaxInputSizeOption = None,
) -> None:
    """Print the schematic ID of each FILE, byte for byte what the factory would answer.

    One input prints the bare 64-hex ID; several print "<id>  <file>" lines in argument order,
    like sha256sum. A body the factory would refuse (HTTP 400) is reported on stderr naming
    its file; the other files are still processed and the exit status is 1.

    With --canonical and several inputs, the canonical documents are separated by "---" lines.
    """
    # The pydantic-free decoder: hashing many files should cost little more than reading them.
    from schematic.decode import schematic_id_of
    from schematic.errors import SchematicError

    # Bounded by --max-input-size; os.read underneath skips the buffered file object. Imported
    # here, once: an import statement in a function run per file costs as much as a read.
    from schematic.safe_yaml import read_bytes

    names = files or ["-"]
    several = len(names) > 1
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
                read_bytes(name), name, legacy_quoting=legacy_quoting
            )
        except SchematicError as err:
            complain(str(err))
            failed = True
            continue
        except OSError as err:
            complain(f"{name}: cannot read: {err.strerror or err}")
            failed = True
            continue
        if as_json:
            record = {"id": schematic_id, "canonical": text}
            records.append({"file": name, **record} if several else record)
        elif canonical:
            pending.append("---\n" + text if documents else text)
            documents += 1
        elif several:
            pending.append(f"{schematic_id}  {name}\n")
        else:
            pending.append(schematic_id + "\n")
    if as_json and (several or records):
        document: object = records if several else records[0]
        pending.append(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    _write(pending)
    if failed:
        raise typer.Exit(1)


def _write(pending: list[str]) -> None:
    if pending:
        sys.stdout.write("".join(pending))
        sys.stdout.flush()
        pending.clear()
