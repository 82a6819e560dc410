"""`talos-schematic lint, explain`."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer

from schematic.cli.base import JsonAliasOption, MaxInputSizeOption, app, fail, json_alias
from schematic.cli.options import (
    AssumeDriversOption,
    FactsOption,
    QuietOption,
    deciding_by_facts,
    quieted,
)
from schematic.cli.telling import say
from schematic.errors import NOTHING_JUDGED, TalosSchematicError, printable
from schematic.facts.chart_targets import chart_choices

# Exit status when lint finds at least one error (shared with check / verify / detect).
FOUND_ERRORS = 3


class FailOn(StrEnum):
    error = "error"
    warning = "warning"
    note = "note"


_PathsArgument = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="PATH...",
        help="YAML files or directories: KubernetesNodes / Kubernetes objects, values "
        "files, rendered manifests, schematic files, this tool's output and rollout scripts "
        "(.sh, upgrade -f talosctl|tuppr); '-' reads standard input.",
        show_default=False,
    ),
]
_OutputFormatOption = Annotated[
    str,
    typer.Option("--format", "-f", metavar="text|json|sarif", help="Output format."),
]
_TalosOption = Annotated[
    str | None,
    typer.Option(
        "--talos",
        metavar="vX.Y.Z",
        help="Talos version to check against, overriding what the objects say.",
    ),
]
_FactoryOption = Annotated[
    str | None,
    typer.Option(
        "--factory",
        metavar="URL",
        help="Resolve unknown schematic IDs with GET URL/schematics/{id}.",
    ),
]
_ChartOption = Annotated[
    str | None,
    typer.Option(
        "--chart",
        metavar="TARGET",
        help=f"The Cozystack release or chart the values are for: {chart_choices()}. Keys it "
        "ignores are reported (TS181) and kernel-module findings follow what it loads.",
    ),
]
_HardwareOption = Annotated[
    str | None,
    typer.Option(
        "--hardware",
        metavar="PROFILE",
        help="Hardware profile (shipped name or file) of the nodes that standalone Talos "
        "machine configs (and other pools that do not say their GPUs) are for; every GPU "
        "rule (TS101, TS103-TS107, TS110, TS155, ...) then holds them to its GPUs.",
    ),
]
_CozystackOption = Annotated[
    str | None,
    typer.Option(
        "--cozystack",
        metavar="RELEASE",
        help="Cozystack release the Kubernetes apps run, for the GPU Operator addon's "
        "defaults TS140 compares with: v1.6 (default), pr3585, or a chart target.",
    ),
]
_ConfigPatchesOption = Annotated[
    list[str] | None,
    typer.Option(
        "--config-patch",
        metavar="@FILE|YAML",
        help="A Talos config patch (talosctl's spelling: @file or inline YAML; strategic "
        "merge or RFC 6902). Repeat it: the patches are applied in order to one node's "
        "config and checked as that config.",
        show_default=False,
    ),
]
_FailOnOption = Annotated[
    FailOn,
    typer.Option(
        "--fail-on",
        help="Exit 3 when a finding is this severe or more: error (default), warning "
        "(errors and warnings), note (any finding).",
    ),
]
_IgnoreOption = Annotated[
    list[str] | None,
    typer.Option(
        "--ignore",
        metavar="CODE",
        help="Leave out the findings of this code, in the output and for --fail-on "
        "(repeatable, or comma-separated: --ignore TS001,TS003).",
    ),
]


@app.command(short_help="Find silent Talos GPU-pool failures in manifests; exit 3 on any error.")
def lint(
    paths: _PathsArgument = None,
    output_format: _OutputFormatOption = "text",
    as_json: JsonAliasOption = False,
    talos: _TalosOption = None,
    factory: _FactoryOption = None,
    chart: _ChartOption = None,
    hardware: _HardwareOption = None,
    cozystack: _CozystackOption = None,
    config_patches: _ConfigPatchesOption = None,
    fail_on: _FailOnOption = FailOn.error,
    ignore: _IgnoreOption = None,
    facts: FactsOption = None,
    assume_drivers_of: AssumeDriversOption = None,
    max_input_size: MaxInputSizeOption = None,
    quiet: QuietOption = False,
) -> None:
    """Find silent Talos GPU-pool failures in existing manifests; exit 3 on any error (or on
    what --fail-on names), 4 when the inputs hold nothing lint checks (never a pass).

    Findings go to stdout (file:line, code, message, fix); the summary goes to stderr.
    `talos-schematic explain CODE` tells what a finding means and how to confirm it.

    Example: talos-schematic lint deploy/ --talos v1.13.9

    Example: talos-schematic lint --config-patch @nvidia-installer.yaml
    --config-patch @nvidia-modules.yaml --hardware l40s

    Example, in CI: talos-schematic lint clusters/ --fail-on warning --ignore TS001
    """
    with quieted(quiet):
        from schematic.api import LintRequest
        from schematic.api import lint as run_lint
        from schematic.doctor.lint.formats import FORMATS, render

        output_format = json_alias(output_format, as_json, "text")
        if output_format not in FORMATS:
            raise typer.BadParameter(
                f"{output_format!r} is not one of {', '.join(FORMATS)}", param_hint="--format"
            )
        request = LintRequest(
            paths=tuple(paths or ()),
            talos=talos,
            hardware=hardware,
            cozystack=cozystack,
            chart=chart,
            config_patches=tuple(config_patches or ()),
            factory=factory,
            ignore=tuple(
                code.strip().upper() for given in ignore or () for code in given.split(",")
            ),
            fail_on=fail_on.value,
        )
        try:
            with deciding_by_facts(facts, assume_drivers_of) as facts_used:
                result = run_lint(request)
        except TalosSchematicError as err:
            raise fail(err) from None
        sys.stdout.write(render(result.detail, output_format))
        say(f"talos-schematic lint: {result.detail.summary()}; {facts_used}")
        if result.status == NOTHING_JUDGED:
            say(
                "talos-schematic lint: nothing checked: none of the inputs holds what lint "
                "reads (KubernetesNodes or Kubernetes objects, values, Talos machine configs or "
                "patches, schematics, this tool's output); exit 4 (`lint --help` lists them)"
            )
        if result.status == NOTHING_JUDGED:
            for index in result.detail.output_indexes:
                say(
                    f"talos-schematic lint: {printable(index, one_line=True)} is the index of a "
                    "folder `generate --out` wrote: lint the folder, whose values and configs "
                    "it lists"
                )
        for cluster_file in result.detail.cluster_files:
            say(
                f"talos-schematic lint: {printable(cluster_file, one_line=True)} is a cluster "
                "file: `talos-schematic check` compares it with its output folder, and lint "
                "checks the folder `generate` writes"
            )
        if result.status:
            raise typer.Exit(result.status)


@app.command(short_help="Explain a lint finding: what you see, why, how to confirm and fix it.")
def explain(
    code: Annotated[
        str | None, typer.Argument(metavar="CODE", help="A lint code such as TS101.")
    ] = None,
    list_codes: Annotated[
        bool, typer.Option("--list", help="List every code with its severity and title.")
    ] = False,
) -> None:
    """What a lint finding means: what you see, why, how to confirm it, how to fix it.

    Example: talos-schematic explain TS101
    """
    from schematic.doctor.rules import RULES
    from schematic.errors import unknown_name_hint

    if list_codes or code is None:
        for known in RULES.values():
            sys.stdout.write(f"{known.code}  {known.severity:<7}  {known.title}\n")
        return
    wanted = code.strip().upper()
    if wanted not in RULES:
        # A code that does not exist is a wrong argument, like a misspelt option: exit 2.
        hint = unknown_name_hint(wanted, RULES, "talos-schematic explain --list")
        raise typer.BadParameter(f"unknown lint code {code!r}{hint}", param_hint="CODE")
    sys.stdout.write(RULES[wanted].explain())
