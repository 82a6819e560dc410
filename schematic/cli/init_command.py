"""`talos-schematic init`: a commented cluster file to start from, that `generate` accepts.

The library does it (:func:`schematic.api.init`); this module parses the options and prints.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from schematic.cli.base import MaxInputSizeOption, app, run_library
from schematic.facts.chart_targets import chart_choices

_FileArgument = Annotated[
    str,
    typer.Argument(
        metavar="[FILE|-]",
        help="Where to write it; it must not exist. `-` (default) prints it.",
    ),
]
_ClusterOption = Annotated[
    str, typer.Option("--cluster", metavar="NAME", help="The Cozystack tenant cluster name.")
]
_TalosOption = Annotated[
    str | None,
    typer.Option(
        "--talos",
        metavar="vX.Y.Z",
        help="Talos version (default: the newest release the packaged tables know).",
        show_default=False,
    ),
]
_ChartOption = Annotated[
    str | None,
    typer.Option(
        "--chart",
        metavar="TARGET",
        help=f"The Cozystack release or chart the values are for: {chart_choices()}. "
        "A release of a line is taken too (v1.6.2). Required when a pool is a Cozystack "
        "tenant (KubeVirt) pool: nothing is assumed.",
        show_default=False,
    ),
]
_NamespaceOption = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        metavar="NS",
        help="The tenant's namespace in the management cluster (where its Kubernetes app "
        "lives, e.g. tenant-ml): every generated management-cluster object carries it. "
        "Required when a pool is a Cozystack tenant (KubeVirt) pool: nothing is derived.",
        show_default=False,
    ),
]
_PoolsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--pool",
        metavar="NAME=PROFILE",
        help="A pool and its hardware profile, a shipped name or a path (repeatable; "
        "talos-schematic profiles lists them).",
    ),
]
_DumpOption = Annotated[
    Path | None,
    typer.Option(
        "--from-dump",
        metavar="FILE",
        help="A hardware dump (lspci -nn, lspci -nnmm, talosctl get pcidevices): one pool "
        "per distinct machine, its hardware written inline, as detect reads it.",
    ),
]


@app.command(short_help="Write a commented cluster file to start from.")
def init(
    file: _FileArgument = "-",
    cluster: _ClusterOption = "mycluster",
    talos: _TalosOption = None,
    chart: _ChartOption = None,
    namespace: _NamespaceOption = None,
    pools: _PoolsOption = None,
    dump: _DumpOption = None,
    max_input_size: MaxInputSizeOption = None,
) -> None:
    """Write a commented cluster file, from options or from a hardware dump, that generate
    accepts as it is; it is planned before it is written, so a wrong profile name stops here.

    Example: talos-schematic init cluster.yaml --chart osimage --namespace tenant-ml
    --pool gpu=kubevirt-l40s --pool cpu=kubevirt-cpu
    """
    from schematic.api import InitRequest
    from schematic.api import init as run_init

    request = InitRequest(
        cluster=cluster,
        talos=talos,
        chart=chart,
        namespace=namespace,
        pools=tuple(pools or ()),
        dump=dump,
        file=None if file == "-" else Path(file),
    )
    run_library(run_init, request)
    if request.file is None:
        return
    print(f"{file}: written; next: talos-schematic generate {file}", file=sys.stderr)
