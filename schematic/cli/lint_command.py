"""`talos-schematic lint, explain`."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer

from schematic.cli.base import JsonAliasOption, MaxInputSizeOption, app, fail, json_alias
from schematic.cli.options import AssumeDriversOption, FactsOption, deciding_by_facts
from schematic.errors import FactoryError, LintInputError, SchematicError, TalosSchematicError
from schematic.facts.chart_targets import chart_choices

# Exit status when lint finds at least one error (shared with check / verify / detect).
FOUND_ERRORS = 3


class FailOn(StrEnum):
    error = "error"
    warning = "warning"
    note = "note"


@app.command(short_help="Find silent Talos GPU-pool failures in manifests; exit 3 on any error.")
def lint(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="PATH...",
            help="YAML files or directories: KubernetesNodes / Kubernetes objects, values "
            "files, rendered manifests, schematic files, this tool's output and rollout scripts "
            "(.sh, upgrade -f talosctl|tuppr); '-' reads standard input.",
            show_default=False,
        ),
    ] = None,
    output_format: Annotated[
        str,
        typer.Option("--format", "-f", metavar="text|json|sarif", help="Output format."),
    ] = "text",
    as_json: JsonAliasOption = False,
    talos: Annotated[
        str | None,
        typer.Option(
            "--talos",
            metavar="vX.Y.Z",
            help="Talos version to check against, overriding what the objects say.",
        ),
    ] = None,
    factory: Annotated[
        str | None,
        typer.Option(
            "--factory",
            metavar="URL",
            help="Resolve unknown schematic IDs with GET URL/schematics/{id}.",
        ),
    ] = None,
    chart: Annotated[
        str | None,
        typer.Option(
            "--chart",
            metavar="TARGET",
            help=f"The Cozystack release or chart the values are for: {chart_choices()}. Keys it "
            "ignores are reported (TS181) and kernel-module findings follow what it loads.",
        ),
    ] = None,
    hardware: Annotated[
        str | None,
        typer.Option(
            "--hardware",
            metavar="PROFILE",
            help="Hardware profile (shipped name or file) of the nodes that standalone Talos "
            "machine configs (and other pools that do not say their GPUs) are for; every GPU "
            "rule (TS101, TS103-TS107, TS110, TS155, ...) then holds them to its GPUs.",
        ),
    ] = None,
    cozystack: Annotated[
        str | None,
        typer.Option(
            "--cozystack",
            metavar="RELEASE",
            help="Cozystack release the Kubernetes apps run, for the GPU Operator addon's "
            "defaults TS140 compares with: v1.6 (default), pr3585, or a chart target.",
        ),
    ] = None,
    config_patches: Annotated[
        list[str] | None,
        typer.Option(
            "--config-patch",
            metavar="@FILE|YAML",
            help="A Talos config patch (talosctl's spelling: @file or inline YAML; strategic "
            "merge or RFC 6902). Repeat it: the patches are applied in order to one node's "
            "config and checked as that config.",
            show_default=False,
        ),
    ] = None,
    fail_on: Annotated[
        FailOn,
        typer.Option(
            "--fail-on",
            help="Exit 3 when a finding is this severe or more: error (default), warning "
            "(errors and warnings), note (any finding).",
        ),
    ] = FailOn.error,
    ignore: Annotated[
        list[str] | None,
        typer.Option(
            "--ignore",
            metavar="CODE",
            help="Leave out the findings of this code, in the output and for --fail-on "
            "(repeatable, or comma-separated: --ignore TS001,TS003).",
        ),
    ] = None,
    facts: FactsOption = None,
    assume_drivers_of: AssumeDriversOption = None,
    max_input_size: MaxInputSizeOption = None,
) -> None:
    """Find silent Talos GPU-pool failures in existing manifests; exit 3 on any error (or on
    what --fail-on names).

    Findings go to stdout (file:line, code, message, fix); the summary goes to stderr.
    `talos-schematic explain CODE` tells what a finding means and how to confirm it.

    Example: talos-schematic lint deploy/ --talos v1.13.9

    Example: talos-schematic lint --config-patch @nvidia-installer.yaml
    --config-patch @nvidia-modules.yaml --hardware l40s

    Example, in CI: talos-schematic lint clusters/ --fail-on warning --ignore TS001
    """
    from schematic.doctor.lint import lint_paths
    from schematic.doctor.lint.findings import RULES
    from schematic.doctor.lint.formats import FORMATS, render

    ignored = {code.strip().upper() for given in ignore or () for code in given.split(",")}
    unknown = sorted(ignored - set(RULES))
    if unknown:
        raise typer.BadParameter(
            f"unknown lint code {', '.join(unknown)}; `talos-schematic explain --list` lists them",
            param_hint="--ignore",
        )
    if not paths and not config_patches:
        raise typer.BadParameter("give at least one PATH or --config-patch", param_hint="PATH")
    patches = _read_patches(config_patches or [])
    output_format = json_alias(output_format, as_json, "text")
    if output_format not in FORMATS:
        raise typer.BadParameter(
            f"{output_format!r} is not one of {', '.join(FORMATS)}", param_hint="--format"
        )
    if cozystack is not None:
        from schematic.plan.gpupath import operator_release_named

        try:
            operator_release_named(cozystack)
        except ValueError as err:
            raise typer.BadParameter(str(err), param_hint="--cozystack") from None
    try:
        with deciding_by_facts(facts, assume_drivers_of) as facts_used:
            target = None
            if chart is not None:
                from schematic.facts.chart_targets import chart_target

                try:
                    target = chart_target(chart)
                except ValueError as err:
                    raise typer.BadParameter(str(err), param_hint="--chart") from None
            profile = None
            if hardware is not None:
                from schematic.inputs.profiles import load_profile

                profile = load_profile(hardware)
            if factory is None:
                report = lint_paths(
                    paths or [],
                    talos=talos,
                    hardware=profile,
                    cozystack=cozystack,
                    chart=target,
                    config_patches=patches,
                )
            else:
                from schematic.core.model import Schematic
                from schematic.factory.client import FactoryClient

                with FactoryClient(factory) as client:

                    def fetch(schematic_id: str) -> Schematic | None:
                        body = client.fetch_schematic(schematic_id)
                        if body is None:
                            return None
                        where = f"{client.url}/schematics/{schematic_id}"
                        try:
                            return Schematic.from_yaml(body, where)
                        except SchematicError as err:
                            # Lint goes on without the factory (TS005), as when it is unreachable.
                            raise FactoryError(f"not a schematic: {err}") from None

                    report = lint_paths(
                        paths or [],
                        talos=talos,
                        fetch=fetch,
                        hardware=profile,
                        cozystack=cozystack,
                        chart=target,
                        config_patches=patches,
                        factory=client.url,
                    )
    except TalosSchematicError as err:
        raise fail(err) from None
    report = report.without(ignored)
    sys.stdout.write(render(report, output_format))
    print(f"talos-schematic lint: {report.summary()}; {facts_used}", file=sys.stderr)
    if report.reaches(fail_on.value):
        raise typer.Exit(FOUND_ERRORS)


def _read_patches(values: list[str]) -> list[tuple[str, str]]:
    """(name, text) of each --config-patch: ``@FILE`` read under the input limit, else the YAML
    given inline."""
    from schematic.safe_yaml import InputKind, read_problem, read_text

    patches = []
    for number, value in enumerate(values, start=1):
        if not value.startswith("@"):
            patches.append((f"--config-patch #{number}", value))
            continue
        try:
            patches.append((value[1:], read_text(value[1:], kind=InputKind.LINT)))
        except OSError as err:
            # Like a PATH that cannot be read: an input error, not a usage error.
            raise fail(LintInputError(f"{value[1:]}: {read_problem(err)}")) from None
    return patches


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
    from schematic.doctor.lint.findings import RULES

    if list_codes or code is None:
        for known in RULES.values():
            sys.stdout.write(f"{known.code}  {known.severity:<7}  {known.title}\n")
        return
    wanted = code.strip().upper()
    if wanted not in RULES:
        # A code that does not exist is a wrong argument, like a misspelt option: exit 2.
        raise typer.BadParameter(
            f"unknown lint code {code!r}; known codes: {', '.join(RULES)}", param_hint="CODE"
        )
    sys.stdout.write(RULES[wanted].explain())
