"""The packaged well-known schematic IDs and the resolver."""

from __future__ import annotations

import hashlib
import json
from importlib import resources

from schematic.core.model import Schematic
from schematic.doctor.lint.schematics import (
    WELL_KNOWN_FILE,
    SchematicResolver,
    build_well_known,
    well_known,
)

COZY = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
EMPTY = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"


def _packaged() -> str:
    return resources.files("schematic.data").joinpath(WELL_KNOWN_FILE).read_text("utf-8")


def test_packaged_file_is_what_the_builder_writes() -> None:
    assert _packaged() == build_well_known()


def test_every_id_is_the_hash_of_its_body_and_of_its_extensions() -> None:
    for entry in json.loads(_packaged())["schematics"]:
        assert hashlib.sha256(entry["canonical"].encode()).hexdigest() == entry["id"]
        assert Schematic.from_extensions(entry["extensions"]).id == entry["id"]
        assert entry["source"]


def test_cozystack_default_is_qemu_guest_agent_only() -> None:
    assert well_known()[COZY].schematic.extensions == ("siderolabs/qemu-guest-agent",)
    assert well_known()[EMPTY].schematic.extensions == ()


def test_nvidia_sets_are_sorted_like_the_ui() -> None:
    nvidia = [k for k in well_known().values() if "NVIDIA" in k.source]
    assert len(nvidia) == 12
    assert all(list(k.schematic.extensions) == sorted(k.schematic.extensions) for k in nvidia)


def test_resolver_order_local_then_well_known_then_factory() -> None:
    local = Schematic.from_extensions(["siderolabs/zfs"])
    asked: list[str] = []

    def fetch(schematic_id: str) -> Schematic | None:
        asked.append(schematic_id)
        return None

    resolver = SchematicResolver({local.id: (local, "s.yaml:1")}, fetch)
    assert resolver.resolve(local.id).origin == "schematic file s.yaml:1"
    assert resolver.resolve(COZY).origin.startswith("well-known ID")
    missing = resolver.resolve("00" * 32)
    assert (missing.schematic, asked) == (None, ["00" * 32])
    resolver.resolve("00" * 32)
    assert asked == ["00" * 32]  # cached


def test_without_a_factory_unknown_ids_stay_unresolved() -> None:
    assert SchematicResolver().resolve("11" * 32).schematic is None
