"""The input files as pydantic models, for their JSON Schemas (`talos-schematic schema`).

The files are read by :mod:`schematic.inputs.profiles` and :mod:`schematic.inputs.cluster_file`,
never through these models: defining them costs `generate` more start-up time than all its other
work. The models give editors the keys, their types and their descriptions; a test holds them to
the readers (the same keys at every level, and every file a reader accepts is valid for the
schema).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
)
from pydantic.config import JsonDict

from schematic.facts import media as md
from schematic.facts.talos import RELEASE_PATTERN
from schematic.inputs import cluster_values as cl
from schematic.inputs import profile_values as pr

__all__ = [
    "ClusterDocument",
    "CozystackDocument",
    "GpuDocument",
    "KernelModuleDocument",
    "NvidiaDocument",
    "PoolDocument",
    "ProfileDocument",
    "TalosDocument",
    "cluster_json_schema",
    "profile_json_schema",
]


def _pattern(regex: re.Pattern[str] | str, *, padded: bool = False) -> str:
    """A reader's regular expression, which it matches whole, as a JSON Schema ``pattern``:
    anchored, its groups unnamed (editors read ECMA regular expressions, which name groups
    otherwise), and with blanks around it where the reader strips them first (``padded``)."""
    text = regex.pattern if isinstance(regex, re.Pattern) else regex
    body = re.sub(r"\(\?P<\w+>", "(?:", text)
    blank = r"\s*" if padded else ""
    return f"^{blank}(?:{body}){blank}$"


# The bounds and patterns the readers hold values to, so that the schema refuses what they do.
_DNS_NAME: JsonDict = {"pattern": _pattern(cl.DNS_LABEL)}
_POOL_NAME: JsonDict = {"pattern": _pattern(cl.DNS_LABEL), "maxLength": cl.MAX_NAME}
_NOT_BLANK: JsonDict = {"pattern": r"\S"}
_NOT_BLANK_ITEMS: JsonDict = {"items": _NOT_BLANK}
# An http(s) URL without spaces, control characters or a user:password@ part.
_URL: JsonDict = {
    "pattern": _pattern("https?://[^" + cl.UNSAFE_CHARS.pattern.strip("[]") + "@]*", padded=True)
}
_REPOSITORY: JsonDict = {"pattern": _pattern(cl.REPOSITORY.pattern + "/*", padded=True)}
_RELEASE: JsonDict = {"pattern": _pattern(RELEASE_PATTERN, padded=True)}
_REPLICAS: JsonDict = {"type": "integer", "minimum": 0}


class _Document(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, defer_build=True)


# --- boot media options (profiles and pools) ------------------------------------------------------


class SecureBootDocument(_Document):
    """SecureBoot (UKI) media, and the schematic's SecureBoot fields."""

    enabled: bool = Field(
        default=False, description="boot and install SecureBoot media (installer-secureboot)"
    )
    include_well_known_certificates: bool = Field(
        default=False,
        alias="includeWellKnownCertificates",
        description="also enroll the well-known UEFI certificates (Microsoft's)",
    )
    enroll_keys: str = Field(
        default="",
        alias="enrollKeys",
        description="sd-boot key enrollment: off, manual, if-safe, force (image-factory v1.4.0+)",
        json_schema_extra={"enum": list(md.ENROLL_KEYS_CHOICES)},
    )


class OverlayDocument(_Document):
    """An official board overlay for an arm64 single-board computer."""

    name: str = Field(description="official overlay name for the Talos release, e.g. rpi_generic")
    image: str = Field(default="", description="overlay image (default: the overlay's own)")
    options: dict[str, Any] = Field(
        default_factory=dict, description="overlay options, passed to the overlay unchanged"
    )


class MetaDocument(_Document):
    """One initial META value."""

    key: int = Field(
        description="META key, 0..255", json_schema_extra={"minimum": 0, "maximum": 255}
    )
    value: str = ""


class DiskImageDocument(_Document):
    """Disk-image options."""

    sector_size: int = Field(
        alias="sectorSize",
        description="disk sector size, a power of two, e.g. 4096",
        json_schema_extra={"minimum": 1},
    )


class BootSchematicDocument(_Document):
    """What the boot media (disk image, ISO, PXE) add to the installer's schematic."""

    extensions: tuple[str, ...] = ()
    kernel_args: tuple[str, ...] = Field(default=(), alias="kernelArgs")
    meta: tuple[MetaDocument, ...] = ()


class BootDocument(_Document):
    """A boot medium whose schematic differs from the installer's."""

    schematic: BootSchematicDocument


class _MediaDocument(_Document):
    """The media keys a profile and a pool share."""

    secureboot: SecureBootDocument | None = None
    overlay: OverlayDocument | None = None
    meta: tuple[MetaDocument, ...] | None = Field(
        default=None, description="initial META values: [{key: 0..255, value}]"
    )
    bootloader: str | None = Field(default=None, description="sd-boot, grub or dual-boot")
    disk_image: DiskImageDocument | None = Field(default=None, alias="diskImage")


# --- hardware profiles ----------------------------------------------------------------------------


class GpuDocument(_Document):
    """GPUs of one kind in the machine: PCI ID, how many, and the architecture if unlisted."""

    id: str = Field(
        description="PCI vendor:device ID, e.g. 10de:2bb5 (vendor 10de if omitted)",
        json_schema_extra={"pattern": _pattern(pr.PCI_ID, padded=True)},
    )
    count: int = Field(
        default=1, ge=1, le=pr.MAX_GPUS, description="how many of these GPUs the machine holds"
    )
    architecture: str | None = Field(
        default=None,
        description="GPU architecture (e.g. Blackwell), needed only for IDs the device table lacks",
    )


class GpuDirectDocument(_Document):
    """A profile's GPUDirect defaults; the cluster file's nvidia settings override each."""

    gdrdrv: StrictBool | None = Field(
        default=None, description="GPUDirect RDMA (nvidia-gdrdrv-device, open modules only)"
    )
    gds: StrictBool | None = Field(
        default=None,
        description="GPUDirect Storage: module nvidia_fs, carried by the NVIDIA kernel-module "
        "extensions from Talos 1.14 (no separate extension)",
    )
    peermem: StrictBool | None = Field(
        default=None,
        description="load nvidia_peermem (RDMA NICs reading GPU memory; open modules only)",
    )


class ProfileDocument(_MediaDocument):
    """One kind of machine, as a Talos node sees it."""

    name: str = Field(
        description="profile name; shipped profiles are named after their file",
        json_schema_extra={"pattern": _pattern(pr.PROFILE_NAME)},
    )
    aliases: tuple[str, ...] = Field(
        default=(), description="other names the profile answers to (e.g. without 'kubevirt-')"
    )
    description: str = ""
    platform: pr.Platform = Field(description="Talos platform the node boots as (kubevirt: a VM)")
    architecture: pr.Architecture = "amd64"
    cpu_vendor: pr.CpuVendor | None = Field(default=None, alias="cpuVendor")
    gpus: tuple[GpuDocument, ...] = ()
    nvswitch: bool = Field(
        default=False, description="bare metal with NVSwitches (HGX / DGX): needs fabric manager"
    )
    nvidia: GpuDirectDocument | None = Field(
        default=None,
        description="GPUDirect defaults of this machine (gdrdrv, gds, peermem); the cluster "
        "file's nvidia, cluster-wide or per pool, overrides each",
    )
    extensions: tuple[str, ...] = Field(
        default=(),
        description="official extensions to add, e.g. siderolabs/drbd",
        json_schema_extra=_NOT_BLANK_ITEMS,
    )
    kernel_args: tuple[str, ...] = Field(
        default=(), alias="kernelArgs", json_schema_extra=_NOT_BLANK_ITEMS
    )


def profile_json_schema() -> dict[str, Any]:
    """JSON Schema of a hardware profile file, for editors."""
    schema = ProfileDocument.model_json_schema(by_alias=True)
    # In a file the name defaults to the file's stem.
    schema["required"] = [key for key in schema.get("required", []) if key != "name"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "talos-schematic hardware profile",
        **{key: value for key, value in schema.items() if key != "title"},
    }


# --- cluster files --------------------------------------------------------------------------------


class TalosDocument(_Document):
    """The Talos release of every pool and where its images come from."""

    version: str = Field(description="Talos release, e.g. v1.13.9", json_schema_extra=_RELEASE)
    image_factory_url: str = Field(
        default=cl.DEFAULT_IMAGE_FACTORY_URL,
        alias="imageFactoryURL",
        description="Image Factory serving boot images (no trailing slash)",
        json_schema_extra=_URL,
    )
    installer_repository: str = Field(
        default="",
        alias="installerRepository",
        description="OCI repository of the installer: <repository>/<schematicID>:<version>; "
        "default factory.talos.dev/installer up to Talos 1.13, from 1.14 the factory's "
        "<platform>-installer of the image the pool boots (metal-installer on bare metal, "
        "openstack-installer for KubeVirt; the plain ghcr.io/siderolabs/installer is no longer "
        "published)",
        json_schema_extra=_REPOSITORY,
    )
    registry_mirrors: dict[str, Any] | None = Field(
        default=None,
        alias="registryMirrors",
        description="Talos machine.registries.mirrors for the workers (Cozystack talos key)",
    )

    image_factory_ca: str | None = Field(
        default=None,
        alias="imageFactoryCA",
        description="PEM CA bundle CDI trusts the factory with (Cozystack talos.imageFactoryCA)",
    )
    image_factory_version: str | None = Field(
        default=None,
        alias="imageFactoryVersion",
        description="image-factory release of a self-hosted factory, e.g. v1.3.2 (default: "
        "current); fields an older factory refuses are refused here",
    )
    install_config: cl.InstallConfig = Field(
        default="auto",
        alias="installConfig",
        description="which document pins the installer in the machine-config patch: "
        "machine-install (v1alpha1 machine.install, every release), unattended "
        "(UnattendedInstallConfig, Talos 1.14 on; Talos refuses machine.install beside it), or "
        "auto: unattended from 1.14 except KubeVirt (Cozystack) pools, whose chart writes "
        "machine.install itself",
    )
    custom_extensions: list[str] = Field(
        default_factory=list,
        alias="customExtensions",
        description="extensions the factory serves outside the official catalogue (Image "
        "Factory v1.4.0+ extra extensions), by their own prefix, e.g. acme/gpu-tools: pools may "
        "name them; they are marked unverified unless --live-catalogue checks them",
    )


class NvidiaDocument(_Document):
    """How to choose the NVIDIA extensions; a pool's settings override the cluster's."""

    flavour: cl.Flavour | None = Field(
        default=None, description="kernel-module flavour (default auto: by GPU generation)"
    )
    tier: cl.Tier | None = Field(
        default=None, description="driver tier (default auto: newest driver knowing every GPU)"
    )
    gdrdrv: StrictBool | None = Field(
        default=None, description="add GPUDirect RDMA (nvidia-gdrdrv-device, open modules only)"
    )
    gds: StrictBool | None = Field(
        default=None,
        description="add GPUDirect Storage: module nvidia_fs, carried by the NVIDIA "
        "kernel-module extensions from Talos 1.14 (no separate extension)",
    )
    peermem: StrictBool | None = Field(
        default=None,
        description="load nvidia_peermem (RDMA NICs reading GPU memory; open modules only)",
    )


class KernelModuleDocument(_Document):
    """A kernel module to load, as Cozystack's ``kernelModules`` items."""

    name: str = Field(min_length=1)
    parameters: tuple[str, ...] = ()


class PoolDocument(_MediaDocument):
    """One worker pool: its hardware and extras, plus Cozystack values passed through."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(
        description="pool name; the KubernetesNodes object is <cluster>-<name>",
        json_schema_extra=_POOL_NAME,
    )
    profile: str | None = Field(
        default=None, description="a shipped hardware profile name, a --profiles name, or a path"
    )
    hardware: dict[str, Any] | None = Field(
        default=None, description="an inline hardware profile instead of `profile`"
    )
    extensions: tuple[str, ...] = Field(
        default=(),
        description="official extensions to add, checked against the Talos release",
        json_schema_extra=_NOT_BLANK_ITEMS,
    )
    kernel_args: tuple[str, ...] = Field(
        default=(), alias="kernelArgs", json_schema_extra=_NOT_BLANK_ITEMS
    )
    kernel_modules: tuple[KernelModuleDocument, ...] | None = Field(
        default=None,
        alias="kernelModules",
        description="absent: computed; a list: replaces it; []: load nothing (opt out)",
    )
    nvidia: NvidiaDocument = Field(default_factory=NvidiaDocument)
    boot: BootDocument | None = Field(
        default=None, description="boot media whose schematic adds to the installer's"
    )


class CozystackDocument(_Document):
    """The Cozystack chart the values are for."""

    version: str | None = Field(
        default=None,
        description="chart target: v1.6 (released v1.6.x), main, pr3571, osimage (PR #4171)",
    )


class HamiDocument(_Document):
    """HAMi on the tenant cluster (``addons.hami`` of the Kubernetes app)."""

    enabled: bool = Field(
        default=False,
        description="ask for HAMi; refused on Talos GPU pools (its device plugin lacks CDI "
        "wiring) unless force is true",
    )
    force: bool = Field(
        default=False,
        description="write HAMi anyway, with the GPU Operator's device plugin off",
    )


class AddonsDocument(_Document):
    """Tenant add-ons the generated Kubernetes app values decide."""

    hami: HamiDocument = Field(default_factory=HamiDocument)


class ClusterDocument(_Document):
    """A Cozystack tenant cluster's worker pools."""

    cluster: str = Field(
        description="name of the Cozystack Kubernetes application", json_schema_extra=_DNS_NAME
    )
    namespace: str | None = Field(
        default=None,
        description="tenant namespace written into each KubernetesNodes object",
        json_schema_extra=_DNS_NAME,
    )
    cozystack: CozystackDocument = Field(default_factory=CozystackDocument)
    addons: AddonsDocument = Field(default_factory=AddonsDocument)
    talos: TalosDocument
    nvidia: NvidiaDocument = Field(default_factory=NvidiaDocument)
    pools: tuple[PoolDocument, ...] = Field(min_length=1)


def cluster_json_schema() -> dict[str, Any]:
    """JSON Schema of a cluster file, for editors (`talos-schematic schema cluster`)."""
    schema = ClusterDocument.model_json_schema(by_alias=True)
    pool = schema["$defs"]["PoolDocument"]
    # Pass-through keys are Cozystack's; their shapes are the chart's business.
    for key, owner in cl.pool_keys().items():
        if owner == "user" and key not in pool["properties"]:
            pool["properties"][key] = {"description": f"Cozystack kubernetes-nodes value {key}"}
    for key in ("minReplicas", "maxReplicas"):
        pool["properties"][key].update(_REPLICAS)
    pool["additionalProperties"] = False
    pool["oneOf"] = [{"required": ["profile"]}, {"required": ["hardware"]}]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "talos-schematic cluster file",
        **{key: value for key, value in schema.items() if key != "title"},
    }
