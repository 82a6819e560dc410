"""`talos-schematic generate, check`: a cluster file → per-pool values, patches, schematics, URLs.

The library does every step (:func:`schematic.api.generate`, :func:`schematic.api.check`); this
module parses the options, prints what the library returns and maps errors to exit codes.
Only ``--live-catalogue`` and ``--register`` talk to an Image Factory (httpx is imported only
then, so offline runs start fast).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from schematic.cli.base import (
    AllowIgnoredOption,
    ChartOption,
    ClusterArgument,
    JsonAliasOption,
    LayoutOption,
    LiveCatalogueOption,
    MaxInputSizeOption,
    PoolOption,
    ProfilesOption,
    app,
    out_directory,
    progress_line,
    run_library,
)
from schematic.cli.options import AssumeDriversOption, FactsOption, deciding_by_facts
from schematic.cli.telling import VerboseOption, say, tell
from schematic.errors import printable
from schematic.messages import Message
from schematic.output.render.kinds import DEFAULT_KINDS, OUTPUT_KINDS

if TYPE_CHECKING:
    OutputFormat = StrEnum
else:
    # --format's choices are the kinds' table's names, in its order.
    OutputFormat = StrEnum("OutputFormat", {kind.name: kind.name for kind in OUTPUT_KINDS})

FormatOption = Annotated[
    list[OutputFormat] | None,
    typer.Option(
        "--format",
        "-f",
        # The kinds are listed in the help, each with what it is; in the option's column they
        # would make one line of 180 characters.
        metavar="KIND",
        help=(
            "What to print (default cozystack); with --out, write only these kinds "
            f"(repeatable; default: {', '.join(DEFAULT_KINDS)}) and keep every other file of "
            "DIR. "
            + "; ".join(
                f"{kind.name}: {kind.help}"
                + (
                    " (one document per pool: on stdout, pick the pool with --pool)"
                    if kind.one_document
                    else ""
                )
                for kind in OUTPUT_KINDS
            )
            + "."
        ),
    ),
]
OutOption = Annotated[
    str | None,
    typer.Option(
        "--out",
        "-o",
        help=(
            "Write one file per pool per kind, plus index.yaml recording each file's digest; "
            "files in DIR the tool did not write are never touched. "
            "Example: --out deploy/gpu."
        ),
        metavar="DIR",
        show_default=False,
    ),
]
FactoryOption = Annotated[
    str | None,
    typer.Option(
        "--factory",
        metavar="URL",
        help=(
            "Image Factory for --register and --live-catalogue (default: "
            "$TALOS_SCHEMATIC_FACTORY, else the cluster file's talos.imageFactoryURL); the "
            "generated image URLs keep talos.imageFactoryURL."
        ),
        show_default=False,
    ),
]


@app.command(
    short_help="Write each pool's schematic, Cozystack values, machine-config patch and URLs."
)
def generate(
    cluster_file: ClusterArgument,
    out: OutOption = None,
    output_format: FormatOption = None,
    as_json: JsonAliasOption = False,
    pool: PoolOption = None,
    layout: LayoutOption = None,
    chart: ChartOption = None,
    allow_ignored_keys: AllowIgnoredOption = False,
    values_only: Annotated[
        bool, typer.Option("--values-only", help="Print only each pool's spec (--format values).")
    ] = False,
    profiles: ProfilesOption = None,
    register: Annotated[
        bool,
        typer.Option(
            "--register",
            help=(
                "POST every distinct schematic to the Image Factory first and write only if "
                "all succeeded; an ID the factory answers differently (it stamped owner) is "
                "the one written. Without it, generate makes no network request."
            ),
        ),
    ] = False,
    live_catalogue: LiveCatalogueOption = False,
    factory: FactoryOption = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help=(
                "With --out: write into a directory that holds another cluster, and replace "
                "files the tool wrote that were edited since (never a file it did not write)."
            ),
        ),
    ] = False,
    facts: FactsOption = None,
    assume_drivers_of: AssumeDriversOption = None,
    max_input_size: MaxInputSizeOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Per pool: schematic and ID, Cozystack KubernetesNodes values, a Talos machine-config
    patch and the boot-image / installer URLs, all carrying the same schematic.

    Credentials: $TALOS_SCHEMATIC_FACTORY_TOKEN or $TALOS_SCHEMATIC_FACTORY_AUTH (user:password).

    Example: talos-schematic generate cluster.yaml --out deploy/mycluster
    """
    from schematic.api import Request

    formats = [kind.value for kind in output_format or ()]
    if as_json:
        if any(kind != "json" for kind in formats):
            raise typer.BadParameter(
                f"--json is --format json, not {formats[0]}", param_hint="--json"
            )
        formats = ["json"]
    if values_only:
        if any(kind != "values" for kind in formats):
            raise typer.BadParameter("--values-only is --format values", param_hint="--format")
        formats = ["values"]
    request = Request(
        cluster_file,
        out=out_directory(out),
        kinds=tuple(formats),
        pools=tuple(pool or ()),
        chart=chart,
        layout=None if layout is None else layout.value,
        allow_ignored_keys=allow_ignored_keys,
        profiles=tuple(profiles or ()),
        register=register,
        live_catalogue=live_catalogue,
        factory=factory,
        force=force,
        progress=progress_line("registering schematics") if register else None,
    )
    from schematic import api

    with deciding_by_facts(facts, assume_drivers_of, cluster_file.parent) as facts_used:
        result = run_library(api.generate, request, verbose=verbose)
    tell([Message(level="", cause=facts_used)])
    if request.out is None:
        return
    from schematic.output.render.summary import decision_lines

    plan, fit, written = result.plan, result.fit, result.detail
    assert plan is not None and fit is not None and written is not None  # set by a run with --out
    pools = len(plan.pools)
    state = "written to" if written.changed else "already up to date in"
    target = f"chart {fit.target.name}" + (" (assumed)" if fit.assumption else "")
    target += "" if fit.target.verified else ", unverified"
    # The chart is named only where a Cozystack (KubeVirt) pool's values are written for it.
    chart = f" ({target})" if any(pool.tenant_pool for pool in plan.pools) else ""
    say(
        f"{pools} pool{'s' * (pools != 1)}, {written.files} files {state} "
        f"{printable(str(out), one_line=True)}{chart}",
        *(f"  {line}" for line in decision_lines(plan)),
    )
