"""How a command's run ends and how the commands present themselves: the group every command
registers on turns what a command lets escape into one message and an exit code, and lists the
commands with their whole summary.

Help is click's plain formatter (``rich_markup_mode=None`` on the app): rich reads a help
text's ``[...]`` as markup and drops it ("CPU architecture [default: ...]" printed as
"CPU architecture ."), and cuts a word longer than its column with "…"; the plain formatter
prints every word, wrapped at the terminal's width.
"""

from __future__ import annotations

import sys
from typing import Any

import typer
from typer.core import TyperGroup

from schematic import errors
from schematic.errors import TalosSchematicError, UsageError, printable, terminal_safe_output

__all__ = ["ReportingGroup", "fail"]


def fail(err: TalosSchematicError) -> typer.Exit | typer.BadParameter:
    """Print a user-fixable error to stderr; the caller raises the returned Exit. A request
    the library refused as given is a usage error naming its option (exit 2)."""
    if isinstance(err, UsageError):
        return typer.BadParameter(str(err), param_hint=err.option)
    print(f"talos-schematic: {printable(str(err))}", file=sys.stderr)
    return typer.Exit(err.exit_code)


class ReportingGroup(TyperGroup):
    """Runs a command and turns what it lets escape into one message and an exit code.

    Commands map their own errors; this is the net under them, so a path nobody thought to
    check (a name longer than 255 bytes, a symbolic-link loop, a vanished directory) ends as
    ``talos-schematic: PATH: reason`` and exit 1, never a traceback.
    """

    def main(self, *args: Any, **kwargs: Any) -> Any:  # usage errors too: outside invoke
        with terminal_safe_output():
            return super().main(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:  # typer's click Context, a private module's name
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # The reader left (`| head -2`): nothing went wrong, so nothing is said.
            errors.discard_output(sys.stdout)
            raise typer.Exit(0) from None
        except TalosSchematicError as err:
            raise fail(err) from None
        except OSError as err:
            raise fail(TalosSchematicError(errors.describe_os_error(err))) from None

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Each command with its whole summary, wrapped; click's own cuts a summary at the
        width left beside the names ("Choose the NVIDIA kernel-module flavour, tier and...")."""
        shown = [
            (name, command)
            for name in self.list_commands(ctx)
            if (command := self.get_command(ctx, name)) is not None and not command.hidden
        ]
        if shown:
            with formatter.section("Commands"):
                formatter.write_dl(
                    [
                        (name, command.get_short_help_str(limit=sys.maxsize))
                        for name, command in shown
                    ]
                )
