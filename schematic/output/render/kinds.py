"""The output kinds: one row each, read by every place that needs to know one.

``generate --format``'s choices and help, the ``--out`` tree (each kind's files, whether only
a Cozystack tenant pool gets it, whether it is written by default), the one-document check of a
printed kind, the chart fit, ``kustomization.yaml``, the "Other tools" steps of ``APPLY.md`` and
``lint``'s reader of the kind all come from :data:`OUTPUT_KINDS`. Adding a kind is adding a row
(``docs/architecture.md`` lists the steps). This module imports no renderer at import time, so
the command line's ``--help`` stays fast: a row's renderer imports its module when called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from schematic.plan.cluster import PoolPlan

__all__ = [
    "ADDONS_FILE",
    "DEFAULT_KINDS",
    "KINDS",
    "OPERATOR_VALUES_FILE",
    "OUTPUT_KINDS",
    "PLATFORM_FILE",
    "SMOKE_TEST_FILE",
    "SUMMARY",
    "ApplyStep",
    "Kind",
    "OutputKind",
    "PoolTexts",
    "kind_named",
]

Kind = str  # the name of a row of OUTPUT_KINDS

# The GPU path's files beyond the pools' own.
ADDONS_FILE = "cluster/kubernetes-addons.yaml"
PLATFORM_FILE = "management/platform-gpu-values.yaml"
# The GPU Operator's values for GPU pools outside Cozystack (their cluster installs it).
OPERATOR_VALUES_FILE = "cluster/gpu-operator-values.yaml"
SMOKE_TEST_FILE = "smoke-test.yaml"  # under <pool>/
SUMMARY = "summary.json"


class PoolTexts(Protocol):
    """One pool, and the texts pools that render alike share (the run's renderer caches
    them): what a row's ``render`` is handed."""

    @property
    def pool(self) -> PoolPlan: ...
    def values(self) -> str: ...
    def kubernetes_nodes(self) -> str: ...
    def helm_release(self) -> str: ...
    def machine_config(self) -> str: ...
    def urls(self) -> str: ...
    def lock(self) -> str | None: ...


@dataclass(frozen=True, kw_only=True)
class ApplyStep:
    """Where a pool's file of a tool's kind goes, and the commands that apply it there;
    ``example``: what the user writes in the tool's own file to use it (its language, its
    text), shown as a block to paste."""

    goes_to: str
    commands: tuple[str, ...]
    example: tuple[str, str] | None = None


@dataclass(frozen=True, kw_only=True)
class OutputKind:
    """One kind of output. ``pool_file``: the file under ``<out>/<pool>/`` and ``render`` its
    text; ``cluster_files``: files beside the pools' folders (rendered by the GPU path or the
    summary). ``tenant_only``: only a Cozystack tenant (KubeVirt) pool gets it; ``default``:
    ``--out`` writes it without ``--format``; ``one_document``: a pool's text is one whole
    document its consumer takes (printed for one pool at a time); ``values``: it carries the
    chart's values (held to what the chart loads); ``manifest``: an object
    ``kustomization.yaml`` lists; ``stream_label``: printed, each pool's text is headed by a
    comment naming its pool; ``apply``: the step ``APPLY.md`` gives for a tool's file;
    ``lint_format``: the name of the lint input format that reads the file back;
    ``writes_too``: the kinds written with it, whose files its own refer to;
    ``one_release``: its consumer runs one Talos release per cluster (pools on several are
    refused); ``same_patch_per_schematic``: its consumer tells pools apart by schematic ID
    alone, so pools sharing one must need the same patch (others are refused)."""

    name: str
    help: str
    pool_file: str | None = None
    render: Callable[[PoolTexts], str] | None = None
    cluster_files: tuple[str, ...] = ()
    tenant_only: bool = False
    default: bool = True
    one_document: bool = False
    values: bool = False
    manifest: bool = False
    stream_label: bool = False
    apply: Callable[[PoolPlan, str], ApplyStep] | None = None
    lint_format: str | None = None
    writes_too: tuple[str, ...] = ()
    one_release: bool = False
    same_patch_per_schematic: bool = False


def _schematic(texts: PoolTexts) -> str:
    return texts.pool.canonical


def _talhelper(texts: PoolTexts) -> str:
    from schematic.output.render.talhelper import talhelper_fragment

    return talhelper_fragment(texts.pool)


def _omni(texts: PoolTexts) -> str:
    from schematic.output.render.omni import omni_workers

    return omni_workers(texts.pool)


def _terraform(texts: PoolTexts) -> str:
    from schematic.output.render.terraform import terraform_json

    return terraform_json(texts.pool)


def _mirror(texts: PoolTexts) -> str:
    from schematic.output.render.mirror import mirror_list

    return mirror_list(texts.pool, texts.lock())


def _mirror_script(texts: PoolTexts) -> str:
    from schematic.output.render.mirror import mirror_script

    return mirror_script(texts.pool, texts.lock())


def _imager_profile(texts: PoolTexts) -> str:
    from schematic.output.render.mirror import imager_profile

    return imager_profile(texts.pool, texts.lock())


def _topf(texts: PoolTexts) -> str:
    from schematic.output.render.topf import topf_patch

    return topf_patch(texts.pool)


def _talhelper_step(pool: PoolPlan, path: str) -> ApplyStep:
    return ApplyStep(
        goes_to=f"`talconfig.yaml` of the talhelper repository: the keys of each node of "
        f"pool `{pool.name}` (or `worker:`)",
        commands=(
            "talhelper genconfig",
            "talhelper gencommand apply | bash",
            "talhelper gencommand upgrade | bash",
        ),
    )


def _topf_step(pool: PoolPlan, path: str) -> ApplyStep:
    from schematic.output.render import yamltext
    from schematic.output.render.topf import linked_patch_name, topf_node

    # topf reads @paths relative to topf.yaml: with topf.yaml in this directory, as here.
    node = topf_node(pool, f"{path.rsplit('/', 1)[0]}/schematic.yaml")
    return ApplyStep(
        goes_to=f"topf's `all/`, linked as `{linked_patch_name(pool.name)}`: the patch of "
        "every node whose `schematicId` is the pool's schematic. In `topf.yaml` (beside this "
        f"file), each node of pool `{pool.name}` is an entry under `nodes:` (its `host` yours)",
        commands=(
            "mkdir -p all",
            f"ln -sf ../{path} all/{linked_patch_name(pool.name)}",
        ),
        example=("yaml", yamltext.dump({"nodes": [node]})),
    )


def _omni_step(pool: PoolPlan, path: str) -> ApplyStep:
    # validate, then sync (siderolabs/omni client/pkg/omnictl/cluster/template/validate.go,
    # sync.go; --file in template.go at b1ea5df2).
    return ApplyStep(
        goes_to=f"the Omni cluster template: its `Workers` document for pool `{pool.name}`, in "
        f"a template whose `Cluster` runs Talos `{pool.talos.version}` (one release per "
        "cluster)",
        commands=(
            "omnictl cluster template validate --file CLUSTER_TEMPLATE.yaml",
            "omnictl cluster template sync --file CLUSTER_TEMPLATE.yaml",
        ),
    )


def _terraform_step(pool: PoolPlan, path: str) -> ApplyStep:
    from schematic.output.render.terraform import module_usage, terraform_name

    # The names are the renderer's own (a pool `gpu-a` is `talos_pool_gpu_a`).
    name = terraform_name(pool.name)
    return ApplyStep(
        goes_to=f"a Terraform module of the siderolabs/talos provider, `module.{name}.{name}` "
        "from your root module: the block below (`source` is the path from your root module "
        "to this folder; `talos_machine_secrets.this` and `data.talos_machine_configuration."
        "this` are named as in the provider's example)",
        commands=("terraform init", "terraform plan", "terraform apply"),
        example=("hcl", module_usage(pool.name, "./" + path.rsplit("/", 1)[0])),
    )


# In the order --help, --out and the output list them.
OUTPUT_KINDS: tuple[OutputKind, ...] = (
    OutputKind(
        name="cozystack",
        help="the KubernetesNodes object of each Cozystack tenant pool (the default)",
        pool_file="kubernetes-nodes.yaml",
        render=lambda texts: texts.kubernetes_nodes(),
        tenant_only=True,
        values=True,
        manifest=True,
    ),
    OutputKind(
        name="values",
        help="each tenant pool's KubernetesNodes spec alone",
        pool_file="values.yaml",
        render=lambda texts: texts.values(),
        tenant_only=True,
        values=True,
        stream_label=True,
    ),
    OutputKind(
        name="machine-config",
        help="a Talos machine-config patch per pool",
        pool_file="machine-config-patch.yaml",
        render=lambda texts: texts.machine_config(),
        one_document=True,
        stream_label=True,
    ),
    OutputKind(
        name="schematic",
        help="the schematic the Image Factory is posted",
        pool_file="schematic.yaml",
        render=_schematic,
        one_document=True,
        stream_label=True,
    ),
    OutputKind(
        name="urls",
        help="the boot-image and installer URLs",
        pool_file="urls.yaml",
        render=lambda texts: texts.urls(),
    ),
    OutputKind(
        name="addons",
        help="a merge patch of the tenant Kubernetes app: its GPU Operator addon under spec",
        cluster_files=(ADDONS_FILE,),
    ),
    OutputKind(
        name="gpu-operator",
        help="the NVIDIA GPU Operator's values for the GPU pools outside Cozystack",
        cluster_files=(OPERATOR_VALUES_FILE,),
    ),
    OutputKind(
        name="platform",
        help="the management cluster's passthrough entries for GPUs its defaults lack",
        cluster_files=(PLATFORM_FILE,),
    ),
    OutputKind(
        name="smoke-test",
        help="an nvidia-smi -L pod per GPU pool",
        pool_file=SMOKE_TEST_FILE,
    ),
    OutputKind(
        name="helmrelease",
        help="a Flux HelmRelease of the kubernetes-nodes chart per pool, instead of the "
        "KubernetesNodes object",
        pool_file="helmrelease.yaml",
        render=lambda texts: texts.helm_release(),
        tenant_only=True,
        default=False,
        values=True,
        manifest=True,
    ),
    OutputKind(
        name="json",
        help="each pool's decision as one JSON summary",
        cluster_files=(SUMMARY,),
        default=False,
    ),
    OutputKind(
        name="talhelper",
        help="the talconfig.yaml keys (schematic, kernelModules, patches) of each pool's nodes",
        pool_file="talhelper.yaml",
        render=_talhelper,
        default=False,
        apply=_talhelper_step,
        lint_format="talhelper-fragment",
    ),
    OutputKind(
        name="topf",
        help="each pool's topf patch (a template topf applies to the nodes of the pool's "
        "schematic) and its schematic.yaml, read by topf as @path",
        pool_file="topf-patch.yaml.tpl",
        render=_topf,
        default=False,
        apply=_topf_step,
        lint_format="topf",
        writes_too=("schematic",),
        same_patch_per_schematic=True,
    ),
    OutputKind(
        name="omni",
        help="an Omni cluster-template Workers machine set per pool",
        pool_file="omni-workers.yaml",
        render=_omni,
        default=False,
        one_release=True,
        apply=_omni_step,
        lint_format="omni-template",
    ),
    OutputKind(
        name="terraform",
        help="a pool's .tf.json (its talos_image_factory_schematic, schematic ID, images and "
        "config_patches)",
        pool_file="talos-schematic.tf.json",
        render=_terraform,
        default=False,
        one_document=True,
        apply=_terraform_step,
        lint_format="terraform-json",
    ),
    OutputKind(
        name="mirror",
        help="what a disconnected site mirrors for the pool: installer, extension images "
        "(digests from the lock), imager, installer-base, boot media",
        pool_file="mirror.txt",
        render=_mirror,
        default=False,
    ),
    OutputKind(
        name="mirror-script",
        help="the mirror list as a skopeo copy script into $REGISTRY, with the boot media",
        pool_file="mirror.sh",
        render=_mirror_script,
        default=False,
        one_document=True,
    ),
    OutputKind(
        name="imager-profile",
        help="an imager profile that builds the pool's installer offline (same schematic ID)",
        pool_file="imager-profile.yaml",
        render=_imager_profile,
        default=False,
        one_document=True,
    ),
)

_BY_NAME = {kind.name: kind for kind in OUTPUT_KINDS}
KINDS: tuple[Kind, ...] = tuple(_BY_NAME)
DEFAULT_KINDS: tuple[Kind, ...] = tuple(kind.name for kind in OUTPUT_KINDS if kind.default)


def kind_named(name: str) -> OutputKind:
    """The row of ``name`` (KeyError for a name no row has)."""
    return _BY_NAME[name]
