"""`talos-schematic generate, check`: a cluster file → per-pool values, patches, schematics, URLs.

The pipeline is plan (pure) → render (pure, ``path → bytes``) → write (atomic) or compare; the
library does each step and this module only chains them and maps errors to exit codes.

Only ``--live-catalogue`` and ``--register`` talk to an Image Factory, between the plan and the
render: the catalogue check first (so no misspelt schematic is registered), then one POST per
distinct schematic. Either failing ends the run before anything is written. ``schematic.factory``
(and with it httpx) is imported only then, so offline runs start fast.
"""

from __future__ import annotations

import dataclasses
import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from schematic.cli.base import (
    JsonAliasOption,
    MaxInputSizeOption,
    app,
    fail,
    json_alias,
    progress_line,
)
from schematic.errors import TalosSchematicError

if TYPE_CHECKING:
    from schematic.charts import ChartFit
    from schematic.cluster import ClusterPlan
    from schematic.factory import FactoryClient
    from schematic.render.files import Kind

# Written beside index.yaml by `generate --out DIR --live-catalogue` (render.files.LOCK).
LOCK_FILE = "extensions.lock.yaml"
_PROBLEMS_SHOWN = 10


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
    OutputFormat | None,
    typer.Option(
        "--format",
        "-f",
        help=(
            "What to print (default cozystack); with --out, write only this kind "
            "(default: every kind except json and helmrelease). addons: the tenant Kubernetes "
            "app's GPU Operator values (with --out -f cozystack, the whole Kubernetes object); "
            "platform: the management cluster's passthrough entries for GPUs its defaults "
            "lack; smoke-test: an nvidia-smi -L pod per GPU pool; helmrelease: a Flux "
            "HelmRelease of the kubernetes-nodes chart per pool, instead of the "
            "KubernetesNodes object; talhelper: the talconfig.yaml keys (schematic, "
            "kernelModules, patches) of each pool's nodes."
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
ProfilesOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--profiles",
        metavar="DIR",
        help="Directory of hardware profiles, searched before the shipped ones (repeatable).",
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
            f"{LOCK_FILE} pinning each "
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
    from schematic.charts import check_chart_name, fit_plan

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
    from schematic.cluster import plan_cluster
    from schematic.inputs.cluster_file import load_cluster

    cluster = load_cluster(cluster_file)
    return plan_cluster(
        cluster,
        source=str(cluster_file),
        base_dir=cluster_file.parent,
        profile_dirs=tuple(profiles or ()),
    )


def _factory_client(factory: str | None, plan: ClusterPlan) -> FactoryClient:
    from schematic.factory import FactoryClient, resolve_factory_url

    return FactoryClient(resolve_factory_url(factory, plan.talos.image_factory_url))


def _check_live_catalogue(client: FactoryClient, plan: ClusterPlan) -> str:
    """Raise CatalogError naming each pool whose extensions or board overlay the factory does not
    offer for the cluster's Talos version; otherwise return the lock file text."""
    from schematic.cluster import pools_by_schematic, pools_label
    from schematic.errors import CatalogError
    from schematic.extension_cache import live_extensions
    from schematic.extension_lock import build_lock
    from schematic.extension_names import check_extension_names, check_overlay

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
    from schematic.cluster import (
        boot_media_schematics,
        pools_by_schematic,
        pools_label,
        with_factory_schematics,
    )
    from schematic.factory import register_schematics

    items = [
        (pools_label(plan.source, [pool.name for pool in pools]), pools[0].schematic)
        for pools in pools_by_schematic(plan).values()
    ]
    # The boot media's own schematics (boot.schematic): a factory builds no ISO or PXE script
    # for an ID it has not received.
    booting = boot_media_schematics(plan)
    if booting:
        from schematic.model import Schematic

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


def _kinds(output_format: OutputFormat | None) -> tuple[Kind, ...]:
    from schematic.render.files import DEFAULT_KINDS, KINDS

    if output_format is None:
        return DEFAULT_KINDS
    return tuple(kind for kind in KINDS if kind == output_format.value)


@app.command(
    short_help="Write each pool's schematic, Cozystack values, machine-config patch and URLs."
)
def generate(
    cluster_file: ClusterArgument,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help=(
                "Write one file per pool per kind, plus index.yaml; files in DIR that an "
                "earlier run did not write are kept."
            ),
            metavar="DIR",
        ),
    ] = None,
    output_format: FormatOption = None,
    as_json: JsonAliasOption = False,
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
    max_input_size: MaxInputSizeOption = None,
) -> None:
    """Per pool: schematic and ID, Cozystack KubernetesNodes values, a Talos machine-config
    patch and the boot-image / installer URLs, all carrying the same schematic.

    Credentials: $TALOS_SCHEMATIC_FACTORY_TOKEN or $TALOS_SCHEMATIC_FACTORY_AUTH (user:password).

    Example: talos-schematic generate cluster.yaml --out deploy/mycluster
    """
    if as_json:
        if output_format not in (None, OutputFormat.json):
            raise typer.BadParameter(
                f"--json is --format json, not {output_format.value}", param_hint="--json"
            )
        output_format = OutputFormat.json
    if values_only:
        if output_format not in (None, OutputFormat.values):
            raise typer.BadParameter("--values-only is --format values", param_hint="--format")
        output_format = OutputFormat.values
    try:
        with _no_collector_passes():
            plan = _plan(cluster_file, profiles)
            fit = _fit(plan, chart, layout, insist=allow_ignored_keys)
            plan, lock = _consult_factory(
                plan, factory, register=register, live_catalogue=live_catalogue
            )
            if out is None:
                from schematic.render.files import render_stream

                kind = _kind((output_format or OutputFormat.cozystack).value)
                sys.stdout.write(render_stream(plan, kind, fit))
                _print_notes(plan, fit, platform_written=kind == "platform")
                return
            from schematic.output import write_outputs
            from schematic.render.files import INDEX, owned_paths, render_files

            kustomization = _own_kustomization(out)
            kinds = _kinds(output_format)
            files = render_files(plan, kinds, fit, kustomization=kustomization)
            if lock is not None:
                files[LOCK_FILE] = lock.encode()
            unreachable = _unreachable_changes(out, plan, files, fit)
            written = write_outputs(out, files, index=INDEX, ownership=owned_paths)
    except TalosSchematicError as err:
        raise fail(err) from None
    _print_notes(plan, fit, platform_written="platform" in kinds)
    for note in unreachable:
        print(f"talos-schematic: note: {note}", file=sys.stderr)
    pools = len(plan.pools)
    state = "written to" if written else "already up to date in"
    chart = f"chart {fit.target.name}" + (" (assumed)" if fit.assumption else "")
    print(
        f"{pools} pool{'s' * (pools != 1)}, {len(files)} files {state} {out} ({chart})",
        file=sys.stderr,
    )
    from schematic.render.summary import decision_lines

    for line in decision_lines(plan):
        print(f"  {line}", file=sys.stderr)


def _recorded_registrations(out: Path, plan: ClusterPlan) -> dict[str, tuple[str, str]]:
    """Offline ID → (factory ID, stored body) for the schematics an earlier `generate --register`
    recorded as stamped by the factory (an Enterprise factory adds ``owner``).

    `check` never asks the factory, so it takes them from DIR: a body counts only if it still
    hashes to its recorded ID and, without its ``owner``, is the offline schematic itself
    (:func:`schematic.stamped.recorded_stamped_body`).
    """
    import yaml

    from schematic.render.files import INDEX, POOL_FILES
    from schematic.safe_yaml import load, read_text
    from schematic.stamped import recorded_stamped_body

    try:
        index = load(read_text(out / INDEX))
    except (OSError, yaml.YAMLError):
        return {}
    entries = index.get("pools") if isinstance(index, dict) else None
    # Only the plan's own pool directories are read (an index entry names any path).
    pools = {pool.name for pool in plan.pools}
    recorded: dict[str, tuple[str, str]] = {}
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict):
            continue
        name, stamped, offline = (entry.get(key) for key in _REGISTRATION_KEYS)
        if name not in pools:
            continue
        if not (isinstance(stamped, str) and isinstance(offline, str)):
            continue
        path = out / name / POOL_FILES["schematic"]
        try:
            body = read_text(path)
        except OSError:
            continue
        if recorded_stamped_body(body, stamped, offline):
            recorded[offline] = (stamped, body)
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict) and entry.get("name") in pools:
            recorded.update(_recorded_boot(out, entry))
    return recorded


_REGISTRATION_KEYS = ("name", "schematicID", "offlineSchematicID")


def _recorded_boot(out: Path, entry: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """A pool's stamped boot schematic as its urls.yaml holds it (``bootSchematic``), if the
    body still hashes to ``bootSchematicID`` and is, without ``owner``, the offline one."""
    import yaml

    from schematic.render.files import POOL_FILES
    from schematic.safe_yaml import load, read_text
    from schematic.stamped import recorded_stamped_body

    stamped, offline = entry.get("bootSchematicID"), entry.get("offlineBootSchematicID")
    if not (isinstance(stamped, str) and isinstance(offline, str)):
        return {}
    path = out / str(entry["name"]) / POOL_FILES["urls"]
    try:
        urls = load(read_text(path))
        body = urls.get("bootSchematic") if isinstance(urls, dict) else None
        if not isinstance(body, str):
            return {}
    except (OSError, yaml.YAMLError):
        return {}
    return {offline: (stamped, body)} if recorded_stamped_body(body, stamped, offline) else {}


def _unreachable_changes(
    out: Path, plan: ClusterPlan, files: dict[str, bytes], fit: ChartFit
) -> list[str]:
    """Notes for pools whose kernel modules change in DIR while their schematic does not."""
    from schematic.charts import unreachable_changes
    from schematic.output import read_tool_file
    from schematic.render.files import INDEX

    if not (out / INDEX).is_file():
        return []
    # Only the index and the files carrying each pool's values are read.
    wanted = [INDEX] + [
        f"{pool.name}/{name}"
        for pool in plan.pools
        for name in ("values.yaml", "kubernetes-nodes.yaml")
        if f"{pool.name}/{name}" in files
    ]
    before: dict[str, bytes] = {}
    for name in wanted:
        try:
            content = read_tool_file(out, name)
        except OSError:
            continue  # not a file the tool wrote: writing reports it
        if content is not None:
            before[name] = content
    return unreachable_changes(plan.source, before, files, fit.target)


def _own_kustomization(out: Path) -> bool:
    """Whether to write kustomization.yaml: not when DIR holds one this tool did not write
    (its index.yaml does not record it), which is the user's to keep."""
    from schematic.render.files import KUSTOMIZATION

    if not (out / KUSTOMIZATION).exists():
        return True
    return _recorded_options(out).get("kustomization") == KUSTOMIZATION


def _recorded_options(out: Path) -> dict[str, object]:
    """The chart target, layout, format and --allow-ignored-keys DIR's index.yaml records."""
    import yaml

    from schematic.render.files import INDEX
    from schematic.safe_yaml import load, read_text

    try:
        index = load(read_text(out / INDEX))
    except (OSError, yaml.YAMLError):
        return {}
    if not isinstance(index, dict):
        return {}
    keys = ("cozystack", "layout", "format", "allowIgnoredKeys", "kustomization")
    return {key: index[key] for key in keys if key in index}


def _choice(choices: type[_Choice], value: object) -> _Choice | None:
    """``value`` as one of ``choices``; None when absent or not one of them."""
    return next((choice for choice in choices if choice.value == value), None)


def _print_notes(plan: ClusterPlan, fit: ChartFit, *, platform_written: bool) -> None:
    from schematic.cluster import hami_notes, non_nvidia_gpu_notes, unloaded_module_notes
    from schematic.gpupath import missing_passthrough_note

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
    from schematic.render.files import KINDS

    for kind in KINDS:
        if kind == name:
            return kind
    raise typer.BadParameter(f"unknown format {name!r}")


@app.command(short_help="Compare DIR with what generate would write; exit 3 on drift.")
def check(
    cluster_file: ClusterArgument,
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Directory an earlier `generate --out` wrote.", metavar="DIR"
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

    Chart target, layout and kinds of file come from DIR's index.yaml; --chart, --layout win.
    Offline, extensions.lock.yaml is not compared: it needs the factory's catalogue.
    With --live-catalogue, the names are checked and the lock file is compared too.

    Example: talos-schematic check cluster.yaml --out deploy/mycluster --diff
    """
    report_format = json_alias(report_format, as_json, CheckReport.text)
    recorded = _recorded_options(out)
    if chart is None and isinstance(recorded.get("cozystack"), str):
        chart = str(recorded["cozystack"])
    layout = layout if layout is not None else _choice(LayoutChoice, recorded.get("layout"))
    output_format = _choice(OutputFormat, recorded.get("format"))
    allow_ignored_keys = allow_ignored_keys or recorded.get("allowIgnoredKeys") is True
    try:
        with _no_collector_passes():
            plan = _plan(cluster_file, profiles)
            fit = _fit(plan, chart, layout, insist=allow_ignored_keys)
            plan, lock = _consult_factory(
                plan, factory, register=False, live_catalogue=live_catalogue
            )
            from schematic.cluster import with_factory_schematics
            from schematic.output import compare_outputs
            from schematic.render.files import INDEX, owned_paths, render_files

            plan = with_factory_schematics(plan, _recorded_registrations(out, plan))
            kustomization = _own_kustomization(out)
            files = render_files(plan, _kinds(output_format), fit, kustomization=kustomization)
            if lock is not None:
                files[LOCK_FILE] = lock.encode()
            drift = compare_outputs(out, files, index=INDEX, ownership=owned_paths)
            if lock is None:
                kept = tuple(path for path in drift.extra if path != LOCK_FILE)
                drift = dataclasses.replace(drift, extra=kept)
            diff = None
            if show_diff:
                from schematic.drift import drift_diff

                diff = drift_diff(out, files, drift) if drift else ""
            if report_format == CheckReport.json:
                from schematic.drift import drift_json

                sys.stdout.write(
                    drift_json(drift, directory=out, cluster_file=cluster_file, diff=diff)
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
        if output_format is not None:
            options += ["--format", output_format.value]
        if allow_ignored_keys:
            options.append("--allow-ignored-keys")
        for directory in profiles or ():
            options += ["--profiles", str(directory)]
        if live_catalogue:
            options.append("--live-catalogue")
        if factory is not None:
            from schematic.factory_url import without_userinfo

            # A user:password@ in the URL must not reach a CI log.
            options += ["--factory", without_userinfo(factory)]
        if max_input_size is not None:
            options += ["--max-input-size", max_input_size]
        print(
            f"regenerate with: talos-schematic generate {shlex.join(options)}",
            file=sys.stderr,
        )
        raise typer.Exit(3)
    print(f"{out}: up to date with {cluster_file}", file=sys.stderr)
