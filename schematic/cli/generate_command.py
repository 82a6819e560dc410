"""`talos-schematic generate, check`: a cluster file → per-pool values, patches, schematics, URLs.

The pipeline is plan (pure) → render (pure, ``path → bytes``) → write (atomic) or compare; the
library does each step and this module only chains them and maps errors to exit codes.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from schematic.cli import app, fail
from schematic.errors import TalosSchematicError

if TYPE_CHECKING:
    from schematic.cluster import ClusterPlan
    from schematic.render.files import Kind


class OutputFormat(StrEnum):
    cozystack = "cozystack"
    values = "values"
    machine_config = "machine-config"
    schematic = "schematic"
    json = "json"
    urls = "urls"


class LayoutChoice(StrEnum):
    osimage = "osimage"
    schematicid = "schematicid"
    talos = "talos"


ClusterArgument = Annotated[
    Path,
    typer.Argument(help="cluster file (YAML): cluster, talos, nvidia, pools", metavar="CLUSTER"),
]
FormatOption = Annotated[
    OutputFormat | None,
    typer.Option(
        "--format",
        "-f",
        help=(
            "what to print (default cozystack); with --out, write only this kind "
            "(default: every kind except json)"
        ),
    ),
]
LayoutOption = Annotated[
    LayoutChoice,
    typer.Option(
        "--layout",
        help=(
            "where values carry the schematic: osimage (osImage.factory), schematicid "
            "(root schematicID, cozystack PR #3571), talos (talos.schematicID, Cozystack v1.6.x)"
        ),
    ),
]
ProfilesOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--profiles",
        help="directory of hardware profiles, searched before the shipped ones (repeatable)",
    ),
]


@contextmanager
def _no_collector_passes() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large plan is built and rendered.

    Plans and outputs are acyclic and live until the command ends; with thousands of pools the
    collector's repeated passes over them cost several times the work itself.
    """
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _plan(cluster_file: Path, profiles: list[Path] | None) -> ClusterPlan:
    from schematic.cluster import load_cluster, plan_cluster

    cluster = load_cluster(cluster_file)
    return plan_cluster(
        cluster,
        source=str(cluster_file),
        base_dir=cluster_file.parent,
        profile_dirs=tuple(profiles or ()),
    )


def _kinds(output_format: OutputFormat | None) -> tuple[Kind, ...]:
    from schematic.render.files import KINDS

    if output_format is None:
        return tuple(kind for kind in KINDS if kind != "json")
    return tuple(kind for kind in KINDS if kind == output_format.value)


@app.command()
def generate(
    cluster_file: ClusterArgument,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="write one file per pool per kind, plus index.yaml, replacing DIR atomically",
            metavar="DIR",
        ),
    ] = None,
    output_format: FormatOption = None,
    layout: LayoutOption = LayoutChoice.osimage,
    values_only: Annotated[
        bool, typer.Option("--values-only", help="print only each pool's spec (--format values)")
    ] = False,
    profiles: ProfilesOption = None,
) -> None:
    """Per pool: schematic and ID, Cozystack KubernetesNodes values, a Talos machine-config
    patch and the boot-image / installer URLs, all carrying the same schematic."""
    if values_only:
        if output_format not in (None, OutputFormat.values):
            raise typer.BadParameter("--values-only is --format values", param_hint="--format")
        output_format = OutputFormat.values
    try:
        with _no_collector_passes():
            plan = _plan(cluster_file, profiles)
            # Registration with an Image Factory belongs here: between the plan and the files.
            if out is None:
                from schematic.render.files import render_stream

                kind = _kind((output_format or OutputFormat.cozystack).value)
                sys.stdout.write(render_stream(plan, kind, layout.value))
                return
            from schematic.output import write_outputs
            from schematic.render.files import INDEX, render_files

            files = render_files(plan, _kinds(output_format), layout.value)
            written = write_outputs(out, files, marker=INDEX)
    except TalosSchematicError as err:
        raise fail(err) from None
    pools = len(plan.pools)
    state = "written to" if written else "already up to date in"
    print(f"{pools} pool{'s' * (pools != 1)}, {len(files)} files {state} {out}", file=sys.stderr)


def _kind(name: str) -> Kind:
    from schematic.render.files import KINDS

    for kind in KINDS:
        if kind == name:
            return kind
    raise typer.BadParameter(f"unknown format {name!r}")


@app.command()
def check(
    cluster_file: ClusterArgument,
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="directory an earlier `generate --out` wrote", metavar="DIR"
        ),
    ],
    output_format: FormatOption = None,
    layout: LayoutOption = LayoutChoice.osimage,
    profiles: ProfilesOption = None,
) -> None:
    """Regenerate in memory and compare with DIR: exit 3 listing each file that differs, is
    missing or is extra (the GitOps drift gate)."""
    try:
        with _no_collector_passes():
            plan = _plan(cluster_file, profiles)
            from schematic.output import compare_outputs
            from schematic.render.files import render_files

            files = render_files(plan, _kinds(output_format), layout.value)
            drift = compare_outputs(out, files)
    except TalosSchematicError as err:
        raise fail(err) from None
    if drift:
        print(f"{out}: out of date with {cluster_file}:", file=sys.stderr)
        for line in drift.lines():
            print(f"  {line}", file=sys.stderr)
        options = [f"--out {out}"]
        if output_format is not None:
            options.append(f"--format {output_format.value}")
        if layout != LayoutChoice.osimage:
            options.append(f"--layout {layout.value}")
        options += [f"--profiles {directory}" for directory in profiles or ()]
        print(
            f"regenerate with: talos-schematic generate {cluster_file} {' '.join(options)}",
            file=sys.stderr,
        )
        raise typer.Exit(3)
    print(f"{out}: up to date with {cluster_file}", file=sys.stderr)
