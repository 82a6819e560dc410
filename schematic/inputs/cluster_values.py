"""What a cluster file is once read, and the checks on its values beyond their types.

A cluster file names a Cozystack tenant cluster, its Talos release and its worker pools;
:mod:`schematic.inputs.cluster_file` reads it into a :class:`ClusterFile` with the checks here.
"""

from __future__ import annotations

import functools
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

from schematic.errors import TalosSchematicError, closest_names
from schematic.facts.chart_targets import check_chart_name
from schematic.facts.media import MEDIA_KEYS, BootSchematic, ImageOptions
from schematic.facts.talos import TalosVersion
from schematic.inputs.factory_url import refuse_userinfo
from schematic.inputs.profile_values import HardwareProfile
from schematic.inputs.reading import described

__all__ = [
    "DEFAULT_IMAGE_FACTORY_URL",
    "DEFAULT_INSTALLER_REPOSITORY",
    "DNS_LABEL",
    "INSTALL_CONFIGS",
    "MAX_NAME",
    "OWNED_HINTS",
    "POOL_TALOS_KEYS",
    "REPOSITORY",
    "TOOL_KEYS",
    "UNSAFE_CHARS",
    "ClusterFile",
    "HamiRequest",
    "InstallConfig",
    "KernelModuleSpec",
    "NvidiaSettings",
    "PoolSpec",
    "TalosSettings",
    "check_install_config",
    "pool_keys",
    "unattended_install_offered",
]

DEFAULT_IMAGE_FACTORY_URL = "https://factory.talos.dev"
# The charts' default installerRepository; the tool's default follows the Talos release
# (schematic.facts.talos.default_installer_repository: metal-installer from Talos 1.14).
DEFAULT_INSTALLER_REPOSITORY = "factory.talos.dev/installer"
# Kubernetes object names: the KubernetesNodes object is named <cluster>-<pool>.
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")

Flavour = Literal["auto", "open", "proprietary"]
Tier = Literal["auto", "lts", "production"]


InstallConfig = Literal["auto", "machine-install", "unattended"]
INSTALL_CONFIGS: tuple[InstallConfig, ...] = ("auto", "machine-install", "unattended")


def unattended_install_offered(version: str) -> bool:
    """Whether Talos ``version`` has the UnattendedInstallConfig document (1.14 on)."""
    from schematic.facts.talos import TalosVersion

    return TalosVersion.parse(version).release >= TalosVersion(1, 14, 0)


def check_install_config(value: object) -> InstallConfig:
    """``talos.installConfig``: one of auto, machine-install, unattended."""
    for choice in INSTALL_CONFIGS:
        if value == choice:
            return choice
    raise ValueError(f"must be one of {', '.join(INSTALL_CONFIGS)}, not {value!r}")


@dataclass(frozen=True, kw_only=True)
class TalosSettings:
    """The Talos release of every pool and where its images come from."""

    version: str
    image_factory_url: str = DEFAULT_IMAGE_FACTORY_URL
    # "" (unset): the release's default, filled in below.
    installer_repository: str = ""
    # Left out of the hash (a mapping has none); equal settings still hash alike.
    registry_mirrors: dict[str, Any] | None = field(default=None, hash=False)
    # PEM CA bundle CDI trusts the factory with (Cozystack talos.imageFactoryCA, PR #3797).
    image_factory_ca: str | None = None
    # The image-factory release serving the images, when the user says (for fields an older
    # factory refuses, such as secureboot.enrollKeys); None: assume a current one.
    image_factory_version: str | None = None
    # Which document pins the installer in the machine-config patch (talos.installConfig):
    # auto, machine-install (v1alpha1 machine.install) or unattended (UnattendedInstallConfig,
    # Talos 1.14 on); auto picks per release and platform (schematic.output.render.machineconfig).
    install_config: InstallConfig = "auto"
    # True when installer_repository is the release's default rather than the user's: from
    # Talos 1.14 each pool then upgrades from its own platform's installer.
    installer_repository_default: bool = False
    # Extensions the factory serves outside the official catalogue (image-factory v1.4.0+
    # "extra extensions", listed by their own prefix): pools may name them, unverified.
    custom_extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.installer_repository:
            from schematic.facts.talos import default_installer_repository

            # Frozen: set once, as if the caller had passed it.
            object.__setattr__(
                self, "installer_repository", default_installer_repository(self.version)
            )
            object.__setattr__(self, "installer_repository_default", True)


@dataclass(frozen=True, kw_only=True)
class NvidiaSettings:
    """How to choose the NVIDIA extensions; a pool's settings override the cluster's."""

    flavour: Flavour | None = None
    tier: Tier | None = None
    gdrdrv: bool | None = None
    gds: bool | None = None  # GPUDirect Storage: nvidia-fs, module nvidia_fs
    peermem: bool | None = None  # module nvidia_peermem

    def over(self, base: NvidiaSettings) -> NvidiaSettings:
        """These settings with the unset ones taken from ``base``."""
        return NvidiaSettings(
            flavour=self.flavour if self.flavour is not None else base.flavour,
            tier=self.tier if self.tier is not None else base.tier,
            gdrdrv=self.gdrdrv if self.gdrdrv is not None else base.gdrdrv,
            gds=self.gds if self.gds is not None else base.gds,
            peermem=self.peermem if self.peermem is not None else base.peermem,
        )


@dataclass(frozen=True, kw_only=True)
class KernelModuleSpec:
    """A kernel module to load, as Cozystack's ``kernelModules`` items."""

    name: str
    parameters: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PoolSpec:
    """One worker pool: its hardware and extras, plus Cozystack values passed through."""

    name: str
    profile: str | None = None
    hardware: dict[str, Any] | None = field(default=None, hash=False)
    # The inline ``hardware`` read as a profile (named after the pool).
    hardware_profile: HardwareProfile | None = None
    extensions: tuple[str, ...] = ()
    kernel_args: tuple[str, ...] = ()
    # None: computed; a list replaces it; () loads nothing (the user opted out).
    kernel_modules: tuple[KernelModuleSpec, ...] | None = None
    nvidia: NvidiaSettings = NvidiaSettings()
    # SecureBoot, overlay, META, bootloader, sector size, over the profile's.
    media: ImageOptions = field(default_factory=ImageOptions)
    # What the boot media add to the installer's schematic (``boot.schematic``).
    boot: BootSchematic = field(default_factory=BootSchematic)
    # The Cozystack values the user set, in file order.
    passthrough: dict[str, Any] = field(default_factory=dict, hash=False)
    # The pool's own Talos release (its ``talos.version``), for upgrading pool by pool; None:
    # the file's ``talos.version``.
    talos_version: str | None = None
    # Where the pool starts in its file, for later errors; not part of what the pool says.
    line: int | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class HamiRequest:
    """``addons.hami``: HAMi wanted on the tenant, and forced past the Talos refusal."""

    enabled: bool = False
    force: bool = False


@dataclass(frozen=True, kw_only=True)
class ClusterFile:
    """A Cozystack tenant cluster's worker pools."""

    cluster: str
    namespace: str | None = None
    talos: TalosSettings
    nvidia: NvidiaSettings = NvidiaSettings()
    pools: tuple[PoolSpec, ...]
    # The chart target (`cozystack.version`), canonical; None: not given.
    cozystack_version: str | None = None
    hami: HamiRequest = field(default_factory=HamiRequest)
    # The line of each top-level key given, and "" the line the file's mapping starts on: where
    # an error about a key that is missing points (none when read from data, not text).
    key_lines: Mapping[str, int] = field(default_factory=dict, compare=False, hash=False)


@functools.cache
def pool_keys() -> dict[str, str]:
    """Top-level kubernetes-nodes value keys and who owns them ("user" or "tool")."""
    text = resources.files("schematic.data").joinpath("kubernetes-nodes-keys.tsv").read_text()
    rows = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    return {key: owner for key, _charts, owner in rows[1:]}


OWNED_HINTS = {
    "cluster": "the pool's cluster is the file's top-level `cluster`",
    "gpus": "gpus[] is derived from the pool's hardware (profile or `hardware.gpus`)",
    "kernelModules": "set the pool's `kernelModules` only as a list of {name, parameters}",
    "schematicID": "the schematic ID is computed from the pool's extensions",
    "osImage": "osImage is written by `--layout osimage` from the computed schematic",
}
# Pool keys the tool reads itself; everything else must be a Cozystack value key.
TOOL_KEYS = (
    "name",
    "profile",
    "hardware",
    "extensions",
    "kernelArgs",
    "kernelModules",
    "nvidia",
    *MEDIA_KEYS,
    "boot",
)
POOL_TALOS_KEYS = ("registryMirrors", "imageFactoryCA")


# --- the checks beyond types ---------------------------------------------------------------------
# Each raises ValueError with the message a user sees (the reader prefixes file, line and key).


def check_release(value: object) -> str:
    """A Talos release (not a pre-release), written with its ``v``."""
    if not isinstance(value, str):
        raise ValueError(f"write the Talos release as text, e.g. v1.13.9, not {described(value)}")
    try:
        version = TalosVersion.parse(value)
    except TalosSchematicError as err:
        raise ValueError(str(err)) from None
    except ValueError:  # a number past Python's digit limit
        raise ValueError(f"{shown(value)} is not a Talos release such as v1.13.9") from None
    if version.prerelease:
        raise ValueError(f"{value!r} is a pre-release; use a Talos release such as v1.13.9")
    return str(version)


# An extension image's repository path: `<prefix>/<name>`, lowercase as OCI names are.
CUSTOM_EXTENSION = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)+")


def check_custom_extensions(value: object) -> tuple[str, ...]:
    """``talos.customExtensions``: names outside the official catalogue, each with its own
    prefix (``acme/gpu-tools``); an official ``siderolabs/`` name is checked against the
    catalogue, never declared away."""
    if not isinstance(value, list):
        raise ValueError(
            f"write a list of extension names, e.g. [acme/gpu-tools], not {described(value)}"
        )
    names: list[str] = []
    for index, item in enumerate(value, start=1):
        if not isinstance(item, str) or not CUSTOM_EXTENSION.fullmatch(item):
            shown_item = shown(item) if isinstance(item, str) else described(item)
            raise ValueError(
                f"item {index}: {shown_item} is not an extension name such as acme/gpu-tools"
            )
        if item.startswith("siderolabs/"):
            raise ValueError(
                f"item {index}: {item} is an official name, checked against the release's "
                "catalogue; list only extensions outside it"
            )
        names.append(item)
    return tuple(dict.fromkeys(names))


def normal_endpoint(value: str) -> str:
    value = value.strip().rstrip("/")
    if not value:
        raise ValueError("must not be empty")
    return value


UNSAFE_CHARS = re.compile(r"[\x00-\x20\x7f]")
REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:-]*")
# Kubernetes names that end up in labels and DNS: a DNS label's length.
MAX_NAME = 63


def shown(value: str) -> str:
    """A value for a message: escaped (a newline or NUL stays one visible line) and short."""
    text = repr(value[:80])
    return text if len(value) <= 80 else text[:-1] + "…'"


def check_http_url(value: str) -> str:
    if UNSAFE_CHARS.search(value):
        raise ValueError("holds a space, line break or control character; give the URL alone")
    # Never echoed: a user:password@ part, whatever it holds, is a credential.
    refuse_userinfo(value)
    try:
        urllib.parse.urlsplit(value)
    except ValueError as err:
        raise ValueError(f"not a valid URL ({err})") from None
    if not value.startswith(("https://", "http://")):
        raise ValueError(f"{shown(value)} is not an http(s) URL")
    return value


def check_installer_repository(value: str) -> str:
    """An image repository such as ``factory.talos.dev/installer`` (written into patches and
    URLs: a line break there would start another YAML key)."""
    if not REPOSITORY.fullmatch(value):
        raise ValueError(
            f"{shown(value)} is not an image repository (e.g. factory.talos.dev/installer): "
            "letters, digits and . _ / : - only, no spaces or line breaks"
        )
    return value


def check_pool_name(value: str) -> str:
    if not DNS_LABEL.fullmatch(value):
        raise ValueError(
            f"{shown(value)} is not a valid pool name: use lowercase letters, digits and '-'"
        )
    if len(value) > MAX_NAME:
        raise ValueError(
            f"{shown(value)} is {len(value)} characters; a pool name may have {MAX_NAME}"
        )
    return value


# Helm refuses a release name over 53 characters (helm/helm pkg/chartutil/validate_name.go,
# maxReleaseNameLen). Cozystack names a pool's release kubernetes-nodes-<cluster>-<pool>, and the
# chart refuses any other; Flux would shorten a longer name (helm-controller
# internal/release/name.go, ShortenName) into one the chart refuses. Cozystack caps cluster
# names at 32 (cozystack/cozystack#3315, validateNameLength).
MAX_RELEASE_NAME = 53
RELEASE_PREFIX = "kubernetes-nodes-"
MAX_CLUSTER_NAME = 32


def cluster_name_problem(cluster: str) -> str | None:
    """What is wrong with the length of the cluster name, if anything."""
    if len(cluster) <= MAX_CLUSTER_NAME:
        return None
    return (
        f"{shown(cluster)} is {len(cluster)} characters; Cozystack accepts a cluster name of "
        f"{MAX_CLUSTER_NAME} at most (cozystack/cozystack#3315): shorten it"
    )


def object_name_problem(cluster: str, pool: str) -> str | None:
    """What is wrong with the pool's KubernetesNodes object name, ``<cluster>-<pool>``, and the
    Helm release Cozystack makes of it, ``kubernetes-nodes-<cluster>-<pool>``, if anything."""
    release = f"{RELEASE_PREFIX}{cluster}-{pool}"
    if len(release) > MAX_RELEASE_NAME:
        room = MAX_RELEASE_NAME - len(RELEASE_PREFIX) - len(cluster) - 1
        return (
            f"its Helm release {release} is {len(release)} characters; Helm refuses a release "
            f"name over {MAX_RELEASE_NAME} (Cozystack's chart takes no other name, and Flux "
            f"would shorten it into one the chart refuses). With cluster {cluster}, a pool name "
            f"may have {room} characters: shorten the pool or cluster name"
        )
    return None


def check_replicas(data: Mapping[Any, Any]) -> None:
    """``minReplicas`` / ``maxReplicas``: whole numbers of nodes, the floor not above the
    ceiling (the cluster autoscaler refuses such a pool only once it runs)."""
    given: dict[str, float] = {}
    for key in ("minReplicas", "maxReplicas"):
        if key not in data:
            continue
        value = data[key]
        # JSON Schema's integer, which the chart checks: 4.0 is one too.
        whole = type(value) is int or (type(value) is float and value.is_integer())
        if not whole or value < 0:
            given_text = shown(value) if isinstance(value, str) else repr(value)[:40]
            raise ValueError(f"{key}: give a whole number of nodes, 0 or more, not {given_text}")
        given[key] = value
    if len(given) == 2 and given["minReplicas"] > given["maxReplicas"]:
        raise ValueError(
            f"minReplicas ({given['minReplicas']:g}) is more than maxReplicas "
            f"({given['maxReplicas']:g})"
        )


def check_object_name(value: str) -> str:
    if not DNS_LABEL.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid name: use lowercase letters, digits, '-'")
    return value


def stripped_items(value: tuple[str, ...]) -> tuple[str, ...]:
    if any(not item.strip() for item in value):
        raise ValueError("items must not be empty")
    return tuple(item.strip() for item in value)


_MIRROR_KEYS = ("endpoints", "overridePath", "skipFallback")


def check_image_factory_ca(value: object) -> str | None:
    """A PEM bundle of CA certificates, and no private key (the chart publishes it in a
    ConfigMap anyone in the namespace can read, and refuses a key at render time)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError("give the CA certificates as PEM text, or leave the key out")
    if "PRIVATE KEY" in value:
        raise ValueError("holds private key material; give only the CA certificate(s)")
    begin = value.find("-----BEGIN CERTIFICATE-----")
    if begin < 0 or value.find("-----END CERTIFICATE-----", begin) < 0:
        raise ValueError("needs a complete PEM certificate block (BEGIN/END CERTIFICATE)")
    return value


def check_chart(value: object) -> str:
    """A chart target name (cozystack.version), canonical."""
    return check_chart_name(value)


def check_registry_mirrors(value: object) -> dict[str, Any] | None:
    """Talos registry mirrors as Cozystack's ``talos.registryMirrors`` takes them: registry host
    → ``{endpoints: [URL, ...], overridePath: bool, skipFallback: bool}``.

    Checked here because the machine-config patch rewrites them for Talos 1.12 and later
    (``RegistryMirrorConfig`` documents), which only works for the shape Talos defines.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError("give a mapping of registry host to {endpoints: [mirror URL, ...]}")
    for host, mirror in value.items():
        if not isinstance(host, str) or not host.strip():
            raise ValueError(f"{host!r} is not a registry host name, e.g. docker.io")
        if not isinstance(mirror, Mapping):
            raise ValueError(f"{host}: give {{endpoints: [mirror URL, ...]}}")
        for key, setting in mirror.items():
            if key not in _MIRROR_KEYS:
                close = closest_names(str(key), _MIRROR_KEYS, most=1)
                hint = f"; did you mean {close[0]}?" if close else ""
                raise ValueError(f"{host}.{key}: unknown key{hint}")
            if key != "endpoints" and not isinstance(setting, bool):
                raise ValueError(f"{host}.{key}: write true or false")
        endpoints = mirror.get("endpoints")
        if (
            not isinstance(endpoints, list)
            or not endpoints
            or not all(
                isinstance(url, str) and url.startswith(("https://", "http://"))
                for url in endpoints
            )
        ):
            raise ValueError(f"{host}.endpoints: give a list of http(s) mirror URLs")
    return dict(value)
