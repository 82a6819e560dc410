"""``facts refresh``: read an Image Factory's releases into a facts file, like a lock file.

The factory's answers (image-factory ``internal/frontend/http/meta.go``, commit 26b95cac):
``GET /versions`` lists the releases it builds, without the ones its configuration marks
broken; ``GET /versions?broken=true`` lists those (v1.3.3+; an older factory ignores the query
and answers the whole list, which is how it is told apart: the two lists never share a
release otherwise); ``GET /version/<v>/extensions/official`` lists each extension's ``name``
(the image's repository), ``ref`` (with its tag) and ``digest``.

Extension lists are fetched concurrently through the one factory client (its limits,
retries, redaction and errors). The file is rewritten only when what it says changed: its
``date`` is the day the facts last changed, so a second run with nothing new leaves the file
untouched, byte for byte and in its modification time.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schematic.errors import CatalogError, FactoryError, TalosSchematicError
from schematic.factory.client import FactoryClient
from schematic.facts.release_facts import (
    ExtensionEntry,
    ReleaseFacts,
    drivers_from_extensions,
    drivers_record,
    load_facts,
)
from schematic.facts.talos import REFRESH_COMMAND, TalosVersion
from schematic.inputs.factory_url import split_factory_url
from schematic.output.disk import write_file_atomically
from schematic.output.render import yamltext

__all__ = ["DEFAULT_MINOR_LINES", "Refreshed", "facts_text", "refresh_facts"]

# Releases of the newest two minor lines by default: what clusters run and upgrade to, at
# about 25 kB a release; --since reaches further back.
DEFAULT_MINOR_LINES = 2


@dataclass(frozen=True)
class Refreshed:
    """What a refresh did: the file, whether it was written, and what it says now."""

    path: Path
    written: bool
    releases: tuple[TalosVersion, ...]  # those whose extensions the file holds
    added: tuple[TalosVersion, ...]  # of those, the ones the previous file lacked
    withdrawn: tuple[TalosVersion, ...] | None
    drivers: tuple[str, ...]  # one line per added release with NVIDIA drivers


def facts_text(
    factory: str,
    date: str,
    releases: Sequence[TalosVersion],
    withdrawn: Sequence[TalosVersion] | None,
    extensions: Mapping[TalosVersion, Sequence[ExtensionEntry]],
) -> str:
    """The facts file's bytes: fixed key order, releases ascending, names sorted, so that the
    same answers give the same bytes and a diff shows exactly a new release or driver."""
    document: dict[str, Any] = {
        "imageFactoryURL": factory,
        "date": date,
        "releases": [str(version) for version in sorted(releases)],
    }
    if withdrawn is not None:
        document["withdrawn"] = [str(version) for version in sorted(withdrawn)]
    document["extensions"] = {
        str(version): [
            {"name": entry.name, "ref": entry.ref, "digest": entry.digest}
            for entry in sorted(extensions[version], key=lambda entry: entry.name)
        ]
        for version in sorted(extensions)
    }
    drivers: dict[str, dict[str, str]] = {}
    for version in sorted(extensions):
        row = drivers_from_extensions(list(extensions[version]), version)
        if row is not None:
            drivers[str(version)] = drivers_record(row)
    document["drivers"] = drivers
    header = (
        "# Talos releases and their official extensions as an Image Factory serves them;\n"
        f"# written by `{REFRESH_COMMAND}`. Commit it beside the cluster file; `drivers` is\n"
        "# read from the NVIDIA extensions' tags, for review.\n"
    )
    return header + yamltext.dump(document)


def _parsed(listed: Sequence[str], what: str, factory: str) -> list[TalosVersion]:
    versions = []
    for text in listed:
        try:
            versions.append(TalosVersion.parse(text))
        except TalosSchematicError:
            raise FactoryError(
                f"{factory}: {what}: {text!r} is not a Talos release (vX.Y.Z)"
            ) from None
    return versions


def _in_scope(versions: Sequence[TalosVersion], since: TalosVersion | None) -> list[TalosVersion]:
    """The releases whose extensions are read: from ``since`` on (with the pre-releases that
    lead to it), else those of the newest minor lines."""
    if since is None:
        lines = sorted({version.minor_line for version in versions})[-DEFAULT_MINOR_LINES:]
        return sorted(version for version in versions if version.minor_line in lines)
    return sorted(version for version in versions if version.release >= since.release)


def _previous(path: Path) -> ReleaseFacts | None:
    """The file as it stands; None when there is none or it cannot be read as facts (then
    it is replaced)."""
    if not path.exists():
        return None
    try:
        return load_facts(path)
    except CatalogError:
        return None


def refresh_facts(
    client: FactoryClient,
    out: Path,
    *,
    since: str | None = None,
    today: Callable[[], datetime.date] = datetime.date.today,
    progress: Callable[[int, int], None] | None = None,
) -> Refreshed:
    """Ask the factory and write ``out`` when its facts changed (atomically).

    ``since`` (``v1.13.0``) is the oldest release whose extensions are read; by default the
    newest two minor lines the factory serves. Raises FactoryError for a factory that cannot
    be read; ``out`` is then left as it was.
    """
    factory = split_factory_url(client.url)[0]
    oldest = None if since is None else TalosVersion.parse(since)
    served = _parsed(client.versions(), "GET /versions", factory)
    broken = _parsed(client.withdrawn_versions(), "GET /versions?broken=true", factory)
    withdrawn: tuple[TalosVersion, ...] | None = tuple(sorted(broken))
    if set(broken) & set(served):
        withdrawn = None  # a factory before v1.3.3 answered its whole list
    wanted = _in_scope(served, oldest)
    extensions: dict[TalosVersion, tuple[ExtensionEntry, ...]] = {}
    if wanted:
        with ThreadPoolExecutor(
            max_workers=min(client.max_in_flight, len(wanted)), thread_name_prefix="factory"
        ) as pool:
            futures = {
                version: pool.submit(client.official_extensions, str(version)) for version in wanted
            }
            for done, (version, future) in enumerate(futures.items(), start=1):
                listed = future.result()
                extensions[version] = tuple(
                    ExtensionEntry(info.name, info.ref, info.digest) for info in listed
                )
                if progress is not None:
                    progress(done, len(wanted))
    previous = _previous(out)
    date = previous.date if previous is not None else today().isoformat()
    text = facts_text(factory, date, served, withdrawn, extensions)
    unchanged = previous is not None and out.read_bytes() == text.encode()
    if not unchanged:
        if previous is not None:
            text = facts_text(factory, today().isoformat(), served, withdrawn, extensions)
        write_file_atomically(out, text.encode())
    known = set() if previous is None else set(previous.extensions)
    added = tuple(version for version in wanted if version not in known)
    drivers = []
    for version in added:
        row = drivers_from_extensions(extensions[version], version)
        if row is not None:
            production = f", production {row.production_driver}" if row.production_driver else ""
            drivers.append(f"Talos {version}: NVIDIA lts {row.lts_driver}{production}")
    return Refreshed(out, not unchanged, tuple(wanted), added, withdrawn, tuple(drivers))
