"""`talos-schematic check`: compare an output directory with what generate would write (exit 3).

The library regenerates in memory and compares (:func:`schematic.api.check`); this module
parses the options, prints the drift, the diff or its JSON, and the command that regenerates.
"""

from __future__ import annotations

import shlex
import sys
from enum import StrEnum
from pathlib import Path
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
    fail,
    json_alias,
    out_directory,
    run_library,
)
from schematic.cli.options import (
    AssumeDriversOption,
    FactsOption,
    QuietOption,
    deciding_by_facts,
    quieted,
)
from schematic.cli.telling import VerboseOption, say, tell
from schematic.errors import TalosSchematicError, printable
from schematic.messages import Message

if TYPE_CHECKING:
    from schematic.api import Result
    from schematic.output.disk import Drift


class CheckReport(StrEnum):
    text = "text"
    json = "json"


CheckFactoryOption = Annotated[
    str | None,
    typer.Option(
        "--factory",
        metavar="URL",
        help=(
            "Image Factory for --live-catalogue (default: $TALOS_SCHEMATIC_FACTORY, else the "
            "cluster file's talos.imageFactoryURL)."
        ),
        show_default=False,
    ),
]


def _regenerate_hint(
    result: Result[Drift], cluster_file: Path, out: str, options: dict[str, object]
) -> str:
    """The generate command that rewrites DIR as check expects it: every option that shapes the
    output (or was needed to read the input), quoted so a path with a space pastes whole."""
    from schematic.api.kinds_asked import kinds_of

    request, fit, plan = result.request, result.fit, result.plan
    assert request is not None and fit is not None and plan is not None  # check sets them
    words = [str(cluster_file), "--out", out]
    if any(pool.tenant_pool for pool in plan.pools):  # a chart reads only Cozystack pools
        words += ["--chart", fit.target.name, "--layout", str(fit.layout)]
    recorded_kinds = kinds_of(request.kinds)
    for kind in recorded_kinds if request.kinds and recorded_kinds != kinds_of(None) else ():
        words += ["--format", kind]
    for name in request.pools:
        words += ["--pool", name]
    if request.allow_ignored_keys:
        words.append("--allow-ignored-keys")
    for profile_dir in request.profiles:
        words += ["--profiles", str(profile_dir)]
    if request.live_catalogue:
        words.append("--live-catalogue")
    if request.factory is not None:
        from schematic.inputs.factory_url import without_userinfo

        # A user:password@ in the URL must not reach a CI log.
        words += ["--factory", without_userinfo(request.factory)]
    if options["max_input_size"] is not None:
        words += ["--max-input-size", str(options["max_input_size"])]
    hint = f"regenerate with: talos-schematic generate {shlex.join(words)}"
    if not result.detail.changed:
        return hint
    # An edited file is no longer provably the tool's, so generate keeps it and stops. Named
    # here, not overridden with --force (which also replaces files the tool never wrote): the
    # user decides about each.
    edited = " ".join(shlex.quote(f"{out}/{path}") for path in result.detail.changed)
    return (
        "generate keeps a file changed since it wrote it and stops there: remove (or restore "
        f"from version control) {edited}, then\n{hint}"
    )


@app.command(short_help="Compare DIR with what generate would write; exit 3 on drift.")
def check(
    cluster_file: ClusterArgument,
    out: Annotated[
        str,
        typer.Option(
            "--out",
            "-o",
            help="Directory an earlier `generate --out` wrote. Example: --out deploy/gpu.",
            metavar="DIR",
        ),
    ],
    report_format: Annotated[
        CheckReport,
        typer.Option(
            "--format",
            "-f",
            help=(
                "As text: the drifted files, on stderr; as json: on stdout, the changed, "
                "missing and extra paths (and with --diff the diff). The kinds of file compared "
                "are those DIR's index.yaml records."
            ),
        ),
    ] = CheckReport.text,
    as_json: JsonAliasOption = False,
    pool: PoolOption = None,
    layout: LayoutOption = None,
    chart: ChartOption = None,
    allow_ignored_keys: AllowIgnoredOption = False,
    profiles: ProfilesOption = None,
    live_catalogue: LiveCatalogueOption = False,
    factory: CheckFactoryOption = None,
    show_diff: Annotated[
        bool,
        typer.Option(
            "--diff",
            help=(
                "Also print, on stdout, a unified diff of every drifted file from what DIR "
                "holds to what generate would write (patch -p0 applies it)."
            ),
        ),
    ] = False,
    diff_index: Annotated[
        bool,
        typer.Option(
            "--diff-index",
            help="With --diff, diff index.yaml too (left out: its digests follow every file).",
        ),
    ] = False,
    facts: FactsOption = None,
    assume_drivers_of: AssumeDriversOption = None,
    max_input_size: MaxInputSizeOption = None,
    quiet: QuietOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Regenerate in memory and compare with DIR: exit 3 listing each file that differs, is
    missing or is extra (the GitOps drift gate).

    Chart target, layout, kinds of file and --profiles directories come from DIR's index.yaml;
    --chart, --layout, --profiles win. Offline, extensions.lock.yaml is not compared: it needs
    the factory's catalogue. With --live-catalogue, the names are checked and the lock file is
    compared too.

    Example: talos-schematic check cluster.yaml --out deploy/mycluster --diff
    """
    with quieted(quiet):
        from schematic.api import Request

        report_format = json_alias(report_format, as_json, CheckReport.text)
        directory = out_directory(out)
        assert directory is not None
        request = Request(
            cluster_file,
            out=directory,
            pools=tuple(pool or ()),
            chart=chart,
            layout=None if layout is None else layout.value,
            allow_ignored_keys=allow_ignored_keys,
            profiles=tuple(profiles or ()),
            live_catalogue=live_catalogue,
            factory=factory,
        )
        from schematic import api

        with deciding_by_facts(facts, assume_drivers_of, cluster_file.parent) as facts_used:
            result = run_library(api.check, request, verbose=verbose)
        drift = result.detail
        try:
            from schematic.output.drift import drift_diff, drift_json

            diff = None
            if show_diff:
                diff = drift_diff(directory, result.files, drift, index=diff_index) if drift else ""
            if report_format == CheckReport.json:
                sys.stdout.write(
                    drift_json(drift, directory=directory, cluster_file=cluster_file, diff=diff)
                )
            elif diff:
                sys.stdout.write(diff)
        except TalosSchematicError as err:
            raise fail(err) from None
        tell([Message(level="", cause=facts_used)])
        if not drift:
            say(f"{_name(out)}: up to date with {_name(cluster_file)}")
            return
        hint = _regenerate_hint(result, cluster_file, out, {"max_input_size": max_input_size})
        say(
            f"{_name(out)}: out of date with {_name(cluster_file)}:",
            *(f"  {line}" for line in drift.lines()),
        )
        # The command to run: whole, to be copied, never broken across lines.
        print(hint, file=sys.stderr)
        raise typer.Exit(3)


def _name(path: object) -> str:
    """A path for a message: on one line whatever it holds."""
    return printable(str(path), one_line=True)
