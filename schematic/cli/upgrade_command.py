"""`talos-schematic upgrade`: what a Talos release bump does to each pool, before nodes see it.

The library plans the cluster file at both releases and compares them
(:func:`schematic.api.upgrade`) and renders the report
(:mod:`schematic.output.render.upgrade`); this module parses the options, prints the report
and maps a breaking pool to exit 3.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from schematic.cli.base import (
    JsonAliasOption,
    MaxInputSizeOption,
    PoolOption,
    ProfilesOption,
    app,
    fail,
    json_alias,
)
from schematic.cli.options import AssumeDriversOption, FactsOption, deciding_by_facts
from schematic.cli.telling import VerboseOption, say, tell
from schematic.errors import TalosSchematicError
from schematic.messages import Message

if TYPE_CHECKING:
    from schematic.plan.upgrade import UpgradeReport


class ReportFormat(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"
    talosctl = "talosctl"
    tuppr = "tuppr"


@app.command(short_help="What a Talos upgrade changes per pool; exit 3 when a pool would break.")
def upgrade(
    cluster_file: Annotated[
        Path,
        typer.Argument(
            help="Cluster file (YAML): cluster, talos, nvidia, pools.", metavar="CLUSTER"
        ),
    ],
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            metavar="vX.Y.Z",
            help="The Talos release to upgrade to "
            "(default: the file's talos.version, with --from).",
            show_default=False,
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="vX.Y.Z",
            help=(
                "The release the nodes run now (default: the file's talos.version); for a pull "
                "request that already bumped talos.version, give the base branch's version."
            ),
            show_default=False,
        ),
    ] = None,
    base: Annotated[
        Path | None,
        typer.Option(
            "--base",
            metavar="FILE",
            help=(
                "The cluster file as deployed now (in CI: the base branch's, from git show); "
                "its plan is compared with CLUSTER's, pool by pool, so a pull request that "
                "changes more than talos.version is shown whole. Its relative profile paths "
                "resolve against CLUSTER's directory."
            ),
            show_default=False,
        ),
    ] = None,
    report_format: Annotated[
        ReportFormat,
        typer.Option(
            "--format",
            "-f",
            help=(
                "Report as text, json, or markdown (a table for a pull-request comment); or "
                "the rollout as a script: talosctl (one upgrade per node, control plane first, "
                "GPU pools last after a smoke test) or tuppr (node annotations and a "
                "TalosUpgrade per pool), each with the pool's installer."
            ),
        ),
    ] = ReportFormat.text,
    nodes_from: Annotated[
        Path | None,
        typer.Option(
            "--nodes-from",
            metavar="FILE",
            help=(
                "The cluster's nodes (kubectl get nodes -o json) for -f talosctl and -f tuppr: "
                "each is placed in its pool by its node.kubernetes.io/pool label, the schematic "
                "it runs, or its Cozystack machine name."
            ),
            show_default=False,
        ),
    ] = None,
    as_json: JsonAliasOption = False,
    profiles: ProfilesOption = None,
    live_catalogue: Annotated[
        bool,
        typer.Option(
            "--live-catalogue",
            help=(
                "Check every pool's extensions at the target release against the factory's "
                "list (cached on disk for a day); a name it lacks breaks the pool."
            ),
        ),
    ] = False,
    factory: Annotated[
        str | None,
        typer.Option(
            "--factory",
            metavar="URL",
            help=(
                "Image Factory for --live-catalogue (default: $TALOS_SCHEMATIC_FACTORY, else "
                "the cluster file's talos.imageFactoryURL)."
            ),
            show_default=False,
        ),
    ] = None,
    pool: PoolOption = None,
    facts: FactsOption = None,
    assume_drivers_of: AssumeDriversOption = None,
    max_input_size: MaxInputSizeOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Per pool: schematic ID, extensions, NVIDIA driver, kernel modules and machine config
    before → after a Talos upgrade (or between --base and CLUSTER), and what the running
    nodes need (talosctl upgrade, or recreating Cozystack machines). Exit 3 when a pool would
    break (e.g. its GPU is dropped by the new driver), with the ways out; 0 otherwise. Offline
    unless --live-catalogue.

    Example: talos-schematic upgrade cluster.yaml --to v1.14.0 --format markdown
    """
    from schematic.api import UpgradeRequest, upgrade
    from schematic.output.render.upgrade import upgrade_json, upgrade_markdown, upgrade_text

    report_format = json_alias(report_format, as_json, ReportFormat.text)
    request = UpgradeRequest(
        cluster_file,
        to=to,
        since=since,
        base=base,
        pools=tuple(pool or ()),
        profiles=tuple(profiles or ()),
        live_catalogue=live_catalogue,
        factory=factory,
    )
    try:
        with deciding_by_facts(facts, assume_drivers_of, cluster_file.parent) as facts_used:
            result = upgrade(request)
    except TalosSchematicError as err:
        raise fail(err) from None
    tell([Message(level="", cause=facts_used), *result.messages], verbose=verbose)
    report = result.detail
    if nodes_from is not None and report_format not in (ReportFormat.talosctl, ReportFormat.tuppr):
        raise typer.BadParameter(
            "lists the nodes of a rollout: give it with -f talosctl or -f tuppr",
            param_hint="--nodes-from",
        )
    if report_format in (ReportFormat.talosctl, ReportFormat.tuppr):
        _print_rollout(report, report_format, nodes_from)
    else:
        render = {
            ReportFormat.text: upgrade_text,
            ReportFormat.json: upgrade_json,
            ReportFormat.markdown: upgrade_markdown,
        }[report_format]
        sys.stdout.write(render(report))
    if report.breaking:
        broken = [pool.name for pool in report.pools if pool.status == "breaking"]
        say(
            f"talos-schematic: {len(broken)} pool{'s' * (len(broken) != 1)} would break on "
            f"Talos {report.talos_after}: {', '.join(broken)}"
        )
        raise typer.Exit(3)


def _print_rollout(report: UpgradeReport, kind: ReportFormat, nodes_from: Path | None) -> None:
    """The rollout script; exit 3 when a worker node belongs to no pool (nothing says which
    installer keeps its extensions)."""
    from schematic.inputs.nodes import read_nodes
    from schematic.output.render.rollout import rollout_talosctl, rollout_tuppr
    from schematic.plan.rollout import plan_rollout

    try:
        nodes = read_nodes(nodes_from) if nodes_from is not None else None
    except TalosSchematicError as err:
        raise fail(err) from None
    rollout = plan_rollout(report, nodes)
    render = rollout_talosctl if kind == ReportFormat.talosctl else rollout_tuppr
    sys.stdout.write(render(rollout))
    if nodes is None:
        say(
            "talos-schematic: no node list: the commands are per pool; give --nodes-from "
            "(kubectl get nodes -o json) for one per node"
        )
    if rollout.unplaced:
        names = ", ".join(node.name for node in rollout.unplaced)
        say(f"talos-schematic: nodes in no pool, not upgraded: {names}")
        raise typer.Exit(3)
