"""Talos release versions, and which NVIDIA drivers each release carries.

The driver table is package data (``data/talos-nvidia-drivers.tsv``): one row per run of
Talos releases that pin the same LTS / production driver and container-toolkit versions.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Literal

from schematic.errors import CatalogError, GpuRefusal, NvidiaError

__all__ = [
    "EMPTY_SCHEMATIC_ID",
    "FACTS_FILE_NAME",
    "METAL_INSTALLER_FROM",
    "REFRESH_COMMAND",
    "RELEASE_PATTERN",
    "DriverRow",
    "DriverTableMatch",
    "TalosVersion",
    "default_installer_repository",
    "driver_key",
    "driver_row",
    "driver_table",
    "talhelper_installer",
    "vanilla_installer_image",
]

# At most nine digits a part: far beyond any release, and within what int() converts (a
# 5,000-digit part would end in a traceback instead of this message).
RELEASE_PATTERN = (
    r"v?(?P<major>0|[1-9]\d{0,8})\.(?P<minor>0|[1-9]\d{0,8})\.(?P<patch>0|[1-9]\d{0,8})"
)
_VERSION_RE = re.compile(RELEASE_PATTERN + r"(?:-(?P<pre>(?:alpha|beta|rc)\.(?:0|[1-9]\d{0,8})))?")
_PRERELEASE_RANK = {"alpha": 0, "beta": 1, "rc": 2}


@dataclass(frozen=True, order=True)
class TalosVersion:
    """A Talos release such as ``v1.13.9`` or ``v1.14.0-rc.1``; a pre-release sorts first."""

    major: int
    minor: int
    patch: int
    # Sort key of the pre-release: (0, rank, n) for alpha/beta/rc, (1, 0, 0) for a release.
    _pre_key: tuple[int, int, int] = field(default=(1, 0, 0), repr=False)
    prerelease: str = field(default="", compare=False)

    @classmethod
    def parse(cls, text: str) -> TalosVersion:
        """Parse ``v1.13.9`` or ``1.13.9`` (pre-releases ``-alpha.N``/``-beta.N``/``-rc.N``)."""
        match = _VERSION_RE.fullmatch(text.strip())
        if match is None:
            raise CatalogError(
                f"{text!r} is not a Talos version; write it as vMAJOR.MINOR.PATCH, e.g. v1.13.9"
            )
        pre = match["pre"] or ""
        pre_key = (1, 0, 0)
        if pre:
            kind, number = pre.split(".")
            pre_key = (0, _PRERELEASE_RANK[kind], int(number))
        return cls(int(match["major"]), int(match["minor"]), int(match["patch"]), pre_key, pre)

    @classmethod
    def of(cls, version: str | TalosVersion) -> TalosVersion:
        """Accept either a parsed version or its text."""
        return version if isinstance(version, TalosVersion) else cls.parse(version)

    @property
    def minor_line(self) -> tuple[int, int]:
        return (self.major, self.minor)

    @property
    def release(self) -> TalosVersion:
        """The final release this version leads to (itself, without a pre-release)."""
        return TalosVersion(self.major, self.minor, self.patch)

    def __str__(self) -> str:
        suffix = f"-{self.prerelease}" if self.prerelease else ""
        return f"v{self.major}.{self.minor}.{self.patch}{suffix}"


# The command that reads a factory's releases into a facts file, and the file's usual name
# (see schematic/facts/release_facts.py), named wherever a release is unknown.
REFRESH_COMMAND = "talos-schematic facts refresh"
FACTS_FILE_NAME = "talos-facts.yaml"

# The schematic with no customization: `customization: {}` (vanilla Talos).
EMPTY_SCHEMATIC_ID = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
# From Talos 1.14 the plain ghcr.io/siderolabs/installer is no longer published; Talos itself
# defaults to the factory's metal-installer with the empty schematic (siderolabs/talos#13202,
# #13353).
METAL_INSTALLER_FROM = TalosVersion(1, 14, 0)
_FACTORY_REGISTRY = "factory.talos.dev"


def default_installer_repository(version: str | TalosVersion, platform: str = "metal") -> str:
    """The installer repository a release upgrades from when the user names none.

    ``<repository>/<schematicID>:<version>``: ``factory.talos.dev/installer`` up to Talos 1.13;
    from 1.14 the factory's ``<platform>-installer`` (``metal-installer`` is what Talos 1.14
    itself defaults to). ``platform`` is the factory's image platform the node booted (a
    KubeVirt worker booted the ``openstack`` image): a platform installer writes that platform's
    kernel arguments, so another platform's installer would change them on upgrade.
    """
    release = TalosVersion.of(version).release
    kind = f"{platform}-installer" if release >= METAL_INSTALLER_FROM else "installer"
    return f"{_FACTORY_REGISTRY}/{kind}"


def talhelper_installer(registry: str, mode: str, secureboot: bool, schematic_id: str) -> str:
    """The installer talhelper derives with its default template (without ``:<version>``):
    ``<registry>/<mode>-installer[-secureboot]/<ID>``, ``mode`` being the node's
    ``machineSpec.mode`` (``metal`` unless set): budimanjojo/talhelper
    ``pkg/config/defaults.go`` (``GetImageFactory``) at 39b69792, this form since 6b09d815."""
    secure = "-secureboot" if secureboot else ""
    return f"{registry}/{mode}-installer{secure}/{schematic_id}"


def vanilla_installer_image(version: str | TalosVersion) -> str:
    """The install image of vanilla Talos (what `talosctl gen config` writes) for a release."""
    wanted = TalosVersion.of(version)
    if wanted.release >= METAL_INSTALLER_FROM:
        return f"{default_installer_repository(wanted)}/{EMPTY_SCHEMATIC_ID}:{wanted}"
    return f"ghcr.io/siderolabs/installer:{wanted}"


def driver_key(version: str) -> tuple[int, ...]:
    """Sort key of an NVIDIA driver version such as ``580.95.05``: its numbers, in order
    (ValueError for text that is not numbers between dots)."""
    return tuple(int(part) for part in version.split("."))


@dataclass(frozen=True)
class DriverRow:
    """Talos releases ``first``..``last`` and the NVIDIA versions they pin."""

    first: TalosVersion
    last: TalosVersion
    lts_driver: str
    production_driver: str | None
    container_toolkit: str
    naming: Literal["unsuffixed", "tiered"]

    def covers(self, version: TalosVersion) -> bool:
        return self.first <= version <= self.last


@dataclass(frozen=True)
class DriverTableMatch:
    """The row used for a version, and why it is not an exact fit when it is not."""

    row: DriverRow
    note: str = ""


@functools.cache
def driver_table() -> tuple[DriverRow, ...]:
    """The rows of ``talos-nvidia-drivers.tsv``, oldest first."""
    text = resources.files("schematic.data").joinpath("talos-nvidia-drivers.tsv").read_text()
    rows: list[DriverRow] = []
    header_seen = False
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if not header_seen:
            header_seen = True
            continue
        first, last, lts, production, toolkit, naming = line.split("\t")
        if naming not in ("unsuffixed", "tiered"):
            raise ValueError(f"talos-nvidia-drivers.tsv: unknown naming {naming!r}")
        rows.append(
            DriverRow(
                first=TalosVersion.parse(first),
                last=TalosVersion.parse(last),
                lts_driver=lts,
                production_driver=production or None,
                container_toolkit=toolkit,
                naming="tiered" if naming == "tiered" else "unsuffixed",
            )
        )
    return tuple(rows)


def driver_row(version: str | TalosVersion) -> DriverTableMatch:
    """The shipped driver-table row of a Talos release (a pre-release as the release it leads
    to, said in the note).

    A release the table has no row for has unknown drivers: a patch can change them (five of
    the nine 1.13 patches did), so no other row stands in for it. NvidiaError (``UNKNOWN_RELEASE``)
    names the command that reads them from the factory;
    :func:`schematic.facts.release_facts.drivers_of` asks a facts file first.
    """
    wanted = TalosVersion.of(version)
    table = driver_table()
    release = wanted.release
    exact = next((row for row in table if row.covers(release)), None)
    if exact is not None:
        note = ""
        if wanted.prerelease:
            note = f"Talos {wanted} is a pre-release; assuming the NVIDIA drivers of {release}"
        return DriverTableMatch(exact, note)
    if release < table[0].first:
        raise NvidiaError(
            f"Talos {wanted} predates the NVIDIA system extensions (first in {table[0].first}); "
            "use a newer Talos",
            GpuRefusal.NOT_OFFERED,
        )
    raise NvidiaError(
        f"the NVIDIA drivers of Talos {wanted} are unknown: neither a facts file nor the "
        f"shipped driver table (last {table[-1].last}) lists that release. Read them from the "
        f"Image Factory with `{REFRESH_COMMAND}` (then pass --facts FILE, or keep "
        f"{FACTS_FILE_NAME} beside the cluster file), or plan with another release's drivers "
        "with --assume-drivers-of vX.Y.Z",
        GpuRefusal.UNKNOWN_RELEASE,
    )
