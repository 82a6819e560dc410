"""What an Image Factory says about Talos releases, kept in a facts file beside the cluster file.

``talos-schematic facts refresh`` reads a factory's releases (``GET /versions``), the ones it
withdrew (``GET /versions?broken=true``) and each release's official extensions (``GET
/version/<v>/extensions/official``: name, image reference with tag, digest), and writes them to
``talos-facts.yaml``, committed like a lock file. The NVIDIA drivers of a release are read from
its extensions' tags (``nvidia-open-gpu-kernel-modules-lts:580.178.04-v1.14.0``), so a release
the shipped tables never saw is planned with the drivers its factory serves, not a guess.

Which facts a run uses is set once, around the run, with :func:`using_facts`; every decision
by release asks :func:`drivers_of` and :func:`facts_in_effect`. Without a facts file the
shipped tables answer, and a release they do not know has unknown drivers: an error naming
the command that reads them, unless the user names a release whose drivers to assume.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from schematic import safe_yaml
from schematic.errors import CatalogError, GpuRefusal, NvidiaError, TalosSchematicError
from schematic.facts.nvidia import Tier, describe_nvidia_extension
from schematic.facts.talos import (
    FACTS_FILE_NAME,
    REFRESH_COMMAND,
    DriverRow,
    DriverTableMatch,
    TalosVersion,
    driver_row,
)

__all__ = [
    "FACTS_FILE_NAME",
    "REFRESH_COMMAND",
    "ExtensionEntry",
    "FactsInEffect",
    "ReleaseFacts",
    "drivers_from_extensions",
    "drivers_of",
    "drivers_record",
    "facts_file_for",
    "facts_in_effect",
    "facts_note",
    "load_facts",
    "refuse_withdrawn",
    "using_facts",
]

# siderolabs/extensions tags the NVIDIA kernel modules `<driver>-<Talos release>`, the
# container toolkit `<driver>-<toolkit version>` and the fabric manager `<driver>`, e.g.
# `nonfree-kmod-nvidia-lts:535.247.01-v1.11.2`, `nvidia-container-toolkit-lts:535.247.01-v1.17.8`
# (siderolabs/talos internal/integration/cli/image.go at a940e45a, the v1.11.2 bundle listing).
_DRIVER = re.compile(r"\d{1,4}(?:\.\d{1,4}){1,3}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class ExtensionEntry:
    """One official extension of a release, as the factory lists it."""

    name: str
    ref: str
    digest: str

    @property
    def tag(self) -> str:
        """The reference's tag (after the last ``:`` of its last path element)."""
        last = self.ref.rsplit("/", 1)[-1]
        return last.rsplit(":", 1)[1] if ":" in last else ""


def _driver_of_tag(tag: str) -> str | None:
    driver = tag.split("-", 1)[0]
    return driver if _DRIVER.fullmatch(driver) else None


def drivers_from_extensions(
    extensions: Sequence[ExtensionEntry], release: TalosVersion
) -> DriverRow | None:
    """The NVIDIA drivers a release carries, read from its extensions' tags; None when it has
    no NVIDIA kernel-module extension. The open modules' tag wins over the proprietary ones'
    (both come from one driver release in every listing read)."""
    drivers: dict[Tier | None, str] = {}
    toolkits: dict[Tier | None, str] = {}
    for entry in sorted(extensions, key=lambda entry: entry.name):
        nvidia = describe_nvidia_extension(entry.name)
        if nvidia is None:
            continue
        if nvidia.family == "kernel-modules":
            driver = _driver_of_tag(entry.tag)
            if driver and (nvidia.tier not in drivers or nvidia.flavour == "open"):
                drivers[nvidia.tier] = driver
        elif nvidia.family == "container-toolkit" and "-" in entry.tag:
            toolkits[nvidia.tier] = entry.tag.split("-", 1)[1]
    if "lts" in drivers:
        return DriverRow(
            first=release,
            last=release,
            lts_driver=drivers["lts"],
            production_driver=drivers.get("production"),
            container_toolkit=toolkits.get("lts") or toolkits.get("production", ""),
            naming="tiered",
        )
    if None not in drivers:
        return None
    return DriverRow(release, release, drivers[None], None, toolkits.get(None, ""), "unsuffixed")


@dataclass(frozen=True, eq=False)
class ReleaseFacts:
    """A facts file: one factory's releases, withdrawn releases and extensions, as of ``date``.

    Compared by identity: one file is loaded once a run, and planning caches by it."""

    path: str
    factory: str
    date: str
    releases: tuple[TalosVersion, ...]
    # None: the factory does not list withdrawn releases (before image-factory v1.3.3).
    withdrawn: tuple[TalosVersion, ...] | None
    extensions: Mapping[TalosVersion, tuple[ExtensionEntry, ...]] = field(repr=False)

    def drivers(self, version: TalosVersion) -> DriverRow | None:
        """The NVIDIA drivers of ``version`` by its extensions; None when the file lacks it."""
        entries = self.extensions.get(version)
        return None if entries is None else drivers_from_extensions(entries, version)

    def extension_names(self, version: TalosVersion) -> frozenset[str] | None:
        entries = self.extensions.get(version)
        return None if entries is None else frozenset(entry.name for entry in entries)

    def is_withdrawn(self, version: TalosVersion) -> bool:
        return self.withdrawn is not None and version in self.withdrawn

    @property
    def label(self) -> str:
        """``talos-facts.yaml (https://factory.talos.dev, 2026-12-07)``."""
        return f"{self.path} ({self.factory}, {self.date})"


def drivers_record(row: DriverRow) -> dict[str, str]:
    """A release's ``drivers`` entry in the facts file: each tier's driver, the toolkit."""
    record = {"lts": row.lts_driver}
    if row.naming == "unsuffixed":
        record = {"unsuffixed": row.lts_driver}
    if row.production_driver:
        record["production"] = row.production_driver
    if row.container_toolkit:
        record["containerToolkit"] = row.container_toolkit
    return record


def _version(text: object, where: str) -> TalosVersion:
    if not isinstance(text, str):
        raise CatalogError(f"{where}: {text!r} is not a Talos release (vX.Y.Z)")
    try:
        return TalosVersion.parse(text)
    except TalosSchematicError as err:
        raise CatalogError(f"{where}: {err}") from None


def _versions(value: object, where: str) -> tuple[TalosVersion, ...]:
    if not isinstance(value, list):
        raise CatalogError(f"{where}: expected a list of releases")
    return tuple(_version(item, f"{where}[{index}]") for index, item in enumerate(value))


def _entries(value: object, where: str) -> tuple[ExtensionEntry, ...]:
    if not isinstance(value, list):
        raise CatalogError(f"{where}: expected a list of extensions")
    entries = []
    for index, item in enumerate(value):
        at = f"{where}[{index}]"
        if not isinstance(item, dict) or set(item) != {"name", "ref", "digest"}:
            raise CatalogError(f"{at}: expected name, ref and digest")
        if not all(isinstance(item[key], str) for key in item):
            raise CatalogError(f"{at}: name, ref and digest are strings")
        if not _DIGEST.fullmatch(item["digest"]):
            raise CatalogError(f"{at}.digest: {item['digest']!r} is not sha256:<64 hex digits>")
        entries.append(ExtensionEntry(item["name"], item["ref"], item["digest"]))
    return tuple(entries)


_KEYS = ("imageFactoryURL", "date", "releases", "withdrawn", "extensions", "drivers")


def load_facts(path: Path) -> ReleaseFacts:
    """Read a facts file; CatalogError naming the file and key for anything else.

    The ``drivers`` section must be what the extensions' tags say (it is written for review):
    a hand edit there is refused rather than silently outvoted by the tags."""
    where = str(path)
    try:
        raw = safe_yaml.load(safe_yaml.read_text(path))
    except OSError as err:
        raise CatalogError(f"{where}: cannot read the facts file: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise CatalogError(f"{where}: not YAML: {err}".splitlines()[0]) from None
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: expected a facts file written by `{REFRESH_COMMAND}`")
    unknown = sorted(str(key) for key in raw if key not in _KEYS)
    if unknown:
        raise CatalogError(f"{where}: unknown key {unknown[0]!r}")
    for key in ("imageFactoryURL", "date"):
        if not isinstance(raw.get(key), str):
            raise CatalogError(f"{where}: {key}: expected text (written by `{REFRESH_COMMAND}`)")
    listed = raw.get("extensions")
    if not isinstance(listed, dict):
        raise CatalogError(f"{where}: extensions: expected a mapping of release to extensions")
    extensions = {
        _version(version, f"{where}: extensions"): _entries(entries, f"{where}: {version}")
        for version, entries in listed.items()
    }
    withdrawn = raw.get("withdrawn")
    facts = ReleaseFacts(
        path=where,
        factory=raw["imageFactoryURL"],
        date=raw["date"],
        releases=_versions(raw.get("releases"), f"{where}: releases"),
        withdrawn=None if withdrawn is None else _versions(withdrawn, f"{where}: withdrawn"),
        extensions=extensions,
    )
    written = raw.get("drivers") or {}
    if not isinstance(written, dict):
        raise CatalogError(f"{where}: drivers: expected a mapping of release to drivers")
    for version in extensions:
        row = facts.drivers(version)
        expected = None if row is None else drivers_record(row)
        if written.get(str(version)) != expected:
            raise CatalogError(
                f"{where}: drivers: {version}: {written.get(str(version))!r} is not what its "
                f"extensions' tags say ({expected!r}); run `{REFRESH_COMMAND}` again"
            )
    return facts


def facts_file_for(explicit: Path | None, beside: Path | None) -> Path | None:
    """The facts file a run uses: ``--facts FILE``, else ``talos-facts.yaml`` in the cluster
    file's directory (``beside``), else none: the shipped tables."""
    if explicit is not None:
        return explicit
    if beside is not None:
        found = beside / FACTS_FILE_NAME
        if found.is_file():
            return found
    return None


@dataclass(frozen=True)
class FactsInEffect:
    """The facts a run decides by: a facts file, or None for the shipped tables alone, and
    the release whose drivers to assume for one neither knows (``--assume-drivers-of``)."""

    facts: ReleaseFacts | None = None
    assume_drivers_of: TalosVersion | None = None


_SHIPPED_ONLY = FactsInEffect()
_IN_EFFECT: ContextVar[FactsInEffect | None] = ContextVar("facts_in_effect", default=None)


@contextlib.contextmanager
def using_facts(
    facts: ReleaseFacts | None, assume_drivers_of: str | None = None
) -> Iterator[FactsInEffect]:
    """Decide by ``facts`` (and assume ``assume_drivers_of``'s drivers) inside the block."""
    assumed = None
    if assume_drivers_of:
        assumed = _version(assume_drivers_of, "--assume-drivers-of")
    in_effect = FactsInEffect(facts, assumed)
    token = _IN_EFFECT.set(in_effect)
    try:
        yield in_effect
    finally:
        _IN_EFFECT.reset(token)


def facts_in_effect() -> FactsInEffect:
    """The facts of the run in progress (the shipped tables alone outside `using_facts`)."""
    return _IN_EFFECT.get() or _SHIPPED_ONLY


def facts_note() -> str:
    """Which facts this run decides by, and their date: said by every command that decides by
    release."""
    from schematic.facts.catalog import catalog_source

    facts = facts_in_effect().facts
    shipped = f"the shipped tables ({catalog_source().rsplit('(', 1)[-1]}"
    if facts is None:
        return f"facts: {shipped}; releases they lack: {REFRESH_COMMAND}"
    return f"facts: {facts.label}, then {shipped}"


def drivers_of(version: str | TalosVersion) -> DriverTableMatch:
    """The NVIDIA drivers of a Talos release: the facts file's, else the shipped table's; for a
    release neither knows, the drivers of ``--assume-drivers-of`` when given, said in the note.

    Raises NvidiaError naming the refresh command for a release whose drivers are unknown."""
    wanted = TalosVersion.of(version)
    in_effect = facts_in_effect()
    facts = in_effect.facts
    if facts is not None:
        for candidate in (wanted, wanted.release):
            row = facts.drivers(candidate)
            if row is not None:
                note = ""
                if candidate != wanted:
                    note = f"Talos {wanted} is a pre-release; using the drivers of {candidate}"
                return DriverTableMatch(row, note)
            if candidate in facts.extensions:
                raise NvidiaError(
                    f"Talos {candidate} offers no NVIDIA kernel-module extension ({facts.label})",
                    GpuRefusal.NOT_OFFERED,
                )
    try:
        return driver_row(wanted)
    except NvidiaError as err:
        assumed = in_effect.assume_drivers_of
        if err.refusal is not GpuRefusal.UNKNOWN_RELEASE or assumed is None:
            raise
    with using_facts(facts):  # the assumed release itself must be known
        match = drivers_of(assumed)
    note = f"assuming the NVIDIA drivers of {assumed} for Talos {wanted} (--assume-drivers-of)"
    return DriverTableMatch(match.row, note)


def refuse_withdrawn(version: str | TalosVersion, where: str = "") -> None:
    """Raise CatalogError when the facts in effect say the factory withdrew ``version``."""
    facts = facts_in_effect().facts
    wanted = TalosVersion.of(version)
    if facts is None or not facts.is_withdrawn(wanted):
        return
    served = [v for v in facts.releases if v.minor_line == wanted.minor_line and v > wanted]
    instead = f"; use {served[-1]}" if served else ""
    prefix = f"{where}: " if where else ""
    raise CatalogError(
        f"{prefix}Talos {wanted} was withdrawn by the Image Factory {facts.factory} "
        f"(GET /versions?broken=true, {facts.path} of {facts.date}){instead}"
    )
