"""Official system extensions and overlays per Talos release, from packaged data.

The data file (`schematic/data/extensions.json`, built by `scripts/build_catalog.py`) holds the
known releases in order and, per name, the inclusive ranges of releases that offer it. A patch
release newer than the newest known patch of a known minor uses that newest patch's catalogue:
extensions are added in minors, and patch releases have only ever added names, so the newest
known patch is the best available answer. `resolve_version` tells which release was used.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from importlib import resources

from schematic.errors import CatalogError, closest_names
from schematic.facts.talos import REFRESH_COMMAND

__all__ = [
    "Overlay",
    "UnofferedExtension",
    "catalog_source",
    "check_extensions",
    "extension_releases",
    "extensions_for",
    "extensions_never_together",
    "factory_alias",
    "normalise_extension_name",
    "overlay_image",
    "overlay_releases",
    "overlays_for",
    "resolve_version",
    "talos_versions",
    "unoffered_extensions",
]

# Nine digits a part at most, as in talos.py: int() refuses a part of over 4,300 digits.
_VERSION = re.compile(r"^v?(\d{1,9})\.(\d{1,9})(?:\.(\d{1,9}))?(-[0-9A-Za-z.-]+)?$")


@dataclass(frozen=True)
class Overlay:
    """An official overlay: the `overlay.name` and `overlay.image` a schematic names."""

    name: str
    image: str


@dataclass(frozen=True)
class _Catalog:
    source: str
    snapshot: str
    versions: tuple[str, ...]
    extensions: dict[str, frozenset[str]]  # release -> extension names
    overlays: dict[str, frozenset[str]]  # release -> overlay names
    overlay_images: dict[str, str]
    releases_of: dict[str, tuple[str, ...]]  # extension name -> releases offering it


def _key(version: str) -> tuple[int, int, int]:
    major, minor, patch = version.lstrip("v").split(".")
    return int(major), int(minor), int(patch)


@functools.cache
def _catalog() -> _Catalog:
    raw = json.loads(
        resources.files("schematic.data").joinpath("extensions.json").read_text("utf-8")
    )
    versions: tuple[str, ...] = tuple(raw["versions"])
    position = {version: index for index, version in enumerate(versions)}

    def expand(runs: list[list[str]]) -> tuple[str, ...]:
        return tuple(
            versions[index]
            for first, last in runs
            for index in range(position[first], position[last] + 1)
        )

    extensions: dict[str, set[str]] = {version: set() for version in versions}
    releases_of: dict[str, tuple[str, ...]] = {}
    for name, runs in raw["extensions"].items():
        releases_of[name] = expand(runs)
        for version in releases_of[name]:
            extensions[version].add(name)
    overlays: dict[str, set[str]] = {version: set() for version in versions}
    overlay_images: dict[str, str] = {}
    for name, entry in raw["overlays"].items():
        overlay_images[name] = entry["image"]
        for version in expand(entry["versions"]):
            overlays[version].add(name)
    return _Catalog(
        source=raw["source"],
        snapshot=raw["snapshot"],
        versions=versions,
        extensions={version: frozenset(names) for version, names in extensions.items()},
        overlays={version: frozenset(names) for version, names in overlays.items()},
        overlay_images=overlay_images,
        releases_of=releases_of,
    )


def catalog_source() -> str:
    """Where the packaged catalogue comes from, with its snapshot date."""
    catalog = _catalog()
    return f"{catalog.source} (snapshot {catalog.snapshot})"


def talos_versions() -> tuple[str, ...]:
    """Known Talos releases, ascending (``"v1.2.0"`` … ``"v1.14.0"``)."""
    return _catalog().versions


def _closest(major: int, minor: int, patch: int | None) -> list[str]:
    """Three known releases nearest to the wanted one in release order (beyond the newest: the
    newest); without a patch, the newest patches of its minor come first."""

    def ordinal(version: tuple[int, int, int]) -> int:
        # Patches and minors stay below 1,000: the order of the tuples, as one number.
        return version[0] * 1_000_000 + version[1] * 1_000 + version[2]

    wanted = ordinal((major, minor, 999 if patch is None else patch))

    def distance(version: str) -> tuple[bool, int, int]:
        have = _key(version)
        other_minor = patch is None and have[:2] != (major, minor)
        return (other_minor, abs(ordinal(have) - wanted), -have[2])

    return sorted(talos_versions(), key=distance)[:3]


def resolve_version(talos: str) -> str:
    """The known release whose catalogue applies to ``talos`` (``v`` prefix optional).

    Returns ``talos`` itself (with a ``v``) when known, or the newest known patch of its minor
    when ``talos`` is a newer patch; raises CatalogError, naming the closest known releases,
    otherwise.
    """
    catalog = _catalog()
    text = talos.strip()
    match = _VERSION.match(text)
    if match is None:
        raise CatalogError(
            f"Talos version {talos!r} is not a release version like v1.13.9; "
            f"known releases: {catalog.versions[0]} … {catalog.versions[-1]}"
        )
    major, minor = int(match[1]), int(match[2])
    patch = None if match[3] is None else int(match[3])
    closest = ", ".join(_closest(major, minor, patch))
    if patch is None:
        raise CatalogError(
            f"Talos version {talos!r} needs a patch number; closest known: {closest}"
        )
    if match[4]:
        raise CatalogError(
            f"Talos version {talos!r} is a pre-release; the catalogue holds releases only "
            f"({catalog.versions[0]} … {catalog.versions[-1]}); closest known: {closest}"
        )
    wanted = (major, minor, patch)
    version = f"v{major}.{minor}.{patch}"
    if version in catalog.extensions:
        return version
    same_minor = [v for v in catalog.versions if _key(v)[:2] == wanted[:2]]
    if same_minor and wanted > _key(same_minor[-1]):
        return same_minor[-1]
    newer = f"; to read newer releases from the factory: {REFRESH_COMMAND}"
    raise CatalogError(
        f"Talos version {talos!r} is not in the extension catalogue "
        f"({catalog.versions[0]} … {catalog.versions[-1]}); "
        f"closest known: {closest}" + (newer if wanted > _key(catalog.versions[-1]) else "")
    )


def extensions_for(talos: str) -> frozenset[str]:
    """Official extension names (``siderolabs/…``) offered for Talos ``talos``."""
    return _catalog().extensions[resolve_version(talos)]


def overlays_for(talos: str) -> frozenset[str]:
    """Official overlay names (e.g. ``rpi_generic``) offered for Talos ``talos``."""
    return _catalog().overlays[resolve_version(talos)]


def overlay_image(name: str) -> str:
    """The image of an official overlay (``rpi_generic`` → ``siderolabs/sbc-raspberrypi``)."""
    try:
        return _catalog().overlay_images[name]
    except KeyError:
        raise CatalogError(f"{name!r} is not an official overlay") from None


def overlay_releases(name: str) -> tuple[str, ...]:
    """Known releases offering overlay ``name``, ascending; empty when none does."""
    catalog = _catalog()
    return tuple(version for version in catalog.versions if name in catalog.overlays[version])


def extension_releases(name: str) -> tuple[str, ...]:
    """Known releases offering extension ``name``, ascending; empty when none does."""
    return _catalog().releases_of.get(name, ())


# The names an Image Factory build takes for another when a release does not offer them: names
# the extensions' manifests got wrong, and names renamed by a later release (the NVIDIA ones in
# v1.8.0, where the untiered name builds the LTS tier). siderolabs/image-factory
# internal/profile/profile.go `extensionNameAlias`, commit 03bd46f7. The fabric manager's alias
# names no published extension, so on v1.8.0 and later that old name still fails to build.
_FACTORY_ALIASES = {
    "siderolabs/v4l-uvc": "siderolabs/v4l-uvc-drivers",
    "siderolabs/usb-modem": "siderolabs/usb-modem-drivers",
    "siderolabs/gasket": "siderolabs/gasket-driver",
    "siderolabs/talos-vmtoolsd": "siderolabs/vmtoolsd-guest-agent",
    "siderolabs/xe-guest-utilities": "siderolabs/xen-guest-agent",
    "siderolabs/nvidia-container-toolkit": "siderolabs/nvidia-container-toolkit-lts",
    "siderolabs/nvidia-open-gpu-kernel-modules": "siderolabs/nvidia-open-gpu-kernel-modules-lts",
    "siderolabs/nonfree-kmod-nvidia": "siderolabs/nonfree-kmod-nvidia-lts",
    "siderolabs/nvidia-fabricmanager": "siderolabs/nvidia-fabric-manager-lts",
}


def factory_alias(name: str) -> str | None:
    """The name an Image Factory build tries when a release does not offer ``name``."""
    return _FACTORY_ALIASES.get(name)


def _builds_on(name: str, version: str) -> bool:
    """Whether the factory builds extension ``name`` for a known release ``version``."""
    offered = _catalog().releases_of
    alias = _FACTORY_ALIASES.get(name)
    return version in offered.get(name, ()) or (
        alias is not None and version in offered.get(alias, ())
    )


def extensions_never_together(names: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """The catalogued names of ``names``, each with the releases offering it
    (``"v1.2.0 … v1.7.7"``), when no known release offers them
    all at once (``nvidia-fabricmanager``, up to v1.7, beside ``nonfree-kmod-nvidia-production``,
    from v1.8): the factory builds such a schematic for no Talos version. Empty when some
    release offers them all, or fewer than two are catalogued (an unknown name says nothing)."""
    catalog = _catalog()
    known = {
        name: tuple(version for version in catalog.versions if _builds_on(name, version))
        for name in dict.fromkeys(names)
    }
    known = {name: found for name, found in known.items() if found}
    if len(known) < 2:
        return ()
    common = frozenset(catalog.versions).intersection(*known.values())
    return () if common else tuple((name, _runs(found)) for name, found in known.items())


def normalise_extension_name(name: str) -> str:
    """Add the ``siderolabs/`` style prefix to a bare name when exactly one official name fits.

    ``qemu-guest-agent`` → ``siderolabs/qemu-guest-agent``. Names holding a ``/``, and bare
    names matching no official name (or more than one), are returned unchanged, so that
    `check_extensions` reports them. Matching is exact and case-sensitive, as the factory's is.
    """
    if "/" in name:
        return name
    matches = [full for full in _catalog().releases_of if full.rsplit("/", 1)[1] == name]
    return matches[0] if len(matches) == 1 else name


def _runs(releases: tuple[str, ...]) -> str:
    """``v1.2.0 … v1.7.7``, with a comma-separated run for each gap."""
    position = {version: index for index, version in enumerate(talos_versions())}
    runs: list[list[str]] = []
    for version in releases:
        if runs and position[version] == position[runs[-1][-1]] + 1:
            runs[-1].append(version)
        else:
            runs.append([version])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]} … {run[-1]}" for run in runs)


@dataclass(frozen=True)
class UnofferedExtension:
    """An extension name a release does not offer, and what may have been meant."""

    name: str
    # The official name it abbreviates, when the release offers that (``qemu-guest-agent``).
    full: str | None
    # Known releases offering it (the packaged catalogue) and up to three close offered names.
    releases: tuple[str, ...]
    close: tuple[str, ...]

    def hint(self, *, releases: bool = True) -> str:
        """What to do, for a message; ``releases=False`` leaves out the packaged catalogue's
        releases (for a factory's own list, which may differ from it)."""
        if self.full:
            return f"write it in full: {self.full}"
        hints: list[str] = []
        if releases and self.releases:
            hints.append(f"offered by Talos {_runs(self.releases)}")
        if self.close:
            hints.append("did you mean " + ", ".join(self.close) + "?")
        if not hints and releases:
            return "not an official extension of any known release"
        return "; ".join(hints)


def unoffered_extensions(
    names: Iterable[str], offered: Collection[str], *, factory_aliases: bool = False
) -> tuple[UnofferedExtension, ...]:
    """Each name in ``names`` that ``offered`` lacks, once, in first-seen order.

    The one check of extension names: ``offered`` is a release's list in the packaged catalogue
    (planning, lint) or the list a factory serves (``--live-catalogue``, the lock file).
    ``factory_aliases`` accepts an old name whose `factory_alias` is offered, as a factory build
    does (lint of schematics written by hand); planning writes the offered names themselves.
    """
    offered_set = frozenset(offered)

    def lacks(name: str) -> bool:
        alias = factory_alias(name) if factory_aliases else None
        return name not in offered_set and (alias is None or alias not in offered_set)

    unknown = dict.fromkeys(name for name in names if lacks(name))
    found = []
    for name in unknown:
        full = normalise_extension_name(name)
        close = closest_names(full, offered_set)
        found.append(
            UnofferedExtension(
                name=name,
                full=full if full != name and full in offered_set else None,
                releases=extension_releases(full),
                close=tuple(close),
            )
        )
    return tuple(found)


def check_extensions(
    names: Iterable[str],
    talos: str,
    *,
    where: str = "",
    offered: Collection[str] | None = None,
) -> None:
    """Raise CatalogError naming every extension in ``names`` that ``talos`` does not offer.

    Each unknown name comes with the releases that do offer it and up to three close valid
    names; ``where`` (e.g. ``cluster.yaml: pool "gpu": extensions``) prefixes the message.
    ``offered`` is the release's list when planning has it (a facts file's), else the
    packaged catalogue's.
    """
    used = talos.strip() if offered is not None else resolve_version(talos)
    unknown = unoffered_extensions(
        names, _catalog().extensions[used] if offered is None else offered
    )
    if not unknown:
        return
    asked = talos.strip()
    release = (
        f"Talos {used}"
        if used.lstrip("v") == asked.lstrip("v")
        else (f"Talos {asked} (catalogue of {used})")
    )
    prefix = f"{where}: " if where else ""
    if len(unknown) == 1:
        raise CatalogError(
            f"{prefix}extension {unknown[0].name!r} is not offered by {release}: "
            + unknown[0].hint()
        )
    lines = [f"{prefix}{len(unknown)} extensions are not offered by {release}:"]
    lines += [f"  - {u.name!r}: {u.hint()}" for u in unknown]
    raise CatalogError("\n".join(lines))
