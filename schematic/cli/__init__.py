"""The `talos-schematic` command line: parse arguments, call the library, map errors to exit codes.

Exit codes: 0 ok, 1 error (bad input, refused combination, factory failure), 2 usage,
3 `check` found drift / `lint` found errors / `verify` found a missing schematic /
`detect --against` found a difference / `upgrade` found a pool that would break /
`triage` diagnosed an error.

Each command lives in its own module below and registers itself on ``app``
(:mod:`schematic.cli.base`, which holds what the commands share: no command module imports
another); command modules import the library lazily, inside the command, so `--help` and
offline commands start fast.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

from schematic.cli.base import app, fail
from schematic.errors import TalosSchematicError

__all__ = ["app", "fail", "main", "register_all_commands"]

# Which module defines each command: a run imports only the one it needs, which keeps
# start-up short (the full set is loaded for --help and for names that match no command).
_COMMAND_MODULES = {
    "id": "id_command",
    "gpu": "gpu_command",
    "generate": "generate_command",
    "check": "check_command",
    "upgrade": "upgrade_command",
    "register": "factory_commands",
    "verify": "factory_commands",
    "extensions": "factory_commands",
    "versions": "factory_commands",
    "lint": "lint_command",
    "explain": "lint_command",
    "detect": "detect_command",
    "triage": "triage_command",
    "schema": "schema_command",
    "urls": "urls_command",
    "profiles": "list_commands",
    "overlays": "list_commands",
    "init": "init_command",
    "facts": "facts_command",
}


def _register_commands(names: Sequence[str] = ()) -> None:
    """Import the command modules (all of them, or those defining ``names``)."""
    # dict.fromkeys keeps the table's order, which is the order --help lists the commands in.
    wanted = [_COMMAND_MODULES[name] for name in names] or list(_COMMAND_MODULES.values())
    for module in dict.fromkeys(wanted):
        # Imported for their side effect of adding commands to `app`.
        importlib.import_module(f"schematic.cli.{module}")


def register_all_commands() -> None:
    """Add every command to ``app`` (for tools that list them all, such as the docs site)."""
    _register_commands()


def main() -> None:
    """Console-script entry point."""
    # pydantic looks for plugins by scanning every installed distribution's entry points the
    # first time a model is built, a large share of a short command's run time; the command line
    # uses none. A value the user set is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    wanted = [command] if command in _COMMAND_MODULES else []
    if "--help" in sys.argv[1:] and command is None:
        wanted = []
    _register_commands(wanted)
    try:
        # Named, so `python -m schematic` completes and prints usage as the installed tool.
        app(prog_name="talos-schematic")
    except TalosSchematicError as err:
        raise SystemExit(fail(err).exit_code) from None
