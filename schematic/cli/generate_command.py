"""`talos-schematic generate, check`: a cluster file → per-pool values, patches, schematics, URLs.

The pipeline is plan (pure) → render (pure, ``path → bytes``) → write (atomic) or compare; the
library does each step and this module only chains them and maps errors to exit codes.

Only ``--live-catalogue`` and ``--register`` talk to an Image Factory, between the plan and the
render: the catalogue check first (so no misspelt schematic is registered), then one POST per
distinct schematic. Either failing ends the run before anything is written.
``schematic.factory.client`` (and with it httpx) is imported only then, so offline runs start fast.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

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
    progress_line,
)
from schematic.errors import TalosSchematicError

if TYPE_CHECKING:
    from schematic.factory.client import FactoryClient
    from schematic.output.outdir import OutputIndex, Tree, Written
    from schematic.output.render.files import Kind
    from schematic.plan.charts import ChartFit
    from schematic.plan.cluster import ClusterPlan

_PROBLEMS_SHOWN = 10
# Kinds whose consumer takes the stream as one whole (talosctl patch mc --patch @file, a
# factory POST, a .tf.json file): several pools' documents on stdout would patch or register the
# wrong pool, or not parse.
# Values stay a stream: each document names its pool, for tools that split them.
_ONE_DOCUMENT_KINDS = ("machine-config", "schematic", "terraform")


class OutputFormat(StrEnum):
    cozystack = "cozystack"
    values = "values"
    machine_config = "machine-config"
    schematic = "schematic"
    json = "json"
    urls = "urls"
    addons = "addons"
    platform = "platform"
    smoke_test = "smoke-test"
    helmrelease = "helmrelease"
    talhelper = "talhelper"
    omni = "omni"
    terraform = "terraform"


class CheckReport(StrEnum):
    text = "text"
    json = "json"


class LayoutChoice(StrEnum):
    osimage = "osimage"
    schematicid = "schematicid"
    talos = "talos"


_Choice = TypeVar("_Choice", bound=StrEnum)


ClusterArgument = Annotated[
    Path,
    typer.Argument(help="Cluster file (YAML): cluster, talos, nvidia, pools.", metavar="CLUSTER"),
]
FormatOption = Annotated[
    list[OutputFormat] | None,
    typer.Option(
        "--format",
        "-f",
        help=(
            "What to print (default cozystack); with --out, write only these kinds "
            "(repeatable; default: every kind except json and helmrelease) and keep every "
            "other file of DIR. machine-config and schematic are one document per pool: on "
            "stdout, pick the pool with --pool. addons: the tenant Kubernetes "
            "app's GPU Operator values (with --out -f cozystack, the whole Kubernetes object); "
            "platform: the management cluster's passthrough entries for GPUs its defaults "
            "lack; smoke-test: an nvidia-smi -L pod per GPU pool; helmrelease: a Flux "
            "HelmRelease of the kubernetes-nodes chart per pool, instead of the "
            "KubernetesNodes object; talhelper: the talconfig.yaml keys (schematic, "
            "kernelModules, patches) of each pool's nodes; omni: an Omni cluster-template "
            "Workers machine set per pool; terraform: a pool's .tf.json (its "
            "talos_image_factory_schematic, schematic ID, images and config_patches)."
        ),
    ),
]
LayoutOption = Annotated[
    LayoutChoice | None,
    typer.Option(
        "--layout",
        help=(
            "Where values carry the schematic: osimage (osImage.factory), schematicid "
            "(root schematicID, cozystack PR #3571), talos (talos.schematicID, Cozystack v1.6.x); "
            "default: the chart target's."
        ),
        show_default=False,
    ),
]
ChartOption = Annotated[
    str | None,
    typer.Option(
        "--chart",
        metavar="TARGET",
        help=(
            "The Cozystack release or chart the values are for: v1.6 (v1.6.0 to v1.6.4), v1.7, "
            "main, or pr3571 / osimage (PR #4171); overrides the cluster file's "
            "cozystack.version."
        ),
        show_default=False,
    ),
]
AllowIgnoredOption = Annotated[
    bool,
    typer.Option(
        "--allow-ignored-keys",
        help=(
            "Write keys the chart target ignores instead of refusing them, with a warning "
            "naming what will not happen."
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
LiveCatalogueOption = Annotated[
    bool,
    typer.Option(
        "--live-catalogue",
        help=(
            "Check every pool's extensions (cached on disk for a day) and board overlay "
            "against the factory's lists for the Talos version; with --out, also write "
            "extensions.lock.yaml pinning each "
            "extension's image ref and digest."
        ),
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


def _fit(
    plan: ClusterPlan, chart: str | None, layout: LayoutChoice | None, *, insist: bool
) -> ChartFit:
    """The plan held against its chart; says on stderr which target was assumed."""
    from schematic.plan.charts import check_chart_name, fit_plan

    if chart is not None:
        # A bad --chart is a usage error (exit 2), as on lint; a bad cozystack.version in the
        # cluster file is the file's error (exit 1).
        try:
            check_chart_name(chart)
        except ValueError as err:
            raise typer.BadParameter(str(err), param_hint="--chart") from None
    fit = fit_plan(
        plan, chart=chart, layout=None if layout is None else layout.value, insist=insist
    )
    if fit.assumption:
        print(f"talos-schematic: note: {fit.assumption}", file=sys.stderr)
    return fit


def _plan(cluster_file: Path, profiles: list[Path] | None) -> ClusterPlan:
    from schematic.inputs.cluster_file import load_cluster
    from schematic.plan.cluster import plan_cluster

    cluster = load_cluster(cluster_file)
    return plan_cluster(
        cluster,
        source=str(cluster_file),
        base_dir=cluster_file.parent,
        profile_dirs=tuple(profiles or ()),
    )


def _factory_client(factory: str | None, plan: ClusterPlan) -> FactoryClient:
    from schematic.factory.client import FactoryClient, resolve_factory_url

    return FactoryClient(resolve_factory_url(factory, plan.talos.image_factory_url))


def _check_live_catalogue(client: FactoryClient, plan: ClusterPlan) -> str:
    """Raise CatalogError naming each pool whose extensions or board overlay the factory does not
    offer for the cluster's Talos version; otherwise return the lock file text."""
    from schematic.errors import CatalogError
    from schematic.factory.cache import live_extensions
    from schematic.factory.lock import build_lock
    from schematic.factory.names import check_extension_names, check_overlay
    from schematic.plan.cluster import pools_by_schematic, pools_label

    talos = plan.talos.version
    offered = live_extensions(client, talos)
    groups = pools_by_schematic(plan).values()
    # Asked only when a pool has an overlay: most clusters have none.
    boards = any(pools[0].media.overlay is not None for pools in groups)
    overlays = client.official_overlays(talos) if boards else []
    problems: list[str] = []
    for pools in groups:
        where = pools_label(plan.source, [pool.name for pool in pools])
        try:
            check_extension_names(offered, pools[0].extensions, talos=talos, factory=client.url)
        except CatalogError as err:
            problems += [f"{where}: {line}" for line in str(err).splitlines()]
        overlay = pools[0].media.overlay
        if overlay is None:
            continue
        try:
            check_overlay(overlays, overlay.name, overlay.image, talos=talos, factory=client.url)
        except CatalogError as err:
            problems.append(f"{where}: {err}")
    if problems:
        shown = problems[:_PROBLEMS_SHOWN]
        if len(problems) > _PROBLEMS_SHOWN:
            shown.append(f"… and {len(problems) - _PROBLEMS_SHOWN} more")
        raise CatalogError("\n".join(shown))
    used = {name for pool in plan.pools for name in pool.extensions}
    used_boards = {
        (pool.media.overlay.name, pool.media.overlay.image)
        for pool in plan.pools
        if pool.media.overlay is not None
    }
    pinned = [info for info in overlays if (info.name, info.image) in used_boards]
    return build_lock(offered, used, factory=client.url, talos=talos, overlays=pinned)


def _register(client: FactoryClient, plan: ClusterPlan) -> ClusterPlan:
    """POST each distinct schematic once; the plan carrying the IDs the factory answered."""
    from schematic.factory.client import register_schematics
    from schematic.plan.cluster import (
        boot_media_schematics,
        pools_by_schematic,
        pools_label,
        with_factory_schematics,
    )

    items = [
        (pools_label(plan.source, [pool.name for pool in pools]), pools[0].schematic)
        for pools in pools_by_schematic(plan).values()
    ]
    # The boot media's own schematics (boot.schematic): a factory builds no ISO or PXE script
    # for an ID it has not received.
    booting = boot_media_schematics(plan)
    if booting:
        from schematic.core.model import Schematic

        items += [(label, Schematic.from_yaml(body)) for label, _key, body in booting]
    registrations = register_schematics(
        client, items, progress=progress_line("registering schematics")
    )
    stamped = {
        registration.offline_id: (registration.id, registration.canonical)
        for registration in registrations.values()
        if registration.factory_changed_body
    }
    for registration in registrations.values():
        if registration.notice:
            print(f"talos-schematic: {registration.notice}", file=sys.stderr)
    if client.url != plan.talos.image_factory_url:
        print(
            f"talos-schematic: note: registered with {client.url}; the generated image URLs "
            f"point at talos.imageFactoryURL {plan.talos.image_factory_url}",
            file=sys.stderr,
        )
    return with_factory_schematics(plan, stamped) if stamped else plan


def _consult_factory(
    plan: ClusterPlan, factory: str | None, *, register: bool, live_catalogue: bool
) -> tuple[ClusterPlan, str | None]:
    """The plan after registration (if asked), and the lock text (with --live-catalogue)."""
    if not (register or live_catalogue):
        return plan, None
    lock = None
    with _factory_client(factory, plan) as client:
        if live_catalogue:
            lock = _check_live_catalogue(client, plan)
        if register:
            plan = _register(client, plan)
    return plan, lock


def _kinds(formats: list[str] | None) -> tuple[Kind, ...]:
    from schematic.output.render.files import DEFAULT_KINDS, KINDS

    if not formats:
        return DEFAULT_KINDS
    return tuple(kind for kind in KINDS if kind in formats)


def _out_directory(out: str | None) -> Path | None:
    """``--out`` as a path; an empty one (an unset shell variable) is a usage error, not the
    current directory."""
    if out is None:
        return None
    if not out:
        raise typer.BadParameter(
            "is empty (an unset variable?); give the directory to write", param_hint="--out"
        )
    return Path(out)


def _selected(plan: ClusterPlan, pools: list[str] | None) -> ClusterPlan:
    """The plan of the pools named with --pool (all without it); a name the cluster file does
    not have is a usage error listing the ones it has."""
    if not pools:
        return plan
    check_pool_names(plan.source, [pool.name for pool in plan.pools], pools)
    wanted = set(pools)
    return dataclasses.replace(plan, pools=tuple(p for p in plan.pools if p.name in wanted))


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
    max_input_size: MaxInputSizeOption = None,
) -> None:
    """Per pool: schematic and ID, Cozystack KubernetesNodes values, a Talos machine-config
    patch and the boot-image / installer URLs, all carrying the same schematic.

    Credentials: $TALOS_SCHEMATIC_FACTORY_TOKEN or $TALOS_SCHEMATIC_FACTORY_AUTH (user:password).

    Example: talos-schematic generate cluster.yaml --out deploy/mycluster
    """
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
    directory = _out_directory(out)
    if directory is None and len(set(formats)) > 1:
        raise typer.BadParameter(
            "several kinds go to files: add --out DIR, or print one kind at a time",
            param_hint="--format",
        )
    try:
        with _no_collector_passes():
            plan = _plan(cluster_file, profiles)
            shown = _selected(plan, pool)
            if directory is None:
                kind = _kind(formats[0] if formats else "cozystack")
                _one_document_check(shown, kind)
            fit = _fit(plan, chart, layout, insist=allow_ignored_keys)
            plan, lock = _consult_factory(
                plan, factory, register=register, live_catalogue=live_catalogue
            )
            if directory is None:
                from schematic.output.render.files import render_stream

                sys.stdout.write(render_stream(_selected(plan, pool), kind, fit))
                _print_notes(plan, fit, platform_written=kind == "platform")
                return
            written, notes = _write(directory, plan, fit, formats, lock, pool, profiles, force)
    except TalosSchematicError as err:
        raise fail(err) from None
    _print_notes(plan, fit, platform_written="platform" in _kinds(formats))
    for note in notes:
        print(f"talos-schematic: note: {note}", file=sys.stderr)
    pools = len(plan.pools)
    state = "written to" if written.changed else "already up to date in"
    chart = f"chart {fit.target.name}" + (" (assumed)" if fit.assumption else "")
    print(
        f"{pools} pool{'s' * (pools != 1)}, {written.files} files {state} {out} ({chart})",
        file=sys.stderr,
    )
    from schematic.output.render.summary import decision_lines

    for line in decision_lines(plan):
        print(f"  {line}", file=sys.stderr)


def _one_document_check(plan: ClusterPlan, kind: Kind) -> None:
    if kind in _ONE_DOCUMENT_KINDS and len(plan.pools) > 1:
        names = ", ".join(pool.name for pool in plan.pools)
        raise typer.BadParameter(
            f"{kind} is one document per pool, and {plan.source} has {len(plan.pools)} pools "
            f"({names}); pick one with --pool NAME, or write each to its file with --out DIR",
            param_hint="--format",
        )


def _write(
    directory: Path,
    plan: ClusterPlan,
    fit: ChartFit,
    formats: list[str],
    lock: str | None,
    pools: list[str] | None,
    profiles: list[Path] | None,
    force: bool,
) -> tuple[Written, list[str]]:
    """Write the plan's tree into DIR; what was written, and the notes to print."""
    from schematic.output.outdir import LOCK, profile_records, read_index, write_directory
    from schematic.output.render.files import render_tree

    old = read_index(directory)
    kustomization = _own_kustomization(directory, old)
    tree = render_tree(plan, _kinds(formats), fit, kustomization=kustomization)
    files = dict(tree.files)
    if lock is not None:
        files[LOCK] = lock.encode()
    index = dataclasses.replace(tree.index, profiles=profile_records(directory, profiles or ()))
    tree = dataclasses.replace(tree, files=files, index=index)
    notes = _unreachable(plan, fit, directory, old, tree)
    written = write_directory(directory, tree, pools=pools, force=force)
    for name in written.removed_pools:
        print(
            f"talos-schematic: removed pool {name}: it is no longer in {plan.source}",
            file=sys.stderr,
        )
    for name, why in written.kept:
        notes.append(
            f"{directory / name}: not removed ({why}); delete it yourself if it is no longer wanted"
        )
    return written, notes


def _unreachable(
    plan: ClusterPlan, fit: ChartFit, directory: Path, old: OutputIndex | None, tree: Tree
) -> list[str]:
    """Notes for pools whose kernel modules change in DIR while their schematic does not."""
    from schematic.output.outdir import read_owned_file
    from schematic.plan.charts import VALUES_FILES, unreachable_changes

    if old is None:
        return []
    before: dict[str, bytes] = {}
    for pool in plan.pools:
        for name in (f"{pool.name}/{file}" for file in VALUES_FILES):
            if name in tree.files:
                try:
                    content = read_owned_file(directory, name)
                except OSError:
                    continue  # not a file the tool wrote: writing reports it
                if content is not None:
                    before[name] = content
    new_ids = tree.index.schematic_ids()
    return unreachable_changes(
        plan.source, old.schematic_ids(), before, new_ids, tree.files, fit.target
    )


def _own_kustomization(directory: Path, index: OutputIndex | None) -> bool:
    """Whether to write kustomization.yaml: not when DIR holds one this tool did not write
    (its index.yaml does not record it), which is the user's to keep."""
    from schematic.output.outdir import KUSTOMIZATION

    if not os.path.lexists(directory / KUSTOMIZATION):
        return True
    return index is not None and index.owns_kustomization


def _choice(choices: type[_Choice], value: object) -> _Choice | None:
    """``value`` as one of ``choices``; None when absent or not one of them."""
    return next((choice for choice in choices if choice.value == value), None)


def _print_notes(plan: ClusterPlan, fit: ChartFit, *, platform_written: bool) -> None:
    from schematic.plan.cluster import hami_notes, non_nvidia_gpu_notes, unloaded_module_notes
    from schematic.plan.gpupath import missing_passthrough_note

    defects = [
        f'{plan.source}: pool "{pool.name}": does not work: {defect}'
        for pool in plan.pools
        if pool.nvidia is not None
        for defect in pool.nvidia.defects
    ]
    for warning in [*fit.warnings, *hami_notes(plan), *defects]:
        print(f"talos-schematic: warning: {warning}", file=sys.stderr)
    notes = [*unloaded_module_notes(plan), *non_nvidia_gpu_notes(plan), *fit.notes]
    # Without the platform values in this run's output, nothing else says that the
    # management cluster would refuse the pool's VMs.
    passthrough = None if platform_written else missing_passthrough_note(plan)
    for note in [*notes, *([passthrough] if passthrough else [])]:
        print(f"talos-schematic: note: {note}", file=sys.stderr)


def _kind(name: str) -> Kind:
    from schematic.output.render.files import KINDS

    for kind in KINDS:
        if kind == name:
            return kind
    raise typer.BadParameter(f"unknown format {name!r}")


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
                "are those "
                "DIR's index.yaml records."
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
    max_input_size: MaxInputSizeOption = None,
) -> None:
    """Regenerate in memory and compare with DIR: exit 3 listing each file that differs, is
    missing or is extra (the GitOps drift gate).

    Chart target, layout, kinds of file and --profiles directories come from DIR's index.yaml;
    --chart, --layout, --profiles win. Offline, extensions.lock.yaml is not compared: it needs
    the factory's catalogue. With --live-catalogue, the names are checked and the lock file is
    compared too.

    Example: talos-schematic check cluster.yaml --out deploy/mycluster --diff
    """
    report_format = json_alias(report_format, as_json, CheckReport.text)
    directory = _out_directory(out)
    assert directory is not None
    try:
        from schematic.output.outdir import (
            LOCK,
            compare_directory,
            read_index,
            recorded_profile_dirs,
            recorded_registrations,
        )

        recorded = read_index(directory)
        if recorded is not None:
            if chart is None:
                chart = recorded.chart
            layout = layout if layout is not None else _choice(LayoutChoice, recorded.layout)
            allow_ignored_keys = allow_ignored_keys or recorded.allow_ignored_keys
            if profiles is None and recorded.profiles:
                profiles, profile_notes = recorded_profile_dirs(directory, recorded)
                for note in profile_notes:
                    print(f"talos-schematic: note: {note}", file=sys.stderr)
        kinds = _kinds(list(recorded.kinds) if recorded is not None else None)
        with _no_collector_passes():
            plan = _plan(cluster_file, profiles)
            _selected(plan, pool)
            fit = _fit(plan, chart, layout, insist=allow_ignored_keys)
            plan, lock = _consult_factory(
                plan, factory, register=False, live_catalogue=live_catalogue
            )
            from schematic.output.render.files import render_tree
            from schematic.plan.cluster import with_factory_schematics

            names = [p.name for p in _selected(plan, pool).pools]
            plan = with_factory_schematics(plan, recorded_registrations(directory, recorded, names))
            kustomization = _own_kustomization(directory, recorded)
            tree = render_tree(plan, kinds, fit, kustomization=kustomization)
            if lock is not None:
                tree = dataclasses.replace(tree, files={**tree.files, LOCK: lock.encode()})
            else:
                # Offline, the lock file cannot be judged: it is neither compared nor extra.
                covers = tree.covers
                tree = dataclasses.replace(tree, covers=lambda path: path != LOCK and covers(path))
            if recorded is not None and profiles:
                from schematic.output.outdir import profile_records

                index = dataclasses.replace(
                    tree.index, profiles=profile_records(directory, profiles)
                )
                tree = dataclasses.replace(tree, index=index)
            drift, expected = compare_directory(directory, tree, pools=pool)
            diff = None
            if show_diff:
                from schematic.output.drift import drift_diff

                diff = drift_diff(directory, expected, drift) if drift else ""
            if report_format == CheckReport.json:
                from schematic.output.drift import drift_json

                sys.stdout.write(
                    drift_json(drift, directory=directory, cluster_file=cluster_file, diff=diff)
                )
            elif diff:
                sys.stdout.write(diff)
    except TalosSchematicError as err:
        raise fail(err) from None
    if drift:
        print(f"{out}: out of date with {cluster_file}:", file=sys.stderr)
        for line in drift.lines():
            print(f"  {line}", file=sys.stderr)
        import shlex

        # Every option that shapes the output (or was needed to read the input), so the hint
        # regenerates exactly this; quoted, so a path with a space pastes into a shell whole.
        options = [str(cluster_file), "--out", str(out), "--chart", fit.target.name]
        options += ["--layout", str(fit.layout)]
        for kind in kinds if recorded is not None and kinds != _kinds(None) else ():
            options += ["--format", kind]
        for name in pool or ():
            options += ["--pool", name]
        if allow_ignored_keys:
            options.append("--allow-ignored-keys")
        for profile_dir in profiles or ():
            options += ["--profiles", str(profile_dir)]
        if live_catalogue:
            options.append("--live-catalogue")
        if factory is not None:
            from schematic.inputs.factory_url import without_userinfo

            # A user:password@ in the URL must not reach a CI log.
            options += ["--factory", without_userinfo(factory)]
        if max_input_size is not None:
            options += ["--max-input-size", max_input_size]
        if drift.changed:
            # A changed file is no longer provably the tool's: replacing it must be asked for.
            options.append("--force")
        print(
            f"regenerate with: talos-schematic generate {shlex.join(options)}",
            file=sys.stderr,
        )
        raise typer.Exit(3)
    print(f"{out}: up to date with {cluster_file}", file=sys.stderr)
