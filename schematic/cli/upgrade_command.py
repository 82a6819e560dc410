"""`talos-schematic upgrade`: what a Talos release bump does to each pool, before nodes see it.

The library plans the cluster file at both releases and compares them
(:mod:`schematic.plan.upgrade`) and renders the report
(:mod:`schematic.output.render.upgrade`); this module parses the options, fetches the
factory's catalogue for ``--live-catalogue`` (the only network
I/O, and the only reason httpx is imported) and maps a breaking pool to exit 3.
"""

from __future__ import annotations

import dataclasses
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
    check_pool_names,
    fail,
    json_alias,
)
from schematic.errors import TalosSchematicError

if TYPE_CHECKING:
    from schematic.plan.upgrade import TargetPlan


class ReportFormat(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


def _contradictions(
    cluster_file: Path,
    base: Path | None,
    to: str | None,
    since: str | None,
    cluster_version: str,
    base_version: str,
) -> list[str]:
    """With --base, each file states its own release: a --to or --from that says otherwise
    plans an upgrade that neither file describes."""
    if base is None:
        return []
    notes = []
    if to is not None and to != cluster_version:
        notes.append(
            f"--to {to} contradicts {cluster_file}'s talos.version {cluster_version}: planned "
            f"at {to}, but generate writes {cluster_version} from this file; drop --to, or "
            "set talos.version"
        )
    if since is not None and since != base_version:
        notes.append(
            f"--from {since} contradicts {base}'s talos.version {base_version}: planned from "
            f"{since}; drop --from, or pass the --base the nodes run"
        )
    return notes


def _live_names(target: TargetPlan, factory: str | None, image_factory_url: str) -> TargetPlan:
    from schematic.factory.cache import live_extensions
    from schematic.factory.client import FactoryClient
    from schematic.inputs.factory_url import resolve_factory_url
    from schematic.plan.upgrade import check_live_names

    with FactoryClient(resolve_factory_url(factory, image_factory_url)) as client:
        offered = live_extensions(client, target.talos)
        return check_live_names(target, (info.name for info in offered), factory=client.url)


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
            help="Report as text, json, or markdown (a table for a pull-request comment).",
        ),
    ] = ReportFormat.text,
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
    max_input_size: MaxInputSizeOption = None,
) -> None:
    """Per pool: schematic ID, extensions, NVIDIA driver, kernel modules and machine config
    before → after a Talos upgrade (or between --base and CLUSTER), and what the running
    nodes need (talosctl upgrade, or recreating Cozystack machines). Exit 3 when a pool would
    break (e.g. its GPU is dropped by the new driver), with the ways out; 0 otherwise. Offline
    unless --live-catalogue.

    Example: talos-schematic upgrade cluster.yaml --to v1.14.0 --format markdown
    """
    if to is None and since is None and base is None:
        raise typer.BadParameter(
            "give the release to upgrade to (or --from, or --base)", param_hint="--to"
        )
    report_format = json_alias(report_format, as_json, ReportFormat.text)
    from schematic.inputs.cluster_file import load_cluster
    from schematic.output.render.upgrade import upgrade_json, upgrade_markdown, upgrade_text
    from schematic.plan.upgrade import compare_plans, plan_at, plan_target, target_release

    for option, value in (("--to", to), ("--from", since)):
        try:
            if value is not None:
                target_release(value)
        except TalosSchematicError as err:
            raise typer.BadParameter(str(err), param_hint=option) from None

    source = str(cluster_file)
    try:
        cluster = load_cluster(cluster_file)
        deployed = cluster if base is None else load_cluster(base)
        before = since or deployed.talos.version
        after = to or cluster.talos.version
        base_dir, profile_dirs = cluster_file.parent, tuple(profiles or ())
        old, old_note = plan_at(
            deployed,
            before,
            source=source if base is None else str(base),
            base_dir=base_dir,
            profile_dirs=profile_dirs,
        )
        target = plan_target(
            cluster,
            after,
            source=source,
            base_dir=base_dir,
            profile_dirs=profile_dirs,
            stay_on=old.talos.version,
        )
        if live_catalogue:
            target = _live_names(target, factory, cluster.talos.image_factory_url)
        report = compare_plans(old, target)
    except TalosSchematicError as err:
        raise fail(err) from None
    if pool:
        check_pool_names(source, [change.name for change in report.pools], pool)
        chosen = tuple(change for change in report.pools if change.name in pool)
        report = dataclasses.replace(report, pools=chosen)
    contradictions = _contradictions(
        cluster_file, base, to, since, cluster.talos.version, deployed.talos.version
    )
    if contradictions:
        report = dataclasses.replace(report, notes=(*contradictions, *report.notes))
    if old_note:
        print(f"talos-schematic: note: {old_note}", file=sys.stderr)
    render = {
        ReportFormat.text: upgrade_text,
        ReportFormat.json: upgrade_json,
        ReportFormat.markdown: upgrade_markdown,
    }[report_format]
    sys.stdout.write(render(report))
    if report.breaking:
        broken = [pool.name for pool in report.pools if pool.status == "breaking"]
        print(
            f"talos-schematic: {len(broken)} pool{'s' * (len(broken) != 1)} would break on "
            f"Talos {report.talos_after}: {', '.join(broken)}",
            file=sys.stderr,
        )
        raise typer.Exit(3)
