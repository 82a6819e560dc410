"""`talos-schematic triage`."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from schematic.cli.base import JsonAliasOption, MaxInputSizeOption, app, fail, json_alias
from schematic.cli.options import QuietOption, quieted
from schematic.errors import NOTHING_JUDGED, TalosSchematicError, printable

# Exit status when an error is diagnosed (shared with lint / check / verify / detect).
FOUND_ERRORS = 3


@app.command(
    short_help="Name the failure from what a broken cluster shows; exit 3 on a diagnosed error."
)
def triage(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="PATH...",
            help="Files or directories of collected evidence, in any mix: serial consoles, "
            "talosctl dmesg/get/services/logs output, kubectl get -o json|yaml, nvidia-smi, "
            "device-plugin and fabric-manager logs, Prometheus query_range answers.",
        ),
    ] = None,
    output_format: Annotated[
        str,
        typer.Option("--format", "-f", metavar="text|json|markdown|sarif", help="Output format."),
    ] = "text",
    as_json: JsonAliasOption = False,
    commands: Annotated[
        bool,
        typer.Option(
            "--commands",
            help="Print the commands that collect the evidence instead (see --cluster, "
            "--namespace, --node).",
        ),
    ] = False,
    collect: Annotated[
        str | None,
        typer.Option(
            "--collect",
            metavar="DIR",
            help="Run those commands (read-only; needs --cluster and --namespace, --node for "
            "the node's own files) into DIR, new or empty, then triage DIR.",
        ),
    ] = None,
    kubeconfig: Annotated[
        str | None,
        typer.Option(
            "--kubeconfig",
            metavar="FILE",
            help="With --collect: the management cluster's kubeconfig (default: kubectl's).",
        ),
    ] = None,
    talosconfig: Annotated[
        str | None,
        typer.Option(
            "--talosconfig",
            metavar="FILE",
            help="With --collect: a talosconfig that reaches the node, used instead of a "
            "reader certificate signed with the tenant's Talos CA.",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="With --collect: the time limit of every step (default: 60 s for kubectl, "
            "30 s for talosctl).",
        ),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option("--cluster", metavar="NAME", help="Cozystack tenant cluster name."),
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace",
            metavar="NS",
            help="Namespace of the tenant cluster in the management cluster, e.g. tenant-a.",
        ),
    ] = None,
    node: Annotated[
        str | None,
        typer.Option("--node", metavar="NODE", help="The node (name or address) to look at."),
    ] = None,
    against: Annotated[
        str | None,
        typer.Option(
            "--against",
            metavar="DIR",
            help="A directory `generate --out` wrote: name the nodes that run another "
            "schematic than their pool commits there (both IDs in full).",
        ),
    ] = None,
    max_input_size: MaxInputSizeOption = None,
    quiet: QuietOption = False,
) -> None:
    """Name the failure from what a broken cluster shows; exit 3 when an error is diagnosed.

    Each diagnosis names the nodes, the proof (file:line), the look-alike it is not, and the fix.

    Files are recognised by what they hold, never by their names.
    Files no reader knows are listed, not errors.
    Diagnoses go to stdout, the summary to stderr.

    Exit status: 3 an error diagnosed or an error line unexplained (TS213); 0 inputs read and
    neither found; 4 nothing could be judged (no input was read as evidence: an empty folder,
    only unrecognised files, or --collect collected nothing); 1 bad input; 2 wrong usage.

    Example: talos-schematic triage evidence/

    Example: talos-schematic triage --commands --cluster gpu --namespace tenant-a
    --node 10.244.3.17 > collect.sh

    Example, collecting and triaging in one go: talos-schematic triage --collect evidence
    --cluster gpu --namespace tenant-a --node 10.244.3.17

    Example, for a ticket: talos-schematic triage evidence/ --format markdown

    Example, running vs committed: talos-schematic triage evidence/ --against deploy/gpu

    Each kind of file has its size limit (JSON answers, read as they stream, 64 MiB; a
    metrics answer 4 MiB; logs and tables 6 MiB; docs/security.md lists them);
    --max-input-size sets one limit for every kind.
    """
    with quieted(quiet):
        for option, given in (
            ("--kubeconfig", kubeconfig),
            ("--talosconfig", talosconfig),
            ("--timeout", timeout),
        ):
            if given is not None and collect is None:
                raise typer.BadParameter("is used only with --collect DIR", param_hint=option)
        if commands and collect is not None:
            raise typer.BadParameter(
                "give either --commands or --collect DIR", param_hint="--collect"
            )
        if commands:
            from schematic.doctor.triage.commands import CommandValueError, collection_commands

            try:
                script = collection_commands(cluster=cluster, namespace=namespace, node=node)
            except CommandValueError as err:
                raise typer.BadParameter(str(err), param_hint=err.option) from None
            sys.stdout.write(script)
            return
        if collect is not None:
            if paths:
                raise typer.BadParameter(
                    "give either --collect DIR or PATH...", param_hint="PATH..."
                )
            paths = [
                _collected(collect, cluster, namespace, node, kubeconfig, talosconfig, timeout)
            ]
        from schematic.doctor.triage import triage_paths
        from schematic.doctor.triage.formats import FORMATS, render

        output_format = json_alias(output_format, as_json, "text")
        if output_format not in FORMATS:
            raise typer.BadParameter(
                f"{output_format!r} is not one of {', '.join(FORMATS)}", param_hint="--format"
            )
        if not paths:
            raise typer.BadParameter("give at least one file or directory", param_hint="PATH...")
        try:
            from schematic.safe_yaml import max_input_size as current_limit

            # Given, the limit holds for every file; left out, JSON streams up to its own default.
            json_limit = current_limit() if max_input_size else None
            report = triage_paths(paths, max_json_size=json_limit, against=against)
        except TalosSchematicError as err:
            raise fail(err) from None
        sys.stdout.write(render(report, output_format))
        errors = sum(1 for d in report.diagnoses if d.severity == "error")
        read = len(report.readings) - len(report.unrecognised)
        summary = (
            f"{_count(len(report.diagnoses), 'diagnosis', 'diagnoses')} "
            f"({_count(errors, 'error', 'errors')}) from {_count(read, 'file', 'files')}"
        )
        if report.read_in_part:
            names = ", ".join(printable(r.file, one_line=True) for r in report.read_in_part[:5])
            more = "…" if len(report.read_in_part) > 5 else ""
            summary += f"; {len(report.read_in_part)} read in part: {names}{more}"
        if report.unrecognised:
            names = ", ".join(printable(r.file, one_line=True) for r in report.unrecognised[:5])
            more = "…" if len(report.unrecognised) > 5 else ""
            summary += f"; {len(report.unrecognised)} unrecognised: {names}{more}"
        if not report.judged:
            summary += "; nothing could be judged"
        print(f"talos-schematic triage: {summary}", file=sys.stderr)
        if report.has_failures:
            raise typer.Exit(FOUND_ERRORS)
        if not report.judged:
            raise typer.Exit(NOTHING_JUDGED)


def _collected(
    folder: str,
    cluster: str | None,
    namespace: str | None,
    node: str | None,
    kubeconfig: str | None,
    talosconfig: str | None,
    timeout: float | None,
) -> str:
    """``folder`` once the collection ran into it; exit 4 when it collected nothing."""
    import math
    from pathlib import Path

    from schematic.doctor.triage.collect import collect
    from schematic.doctor.triage.steps import Target

    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise typer.BadParameter(
            f"{timeout:g} is not a number of seconds above 0", param_hint="--timeout"
        )
    for option, given in (("--kubeconfig", kubeconfig), ("--talosconfig", talosconfig)):
        if given is not None and not Path(given).is_file():
            raise typer.BadParameter(
                f"{printable(given, one_line=True)} is not a file", param_hint=option
            )
    try:
        target = Target.checked(cluster=cluster, namespace=namespace, node=node)
        done = collect(
            Path(folder),
            target,
            kubeconfig=Path(kubeconfig) if kubeconfig else None,
            talosconfig=Path(talosconfig) if talosconfig else None,
            timeout=timeout,
            progress=lambda line: print(f"talos-schematic triage: {line}", file=sys.stderr),
        )
    except TalosSchematicError as err:
        raise fail(err) from None
    for line in done.summary():
        print(f"talos-schematic triage: {line}", file=sys.stderr)
    if not done.files:
        print(
            "talos-schematic triage: nothing was collected: nothing could be judged",
            file=sys.stderr,
        )
        raise typer.Exit(NOTHING_JUDGED)
    return folder


def _count(number: int, one: str, several: str) -> str:
    return f"{number} {one if number == 1 else several}"
