"""What ``verify`` holds against an Image Factory: one (subject, ID, expected body) per schematic.

A path is a directory ``generate --out`` wrote (its index's IDs, each pool's ``schematic.yaml``
as the body, a boot schematic's ``bootSchematic`` in ``urls.yaml``), a cluster file (its plan,
one check per distinct schematic), a schematic file, or a directory searched for
``*.schematic.yaml``. Reading only: the factory is asked by
:func:`schematic.factory.client.verify_ids`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from schematic.errors import OutputError, SchematicError

if TYPE_CHECKING:
    from schematic.core.model import Schematic

__all__ = ["Check", "read_schematic", "verify_checks"]


def read_schematic(path: Path) -> Schematic:
    """A schematic file (YAML or JSON; ``-`` for stdin), decoded as the factory decodes it."""
    from schematic.core.model import Schematic
    from schematic.safe_yaml import InputKind, read_bytes, read_problem

    source = str(path)
    try:
        text = read_bytes(source, kind=InputKind.SCHEMATIC)
    except OSError as exc:
        raise SchematicError(read_problem(exc), source=source) from None
    return Schematic.from_yaml(text, source=source)


def _schematic_files(path: Path) -> list[Path]:
    if not path.is_dir():
        return [path]
    from schematic.safe_yaml import files_below, read_problem

    try:
        inside = sorted(child for child in files_below(path) if child.name.endswith(_SUFFIX))
    except OSError as err:
        # A folder that cannot be listed may hold schematics nobody checked: passing on the
        # rest would be a gate passing on what it could not read.
        raise SchematicError(read_problem(err), source=str(err.filename)) from None
    if not inside:
        raise SchematicError("no *.schematic.yaml files here", source=str(path))
    return inside


_SUFFIX = ".schematic.yaml"
# What `verify` checks: a subject (file or pools), the ID, and the body expected under it.
Check = tuple[str, str, "Schematic | None"]


def _cluster_text(path: Path) -> str | None:
    """The file's text when it is a cluster file (a mapping with ``pools``), else None."""
    import yaml

    if str(path) == "-" or not path.is_file():
        return None
    from schematic.inputs.cluster_file import parse_cluster
    from schematic.safe_yaml import InputKind, TooManyNodesError, load, node_budget, read_text

    try:
        text = read_text(path, kind=InputKind.CLUSTER)
        data = load(text, max_nodes=node_budget(InputKind.CLUSTER))
    except TooManyNodesError:
        parse_cluster(text, str(path))  # the cluster reader's own refusal, naming the budget
        raise
    except (OSError, yaml.YAMLError):
        return None  # read again as a schematic, whose error then says what is wrong
    return text if isinstance(data, dict) and "pools" in data else None


def _cluster_checks(
    path: Path, text: str, profiles: Sequence[Path], pools: Sequence[str]
) -> tuple[list[Check], str]:
    """One check per distinct schematic of the cluster file's plan, and its factory URL."""
    from schematic.inputs.cluster_file import parse_cluster
    from schematic.plan.cluster import (
        boot_media_schematics,
        plan_cluster,
        pools_by_schematic,
        pools_label,
    )

    cluster = parse_cluster(text, str(path))
    plan = plan_cluster(
        cluster, source=str(path), base_dir=path.parent, profile_dirs=tuple(profiles)
    )
    if pools:
        import dataclasses

        plan = dataclasses.replace(plan, pools=tuple(p for p in plan.pools if p.name in pools))
    checks: list[Check] = [
        (pools_label(plan.source, [pool.name for pool in pools]), schematic_id, pools[0].schematic)
        for schematic_id, pools in pools_by_schematic(plan).items()
    ]
    # The boot media's own schematics (boot.schematic), one check per distinct one.
    booting = boot_media_schematics(plan)
    if booting:
        from schematic.core.model import Schematic

        checks += [(label, key, Schematic.from_yaml(body)) for label, key, body in booting]
    return checks, plan.talos.image_factory_url


def _pool_file(directory: Path, index_path: Path, name: str, file: str) -> bytes | None:
    """A pool's file, read as the tool reads its own (never through a link, never a FIFO,
    within the size limit); None when the index records no such file."""
    from schematic.output.outdir import read_owned_file

    try:
        return read_owned_file(directory, f"{name}/{file}")
    except OSError as err:
        raise OutputError(
            f"{index_path}: pool {name!r}: {name}/{file}: {err.strerror or err}; not read"
        ) from None


def _generated_checks(directory: Path, pools: Sequence[str]) -> tuple[list[Check], str | None]:
    """One check per pool of a `generate --out` directory (the ``pools`` named, if any): its
    index ID, and its ``schematic.yaml`` as the expected body when that file was written; and
    the factory the index records."""
    from schematic.core.model import Schematic
    from schematic.output.outdir import INDEX, read_index

    index = read_index(directory)
    index_path = directory / INDEX
    if index is None:
        raise OutputError(f"{index_path}: not found")
    checks: list[Check] = []
    boot_checks: list[Check] = []  # listed after the installers' schematics
    recorded: str | None = index.image_factory_url
    for entry in index.pools:
        name, schematic_id = str(entry["name"]), str(entry["schematicID"])
        if pools and name not in pools:
            continue
        boot_id = entry.get("bootSchematicID")
        urls = f"{name}/urls.yaml" in index.files
        if isinstance(boot_id, str):
            subject = f'{index_path}: pool "{name}" boot media'
            body = _pool_file(directory, index_path, name, "urls.yaml") if urls else None
            boot_checks.append(_boot_check(index_path, name, boot_id, body, subject))
        if f"{name}/schematic.yaml" not in index.files:
            # Written without the schematic kind: only presence can be checked.
            checks.append((f'{index_path}: pool "{name}"', schematic_id, None))
            continue
        path = directory / name / "schematic.yaml"
        text = _pool_file(directory, index_path, name, "schematic.yaml")
        if text is None:
            raise SchematicError(
                "missing; the directory was edited, regenerate it", source=str(path)
            )
        schematic = Schematic.from_yaml(text, source=str(path))
        if schematic.id != schematic_id:
            raise SchematicError(
                f"this body's ID is {schematic.id}, but {INDEX} gives pool {name!r} the "
                f"ID {schematic_id}; the directory was edited, regenerate it",
                source=str(path),
            )
        checks.append((str(path), schematic_id, schematic))
    return checks + boot_checks, recorded


def _boot_check(
    index_path: Path, name: str, boot_id: str, urls: bytes | None, subject: str
) -> Check:
    """A pool's boot-media schematic: its ``urls.yaml`` holds the body (``bootSchematic``)."""
    import yaml

    from schematic.core.model import Schematic
    from schematic.safe_yaml import load

    if urls is None:
        return (subject, boot_id, None)  # written without urls.yaml: only presence
    path = index_path.parent / name / "urls.yaml"
    try:
        document = load(urls)
    except (yaml.YAMLError, ValueError):
        document = None
    body = document.get("bootSchematic") if isinstance(document, dict) else None
    if not isinstance(body, str):
        raise SchematicError(
            f"{index_path.name} gives pool {name!r} the boot schematic {boot_id}, but this "
            "file holds no bootSchematic body; the directory was edited, regenerate it",
            source=str(path),
        )
    schematic = Schematic.from_yaml(body, source=str(path))
    if schematic.id != boot_id:
        raise SchematicError(
            f"this bootSchematic's ID is {schematic.id}, but {index_path.name} gives pool "
            f"{name!r} the boot schematic {boot_id}; the directory was edited, regenerate it",
            source=str(path),
        )
    return (f"{path} (bootSchematic)", boot_id, schematic)


def verify_checks(
    paths: Sequence[Path], profiles: Sequence[Path] = (), pools: Sequence[str] = ()
) -> tuple[list[Check], list[str]]:
    """Checks for every path in order, and the factory URLs the cluster files (or the URLs
    generated from them) name."""
    from schematic.output.outdir import INDEX

    checks: list[Check] = []
    named_urls: list[str] = []
    seen: set[Path] = set()
    for path in paths:
        found: list[Check]
        url: str | None
        if path.is_dir() and (path / INDEX).is_file():
            found, url = _generated_checks(path, pools)
        elif (text := _cluster_text(path)) is not None:
            found, url = _cluster_checks(path, text, profiles, pools)
        else:
            for file in _schematic_files(path):
                if file not in seen:
                    seen.add(file)
                    schematic = read_schematic(file)
                    checks.append((str(file), schematic.id, schematic))
            continue
        checks += found
        if url is not None:
            named_urls.append(url)
    return checks, list(dict.fromkeys(named_urls))
