"""`talosctl support` bundles read whole: a folder or its ``.zip``, a node's folder naming the
node for everything under it.

The bundle's layout is go-talos-support's (siderolabs/go-talos-support
``0f784bd58b320543663679693c817515067f3021`` ``support/collectors/collectors.go``, which
``talosctl support`` calls, siderolabs/talos ``cmd/talosctl/cmd/talos/support.go``): for each
node a folder named as the node was given (``-n``), holding ``dmesg.log``, ``devices`` (the
node's ``/proc/bus/pci/devices``), ``mounts``, ``processes``, ``summary``, ``resources/<type>.yaml``
(resources without a ``node:`` field), ``service-logs/<id>.log|.state`` and
``kubernetes-logs/<namespace>/<container>.log``; for the cluster ``kubernetesResources/nodes.yaml``
and ``systemPods.yaml``, lists written without ``kind`` and ``apiVersion``.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath

from schematic.doctor.triage.values import is_address
from schematic.errors import TriageInputError, printable

__all__ = ["Source", "is_zip", "node_folders", "unpacked"]

# What a node's folder of a support bundle holds (any one names the folder a node's).
_NODE_FOLDER_MARKS = frozenset(
    {"dmesg.log", "devices", "mounts", "processes", "summary", "resources", "service-logs"}
    | {"kubernetes-logs", "controller-runtime.log", "dependencies.dot"}
)
# A bundle of a few dozen nodes holds some thousands of files; past these the archive is not a
# support bundle (or it is a bomb): refused, never half read.
_MAX_MEMBERS = 50_000
_ZIP_MAGIC = b"PK\x03\x04"
# What an archive may unpack to in all: a large cluster's bundle is some hundreds of MiB.
_MAX_TOTAL = 2 * 1024 * 1024 * 1024


@dataclass(frozen=True)
class Source:
    """A file to read: its name in the report (a member as ``bundle.zip/<member>``), where its
    bytes are, and the folder it was found in (for the node folder above it)."""

    name: str
    path: str
    relative: str  # its path below the folder or archive it came from ("" when given alone)


def is_zip(path: str) -> bool:
    """Whether ``path`` is a regular file that starts as a zip archive (by content)."""
    try:
        if not os.path.isfile(path):
            return False
        with open(path, "rb") as handle:
            return handle.read(4) == _ZIP_MAGIC
    except OSError:
        return False


@contextmanager
def unpacked(archive: str, limit: int) -> Iterator[list[Source]]:
    """The members of a zip ``archive`` as files in a private temporary folder (named by
    number, never by the member's own path), each at most ``limit`` bytes and all together at
    most :data:`_MAX_TOTAL`; removed on exit."""
    shown = printable(archive, one_line=True)
    try:
        bundle = zipfile.ZipFile(archive)
    except (OSError, zipfile.BadZipFile) as err:
        raise TriageInputError(f"{shown}: not a readable zip archive ({err})") from None
    with bundle, tempfile.TemporaryDirectory(prefix="triage-") as folder:
        members = [m for m in bundle.infolist() if not m.is_dir()]
        if len(members) > _MAX_MEMBERS:
            raise TriageInputError(f"{shown}: {len(members)} members, over {_MAX_MEMBERS}")
        declared = sum(m.file_size for m in members)
        if declared > _MAX_TOTAL:
            raise TriageInputError(f"{shown}: unpacks to {declared} bytes, over {_MAX_TOTAL}")
        sources: list[Source] = []
        unpacked_total = 0
        for number, member in enumerate(members):
            if member.file_size > limit:
                raise TriageInputError(
                    f"{shown}/{printable(member.filename, one_line=True)}: "
                    f"{member.file_size} bytes, over the input limit of {limit}"
                )
            target = os.path.join(folder, f"{number:06d}")
            # Headers can understate: what was written counts, member by member.
            unpacked_total += _copy(bundle, member, target, limit, shown)
            if unpacked_total > _MAX_TOTAL:
                raise TriageInputError(f"{shown}: unpacks to over {_MAX_TOTAL} bytes")
            relative = str(PurePosixPath(member.filename))
            sources.append(Source(f"{archive}/{relative}", target, relative))
        yield sources


def _copy(
    bundle: zipfile.ZipFile, member: zipfile.ZipInfo, target: str, limit: int, shown: str
) -> int:
    """One member, copied while it is counted (its size in bytes): a size the header
    understates is cut at ``limit`` and refused."""
    written = 0
    try:
        with bundle.open(member) as source, open(target, "xb") as sink:
            while chunk := source.read(1 << 20):
                written += len(chunk)
                if written > limit:
                    raise TriageInputError(
                        f"{shown}/{printable(member.filename, one_line=True)}: over the input "
                        f"limit of {limit} bytes"
                    )
                sink.write(chunk)
    except (OSError, zipfile.BadZipFile, EOFError) as err:
        raise TriageInputError(
            f"{shown}/{printable(member.filename, one_line=True)}: cannot read ({err})"
        ) from None
    return written


def node_folders(sources: Iterable[Source]) -> dict[str, str]:
    """Source name → the node its nearest node folder names: a folder whose name is an
    address, or one holding a support bundle's node files (``dmesg.log``, ``resources/``...),
    at any depth below where the file was found."""
    sources = list(sources)
    children: dict[PurePosixPath, set[str]] = defaultdict(set)
    for source in sources:
        path = PurePosixPath(source.relative)
        for parent, child in zip(path.parents, (path, *path.parents), strict=False):
            if str(parent) != ".":
                children[parent].add(child.name)
    found: dict[str, str] = {}
    for source in sources:
        for parent in PurePosixPath(source.relative).parents:
            if str(parent) == ".":
                break
            if is_address(parent.name) or children[parent] & _NODE_FOLDER_MARKS:
                found[source.name] = parent.name
                break
    return found
