"""The input files as pydantic models: what a hardware profile or a cluster file may say.

These models are the authority on the input files: they give the error messages users see and
the JSON Schemas (`talos-schematic schema`). Files of the usual shape are read without them
(:func:`schematic.inputs.profiles.profile_from_mapping`,
:func:`schematic.inputs.cluster_file.cluster_from_mapping`), because defining pydantic models
costs `generate` more start-up time than all its other work; these models are imported when a
file is not of that shape, to accept it or to say what is wrong. Both ways give the same frozen
values (:class:`~schematic.inputs.profile_values.HardwareProfile`,
:class:`~schematic.inputs.cluster_values.ClusterFile`); a property test checks that on
generated inputs. The checks beyond types live beside those values and are shared by both
readers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from schematic import media as md
from schematic.errors import ClusterFileError, ProfileError
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
    "validate_cluster",
    "validate_profile",
]


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

    @field_validator("enroll_keys")
    @classmethod
    def _mode(cls, value: str) -> str:
        return md.check_enroll_keys(value) if value else value

    def value(self) -> md.SecureBootSpec:
        return md.SecureBootSpec(
            enabled=self.enabled,
            include_well_known_certificates=self.include_well_known_certificates,
            enroll_keys=self.enroll_keys,
        )


class OverlayDocument(_Document):
    """An official board overlay for an arm64 single-board computer."""

    name: str = Field(description="official overlay name for the Talos release, e.g. rpi_generic")
    image: str = Field(default="", description="overlay image (default: the overlay's own)")
    options: dict[str, Any] = Field(
        default_factory=dict, description="overlay options, passed to the overlay unchanged"
    )

    @field_validator("name")
    @classmethod
    def _named(cls, value: str) -> str:
        return md.check_overlay_name(value)

    def value(self) -> md.OverlaySpec:
        return md.OverlaySpec(name=self.name, image=self.image, options=self.options)


class MetaDocument(_Document):
    """One initial META value."""

    key: int = Field(
        description="META key, 0..255", json_schema_extra={"minimum": 0, "maximum": 255}
    )
    value: str = ""

    @field_validator("key", mode="before")
    @classmethod
    def _byte(cls, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ValueError(f"meta key {value!r} is not a whole number 0..255")
        number = value if isinstance(value, int) else _decimal(value)
        return md.check_meta_key(number)

    def to_value(self) -> md.MetaValue:
        return md.MetaValue(key=self.key, value=self.value)


def _decimal(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"meta key {text!r} is not a whole number 0..255")
    return int(text)


class DiskImageDocument(_Document):
    """Disk-image options."""

    sector_size: int = Field(
        alias="sectorSize",
        description="disk sector size, a power of two, e.g. 4096",
        json_schema_extra={"minimum": 1},
    )

    @field_validator("sector_size", mode="before")
    @classmethod
    def _size(cls, value: object) -> object:
        if isinstance(value, str) and value.isascii() and value.isdigit():
            value = int(value)
        return md.check_sector_size(value)


class BootSchematicDocument(_Document):
    """What the boot media (disk image, ISO, PXE) add to the installer's schematic."""

    extensions: tuple[str, ...] = ()
    kernel_args: tuple[str, ...] = Field(default=(), alias="kernelArgs")
    meta: tuple[MetaDocument, ...] = ()

    @field_validator("extensions", "kernel_args")
    @classmethod
    def _no_blank(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return md.check_no_blank(value)

    def value(self) -> md.BootSchematic:
        return md.BootSchematic(
            extensions=self.extensions,
            kernel_args=self.kernel_args,
            meta=tuple(m.to_value() for m in self.meta),
        )


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

    @field_validator("bootloader")
    @classmethod
    def _bootloader(cls, value: str | None) -> str | None:
        return None if value is None else md.check_bootloader(value)

    def media(self) -> md.ImageOptions:
        return md.ImageOptions(
            secureboot=None if self.secureboot is None else self.secureboot.value(),
            overlay=None if self.overlay is None else self.overlay.value(),
            meta=None if self.meta is None else tuple(m.to_value() for m in self.meta),
            bootloader=self.bootloader,
            sector_size=None if self.disk_image is None else self.disk_image.sector_size,
        )


# --- hardware profiles ----------------------------------------------------------------------------


class GpuDocument(_Document):
    """GPUs of one kind in the machine: PCI ID, how many, and the architecture if unlisted."""

    id: str = Field(description="PCI vendor:device ID, e.g. 10de:2bb5 (vendor 10de if omitted)")
    count: int = Field(default=1, ge=1, description="how many of these GPUs the machine holds")
    architecture: str | None = Field(
        default=None,
        description="GPU architecture (e.g. Blackwell), needed only for IDs the device table lacks",
    )

    @field_validator("id", mode="before")
    @classmethod
    def _id_is_text(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            raise ValueError("write the PCI ID as a quoted string, e.g. '10de:2330'")
        return value

    @field_validator("count", mode="before")
    @classmethod
    def _count_is_a_number(cls, value: object) -> object:
        # pydantic reads true as 1; `count: true` is a slip for a number, not one GPU.
        if isinstance(value, bool):
            raise ValueError(f"give how many GPUs as a whole number, not {str(value).lower()}")
        return value

    @field_validator("id")
    @classmethod
    def _normal_id(cls, value: str) -> str:
        return pr.normal_pci_id(value)

    @field_validator("architecture")
    @classmethod
    def _known_architecture(cls, value: str | None) -> str | None:
        return None if value is None else pr.known_architecture(value)

    @model_validator(mode="after")
    def _known_gpu(self) -> GpuDocument:
        pr.check_gpu(self.value())
        return self

    def value(self) -> pr.GpuSpec:
        return pr.GpuSpec(id=self.id, count=self.count, architecture=self.architecture)


class GpuDirectDocument(_Document):
    """A profile's GPUDirect defaults; the cluster file's nvidia settings override each."""

    gdrdrv: StrictBool | None = Field(
        default=None, description="GPUDirect RDMA (nvidia-gdrdrv-device, open modules only)"
    )
    gds: StrictBool | None = Field(
        default=None,
        description="GPUDirect Storage (siderolabs/nvidia-fs, module nvidia_fs) where the Talos "
        "release offers it",
    )
    peermem: StrictBool | None = Field(
        default=None,
        description="load nvidia_peermem (RDMA NICs reading GPU memory; open modules only)",
    )

    def value(self) -> pr.GpuDirect:
        return pr.GpuDirect(gdrdrv=self.gdrdrv, gds=self.gds, peermem=self.peermem)


class ProfileDocument(_MediaDocument):
    """One kind of machine, as a Talos node sees it."""

    name: str = Field(description="profile name; shipped profiles are named after their file")
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
        default=(), description="official extensions to add, e.g. siderolabs/drbd"
    )
    kernel_args: tuple[str, ...] = Field(default=(), alias="kernelArgs")

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        return pr.check_profile_name(value)

    @field_validator("extensions", "kernel_args")
    @classmethod
    def _no_blank_items(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return pr.check_no_blank_items(value)

    @model_validator(mode="after")
    def _consistent(self) -> ProfileDocument:
        pr.check_profile(self.value())
        return self

    def value(self) -> pr.HardwareProfile:
        return pr.HardwareProfile(
            name=self.name,
            aliases=self.aliases,
            description=self.description,
            platform=self.platform,
            architecture=self.architecture,
            cpu_vendor=self.cpu_vendor,
            gpus=tuple(gpu.value() for gpu in self.gpus),
            nvswitch=self.nvswitch,
            gpudirect=pr.GpuDirect() if self.nvidia is None else self.nvidia.value(),
            extensions=self.extensions,
            kernel_args=self.kernel_args,
            media=self.media(),
        )


def validate_profile(data: Mapping[str, Any], source: str) -> pr.HardwareProfile:
    """The profile ``data`` describes; a ProfileError naming ``source`` and each bad key if none."""
    try:
        return ProfileDocument.model_validate(dict(data)).value()
    except ValidationError as err:
        raise ProfileError(f"{source}: {_describe_profile(err)}") from None


def _describe_profile(err: ValidationError) -> str:
    problems = []
    for issue in err.errors():
        where = _location(issue["loc"]) or "(top level)"
        message = "unknown key" if issue["type"] == "extra_forbidden" else _message(issue)
        problems.append(f"{where}: {message}")
    return "; ".join(problems)


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

    version: str = Field(description="Talos release, e.g. v1.13.9")
    image_factory_url: str = Field(
        default=cl.DEFAULT_IMAGE_FACTORY_URL,
        alias="imageFactoryURL",
        description="Image Factory serving boot images (no trailing slash)",
    )
    installer_repository: str = Field(
        default="",
        alias="installerRepository",
        description="OCI repository of the installer: <repository>/<schematicID>:<version>; "
        "default factory.talos.dev/installer up to Talos 1.13, from 1.14 the factory's "
        "<platform>-installer of the image the pool boots (metal-installer on bare metal, "
        "openstack-installer for KubeVirt; the plain ghcr.io/siderolabs/installer is no longer "
        "published)",
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

    @field_validator("image_factory_version")
    @classmethod
    def _factory_version(cls, value: str | None) -> str | None:
        return None if value is None else md.check_factory_version(value)

    @field_validator("version", mode="before")
    @classmethod
    def _release(cls, value: object) -> object:
        return cl.check_release(value)

    @field_validator("image_factory_ca", mode="before")
    @classmethod
    def _ca(cls, value: object) -> object:
        return cl.check_image_factory_ca(value)

    @field_validator("image_factory_url", "installer_repository")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return cl.normal_endpoint(value)

    @field_validator("image_factory_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return cl.check_http_url(value)

    @field_validator("installer_repository")
    @classmethod
    def _repository(cls, value: str) -> str:
        return cl.check_installer_repository(value)

    @field_validator("registry_mirrors")
    @classmethod
    def _mirrors(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return cl.check_registry_mirrors(value)

    def value(self) -> cl.TalosSettings:
        return cl.TalosSettings(
            version=self.version,
            image_factory_url=self.image_factory_url,
            installer_repository=self.installer_repository,
            registry_mirrors=self.registry_mirrors,
            image_factory_ca=self.image_factory_ca,
            image_factory_version=self.image_factory_version,
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
        description="add GPUDirect Storage (siderolabs/nvidia-fs, module nvidia_fs) where the "
        "Talos release offers it",
    )
    peermem: StrictBool | None = Field(
        default=None,
        description="load nvidia_peermem (RDMA NICs reading GPU memory; open modules only)",
    )

    def value(self) -> cl.NvidiaSettings:
        return cl.NvidiaSettings(
            flavour=self.flavour,
            tier=self.tier,
            gdrdrv=self.gdrdrv,
            gds=self.gds,
            peermem=self.peermem,
        )


class KernelModuleDocument(_Document):
    """A kernel module to load, as Cozystack's ``kernelModules`` items."""

    name: str = Field(min_length=1)
    parameters: tuple[str, ...] = ()


class PoolDocument(_MediaDocument):
    """One worker pool: its hardware and extras, plus Cozystack values passed through."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(description="pool name; the KubernetesNodes object is <cluster>-<name>")
    profile: str | None = Field(
        default=None, description="a shipped hardware profile name, a --profiles name, or a path"
    )
    hardware: dict[str, Any] | None = Field(
        default=None, description="an inline hardware profile instead of `profile`"
    )
    extensions: tuple[str, ...] = Field(
        default=(), description="official extensions to add, checked against the Talos release"
    )
    kernel_args: tuple[str, ...] = Field(default=(), alias="kernelArgs")
    kernel_modules: tuple[KernelModuleDocument, ...] | None = Field(
        default=None,
        alias="kernelModules",
        description="absent: computed; a list: replaces it; []: load nothing (opt out)",
    )
    nvidia: NvidiaDocument = Field(default_factory=NvidiaDocument)
    boot: BootDocument | None = Field(
        default=None, description="boot media whose schematic adds to the installer's"
    )

    @field_validator("name")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        return cl.check_pool_name(value)

    @field_validator("extensions", "kernel_args")
    @classmethod
    def _no_blank(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return cl.stripped_items(value)

    @field_validator("kernel_modules", mode="before")
    @classmethod
    def _never_null(cls, value: object) -> object:
        if value is None:
            raise ValueError("write [] to load no modules, or leave kernelModules out")
        return value

    @model_validator(mode="before")
    @classmethod
    def _known_pass_through(cls, data: object) -> object:
        if isinstance(data, Mapping):
            cl.check_pool_keys(data)
        return data

    @model_validator(mode="after")
    def _one_hardware_source(self) -> PoolDocument:
        cl.check_one_hardware_source(self.value())
        return self

    def value(self) -> cl.PoolSpec:
        modules = self.kernel_modules
        return cl.PoolSpec(
            name=self.name,
            profile=self.profile,
            hardware=self.hardware,
            extensions=self.extensions,
            kernel_args=self.kernel_args,
            kernel_modules=None
            if modules is None
            else tuple(cl.KernelModuleSpec(name=m.name, parameters=m.parameters) for m in modules),
            nvidia=self.nvidia.value(),
            media=self.media(),
            boot=md.BootSchematic() if self.boot is None else self.boot.schematic.value(),
            passthrough=dict(self.model_extra or {}),
        )


class CozystackDocument(_Document):
    """The Cozystack chart the values are for."""

    version: str | None = Field(
        default=None,
        description="chart target: v1.6 (released v1.6.x), main, pr3571, osimage (PR #4171)",
    )

    @field_validator("version", mode="before")
    @classmethod
    def _known(cls, value: object) -> object:
        return None if value is None else cl.check_chart(value)


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

    def value(self) -> cl.HamiRequest:
        return cl.HamiRequest(enabled=self.enabled, force=self.force)


class AddonsDocument(_Document):
    """Tenant add-ons the generated Kubernetes app values decide."""

    hami: HamiDocument = Field(default_factory=HamiDocument)


class ClusterDocument(_Document):
    """A Cozystack tenant cluster's worker pools."""

    cluster: str = Field(description="name of the Cozystack Kubernetes application")
    namespace: str | None = Field(
        default=None, description="tenant namespace written into each KubernetesNodes object"
    )
    cozystack: CozystackDocument = Field(default_factory=CozystackDocument)
    addons: AddonsDocument = Field(default_factory=AddonsDocument)
    talos: TalosDocument
    nvidia: NvidiaDocument = Field(default_factory=NvidiaDocument)
    pools: tuple[PoolDocument, ...] = Field(min_length=1)

    @field_validator("cluster", "namespace")
    @classmethod
    def _dns_label(cls, value: str | None) -> str | None:
        return None if value is None else cl.check_object_name(value)

    @model_validator(mode="after")
    def _unique_pools(self) -> ClusterDocument:
        pools = [pool.value() for pool in self.pools]
        cl.check_unique_pools(pools)
        cl.check_object_names(self.cluster, pools)
        return self

    def value(self) -> cl.ClusterFile:
        return cl.ClusterFile(
            cluster=self.cluster,
            namespace=self.namespace,
            talos=self.talos.value(),
            nvidia=self.nvidia.value(),
            pools=tuple(pool.value() for pool in self.pools),
            cozystack_version=self.cozystack.version,
            hami=self.addons.hami.value(),
        )


def validate_cluster(data: Mapping[str, Any], source: str) -> cl.ClusterFile:
    """The cluster file ``data`` describes; a ClusterFileError naming ``source``, the pool and
    each bad key if none."""
    try:
        return ClusterDocument.model_validate(dict(data)).value()
    except ValidationError as err:
        raise ClusterFileError(_describe_cluster(err, data, source)) from None


def _model_keys(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


_KEYS_AT = {
    (): _model_keys(ClusterDocument),
    ("talos",): _model_keys(TalosDocument),
    ("nvidia",): _model_keys(NvidiaDocument),
    ("cozystack",): _model_keys(CozystackDocument),
    ("addons",): _model_keys(AddonsDocument),
    ("addons", "hami"): _model_keys(HamiDocument),
}


def _describe_cluster(err: ValidationError, data: Mapping[str, Any], source: str) -> str:
    problems: list[str] = []
    issues = err.errors()
    for issue in issues:
        loc = list(issue["loc"])
        if issue["type"] == "too_short" and loc == ["pools"] and len(issues) > 1:
            continue  # pydantic adds this when a pool fails; the pool's own error says more
        prefix = source
        if len(loc) >= 2 and loc[0] == "pools" and isinstance(loc[1], int):
            prefix += f": {_pool_label(data, loc[1])}"
            loc = loc[2:]
        message = _message(issue)
        if issue["type"] == "extra_forbidden":
            parent = tuple(str(part) for part in loc[:-1])
            parent = ("nvidia",) if parent and parent[-1] == "nvidia" else parent
            close = cl.closest(str(loc[-1]), _KEYS_AT.get(parent, []))
            message = "unknown key" + (f"; did you mean {close[0]}?" if close else "")
        where = _location(loc)
        problems.append(f"{prefix}: {where}: {message}" if where else f"{prefix}: {message}")
    return "\n".join(dict.fromkeys(problems))


def _message(issue: ErrorDetails) -> str:
    """pydantic's message, in the file's terms: lists (not tuples), and a hint for a misspelt
    choice."""
    kind = issue["type"]
    if kind == "too_short" and issue["loc"] == ("pools",):
        return "list at least one pool"
    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", str(issue.get("ctx", {}).get("expected", "")))
        given = str(issue["input"])
        close = [c for c in choices if c.lower() == given.lower()] or cl.closest(given, choices)
        hint = f"; did you mean {close[0]}?" if close else ""
        return f"{issue['input']!r} is not one of {', '.join(choices)}{hint}"
    message = issue["msg"].removeprefix("Value error, ")
    return message.replace("Tuple should", "List should").replace("valid tuple", "list")


def _pool_label(data: Mapping[str, Any], index: int) -> str:
    pools = data.get("pools")
    if isinstance(pools, list) and index < len(pools) and isinstance(pools[index], Mapping):
        name = pools[index].get("name")
        if isinstance(name, str) and name.isprintable() and '"' not in name and len(name) <= 80:
            return f'pool "{name}"'
        if isinstance(name, str):
            # A line break or NUL in the name must not break the message.
            return f"pools[{index}] (name {cl.shown(name)})"
    return f"pools[{index}]"


def _location(loc: Sequence[int | str]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def cluster_json_schema() -> dict[str, Any]:
    """JSON Schema of a cluster file, for editors (`talos-schematic schema cluster`)."""
    schema = ClusterDocument.model_json_schema(by_alias=True)
    pool = schema["$defs"]["PoolDocument"]
    # Pass-through keys are Cozystack's; their shapes are the chart's business.
    for key, owner in cl.pool_keys().items():
        if owner == "user" and key not in pool["properties"]:
            pool["properties"][key] = {"description": f"Cozystack kubernetes-nodes value {key}"}
    pool["additionalProperties"] = False
    pool["oneOf"] = [{"required": ["profile"]}, {"required": ["hardware"]}]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "talos-schematic cluster file",
        **{key: value for key, value in schema.items() if key != "title"},
    }
