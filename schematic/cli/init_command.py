"""`talos-schematic init`: a commented cluster file to start from, that `generate` accepts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from schematic.cli.base import MaxInputSizeOption, app, fail
from schematic.errors import ClusterFileError, OutputError, TalosSchematicError
from schematic.facts.chart_targets import chart_choices

# The keys of a detected profile a pool's inline `hardware:` carries (its name and description
# become the pool's name and comment).
_HARDWARE_KEYS = ("platform", "architecture", "cpuVendor", "gpus", "nvswitch", "extensions")


def _indented(text: str, prefix: str = "  ") -> str:
    return "".join(f"{prefix}{line}\n" if line else "\n" for line in text.splitlines())


def _comment(text: str, prefix: str = "") -> str:
    return "".join(f"{prefix}# {line}\n" for line in text.splitlines())


def _pool_entries(pools: list[str], dump: Path | None) -> list[tuple[str, dict[str, Any]]]:
    """(comment, pool) for each --pool NAME=PROFILE and each machine of the dump."""
    from schematic.inputs.profiles import load_profile

    entries: list[tuple[str, dict[str, Any]]] = []
    for given in pools:
        name, sep, profile = given.partition("=")
        if not sep or not name or not profile:
            raise typer.BadParameter(f"{given!r} is not NAME=PROFILE", param_hint="--pool")
        found = load_profile(profile)
        entries.append((found.description or found.name, {"name": name, "profile": profile}))
    if dump is not None:
        from schematic.doctor.detect import detect
        from schematic.errors import DetectError
        from schematic.safe_yaml import InputKind, read_bytes

        try:
            data = read_bytes(str(dump), kind=InputKind.HARDWARE)
            text = data.decode("utf-8", errors="replace")
        except OSError as err:
            raise DetectError(f"{dump}: cannot read: {err.strerror or err}") from None
        for index, detected in enumerate(detect(text, str(dump)), 1):
            hardware = {
                key: detected[key]
                for key in _HARDWARE_KEYS
                if key in detected and detected[key] not in ([], False)
            }
            name = "gpu" if hardware.get("gpus") else "workers"
            entries.append(
                (detected.get("description", ""), {"name": f"{name}-{index}", "hardware": hardware})
            )
    if not entries:
        entries.append(
            (
                "No GPU: Cozystack's default extension set, no NVIDIA extension, no kernel "
                "modules. A GPU pool names a profile with GPUs (talos-schematic profiles), e.g.\n"
                "  - name: gpu\n    profile: rtx-pro-6000-blackwell-server",
                {"name": "workers", "profile": "kubevirt-cpu"},
            )
        )
    names = [pool["name"] for _, pool in entries]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise typer.BadParameter(f"pool names repeat: {', '.join(duplicates)}", param_hint="--pool")
    return entries


def cluster_text(
    cluster: str,
    talos: str,
    chart: str | None,
    entries: list[tuple[str, dict[str, Any]]],
    namespace: str | None = None,
) -> str:
    """The commented cluster file."""
    from schematic.output.render import yamltext

    parts = [
        _comment(
            "A talos-schematic cluster file: one schematic per pool, so the NVIDIA extensions\n"
            "land only on nodes that hold an NVIDIA GPU.\n"
            f"  talos-schematic generate THIS_FILE --out deploy/{cluster}\n"
            "Every key: talos-schematic schema cluster (a JSON Schema for editors)."
        ),
        yamltext.dump({"cluster": cluster}),
        _comment(
            "The management-cluster namespace of the tenant (its Kubernetes app): every\n"
            "generated object for the management cluster carries it."
        )
        + (
            yamltext.dump({"namespace": namespace})
            if namespace is not None
            else _comment(f"namespace: tenant-{cluster}   (init --namespace NS writes it)")
        ),
        _comment(
            "The Cozystack release (kubernetes-nodes chart) the values are for, as named by\n"
            "init --chart: v1.6 (released v1.6.x, talos.schematicID only), pr3571, osimage\n"
            "(PR #4171: osImage and kernelModules)."
        )
        + yamltext.dump({"cozystack": {"version": chart}})
        if chart is not None
        else _comment(
            "No Cozystack release: no pool is a Cozystack tenant pool. For Cozystack output add\n"
            "cozystack:\n  version: TARGET   # v1.6, main, pr3571, osimage, v1.7"
        ),
        yamltext.dump({"talos": {"version": talos}}),
        _comment(
            "imageFactoryURL: https://factory.talos.dev (default; a self-hosted factory here)",
            "  ",
        ),
        _comment(
            "NVIDIA choice for every pool (a pool's own nvidia: wins). auto: open modules\n"
            "where every GPU supports them, the tier whose driver knows every GPU."
        ),
        yamltext.dump({"nvidia": {"flavour": "auto", "tier": "auto"}}),
        "pools:\n",
    ]
    for comment, pool in entries:
        if comment:
            parts.append(_comment(comment, "  "))
        parts.append(_indented(yamltext.dump([pool | {"minReplicas": 0, "maxReplicas": 2}])))
    return "".join(parts)


def _check_fits_chart(plan: Any, chart: str | None) -> None:
    """Refuse, as generate would, pools that cannot work on the chart ``--chart`` names (a GPU
    pool whose modules the chart cannot load): init writes only what generate accepts."""
    from dataclasses import replace

    from schematic.plan.charts import INSIST_HINT, fit_plan

    try:
        fit_plan(replace(plan, source=f"init --chart {chart}"), values=True)
    except ClusterFileError as err:
        # init has no --allow-ignored-keys: writing what cannot work is not offered here.
        raise fail(ClusterFileError(str(err).removesuffix(INSIST_HINT))) from None


@app.command(short_help="Write a commented cluster file to start from.")
def init(
    file: Annotated[
        str,
        typer.Argument(
            metavar="[FILE|-]",
            help="Where to write it; it must not exist. `-` (default) prints it.",
        ),
    ] = "-",
    cluster: Annotated[
        str, typer.Option("--cluster", metavar="NAME", help="The Cozystack tenant cluster name.")
    ] = "mycluster",
    talos: Annotated[
        str | None,
        typer.Option(
            "--talos",
            metavar="vX.Y.Z",
            help="Talos version (default: the newest release the packaged tables know).",
            show_default=False,
        ),
    ] = None,
    chart: Annotated[
        str | None,
        typer.Option(
            "--chart",
            metavar="TARGET",
            help=f"The Cozystack release or chart the values are for: {chart_choices()}. "
            "A release of a line is taken too (v1.6.2). Required when a pool is a Cozystack "
            "tenant (KubeVirt) pool: nothing is assumed.",
            show_default=False,
        ),
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace",
            metavar="NS",
            help="The tenant's namespace in the management cluster (where its Kubernetes app "
            "lives, e.g. tenant-ml): every generated management-cluster object carries it. "
            "Required when a pool is a Cozystack tenant (KubeVirt) pool: nothing is derived.",
            show_default=False,
        ),
    ] = None,
    pools: Annotated[
        list[str] | None,
        typer.Option(
            "--pool",
            metavar="NAME=PROFILE",
            help="A pool and its hardware profile, a shipped name or a path (repeatable; "
            "talos-schematic profiles lists them).",
        ),
    ] = None,
    dump: Annotated[
        Path | None,
        typer.Option(
            "--from-dump",
            metavar="FILE",
            help="A hardware dump (lspci -nn, lspci -nnmm, talosctl get pcidevices): one pool "
            "per distinct machine, its hardware written inline, as detect reads it.",
        ),
    ] = None,
    max_input_size: MaxInputSizeOption = None,
) -> None:
    """Write a commented cluster file, from options or from a hardware dump, that generate
    accepts as it is; it is planned before it is written, so a wrong profile name stops here.

    Example: talos-schematic init cluster.yaml --chart osimage --namespace tenant-ml
    --pool gpu=kubevirt-l40s --pool cpu=kubevirt-cpu
    """
    from schematic.facts.catalog import talos_versions
    from schematic.facts.chart_targets import chart_target
    from schematic.inputs.cluster_file import parse_cluster
    from schematic.plan.cluster import plan_cluster

    target = Path(file)
    if file != "-" and (target.exists() or target.is_symlink()):
        raise fail(OutputError(f"{file}: exists; init writes only a new file"))
    if namespace is not None:
        from schematic.inputs.cluster_values import check_object_name

        try:
            check_object_name(namespace)
        except ValueError as err:
            raise typer.BadParameter(str(err), param_hint="--namespace") from None
    if chart is not None:
        try:
            chart_target(chart)
        except ValueError as err:
            raise typer.BadParameter(str(err), param_hint="--chart") from None
    try:
        version = talos or talos_versions()[-1]
        entries = _pool_entries(pools or [], dump)
        text = cluster_text(cluster, version, chart, entries, namespace)
        # What generate would refuse is refused here, before anything is written.
        source = "-" if file == "-" else file
        base_dir = Path.cwd() if file == "-" else target.parent
        plan = plan_cluster(parse_cluster(text, source), source=source, base_dir=base_dir)
    except TalosSchematicError as err:
        raise fail(err) from None
    tenants = [pool.name for pool in plan.pools if pool.tenant_pool]
    if chart is None and tenants:
        # The release decides which keys the chart reads; a guessed one fails silently.
        raise typer.BadParameter(
            f"name the Cozystack release the values are for (pools {', '.join(tenants)} are "
            f"Cozystack tenant pools): --chart TARGET, one of: {chart_choices()}",
            param_hint="--chart",
        )
    if namespace is None and tenants:
        # Every KubernetesNodes object carries it; the tenant's name is not known here.
        raise typer.BadParameter(
            f"name the tenant's namespace in the management cluster (pools "
            f"{', '.join(tenants)} are Cozystack tenant pools, whose objects live there): "
            "--namespace tenant-NAME",
            param_hint="--namespace",
        )
    if tenants:
        _check_fits_chart(plan, chart)
    if file == "-":
        sys.stdout.write(text)
        return
    try:
        with open(target, "x", encoding="utf-8") as out:
            out.write(text)
    except OSError as err:
        raise fail(OutputError(f"{file}: cannot write: {err.strerror or err}")) from None
    print(f"{file}: written; next: talos-schematic generate {file}", file=sys.stderr)
