"""`talos-schematic schema NAME`: JSON Schemas of the input files, for editors."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Annotated, Any

import typer

from schematic.cli.base import app


def _from(module: str, function: str) -> Callable[[], dict[str, Any]]:
    """A schema producer imported only when asked for, to keep start-up fast."""

    def produce() -> dict[str, Any]:
        schema: dict[str, Any] = getattr(importlib.import_module(module), function)()
        return schema

    return produce


# One entry per input file kind; another kind (e.g. "cluster") is one more line here.
SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "profile": _from("schematic.inputs.profiles", "profile_json_schema"),
    "cluster": _from("schematic.inputs.cluster_file", "cluster_json_schema"),
}


@app.command(short_help="Print the JSON Schema of an input file kind, for editors and validation.")
def schema(
    name: Annotated[
        str, typer.Argument(metavar="KIND", help=f"Which schema: {', '.join(SCHEMAS)}.")
    ],
) -> None:
    """Print the JSON Schema of an input file kind (for editor completion and validation).

    Example: talos-schematic schema cluster > cluster.schema.json
    """
    if name not in SCHEMAS:
        raise typer.BadParameter(f"unknown schema {name!r}; known: {', '.join(SCHEMAS)}")
    typer.echo(json.dumps(SCHEMAS[name](), indent=2))
