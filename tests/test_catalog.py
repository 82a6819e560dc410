"""The packaged extension catalogue: exact against the reference listing, and its API."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from schematic.errors import CatalogError
from schematic.facts import catalog
from schematic.facts.catalog import extensions_for, unoffered_extensions

SHARED = Path(__file__).resolve().parents[2] / "shared"
REFERENCE = SHARED / "reference" / "talos" / "extensions-by-version.json"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    if not REFERENCE.exists():
        pytest.skip(f"reference listing not present at {REFERENCE}")
    data: dict[str, Any] = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return data


def test_every_release_and_name_survives(reference: dict[str, Any]) -> None:
    releases = reference["versions"]
    assert catalog.talos_versions() == tuple(entry["version"] for entry in releases)
    for entry in releases:
        version = entry["version"]
        assert catalog.extensions_for(version) == frozenset(entry["systemExtensions"] or ())
        overlays = entry["overlays"] or ()
        assert catalog.overlays_for(version) == frozenset(o["name"] for o in overlays)
        for overlay in overlays:
            assert catalog.overlay_image(overlay["name"]) == overlay["image"]


def test_build_script_reproduces_the_packaged_file(tmp_path: Path) -> None:
    if not REFERENCE.exists():
        pytest.skip(f"reference listing not present at {REFERENCE}")
    output = tmp_path / "extensions.json"
    subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "build_catalog.py"),
            str(REFERENCE),
            "--output",
            str(output),
        ],
        check=True,
        capture_output=True,
    )
    packaged = REPO / "schematic" / "data" / "extensions.json"
    assert output.read_bytes() == packaged.read_bytes()


def test_packaged_file_is_compact_and_dated() -> None:
    packaged = REPO / "schematic" / "data" / "extensions.json"
    assert packaged.stat().st_size < 20_000
    data = json.loads(packaged.read_text(encoding="utf-8"))
    assert data["snapshot"] == "2026-08"
    assert "2026-08" in catalog.catalog_source()


def test_versions_are_ascending_numerically() -> None:
    versions = catalog.talos_versions()
    assert versions[0] == "v1.2.0"
    assert versions[-1] == "v1.14.0"
    assert versions.index("v1.12.9") < versions.index("v1.12.10") < versions.index("v1.13.0")


def test_nvidia_families_by_release() -> None:
    old = catalog.extensions_for("v1.7.7")
    new = catalog.extensions_for("v1.8.0")
    assert "siderolabs/nvidia-open-gpu-kernel-modules" in old
    assert "siderolabs/nvidia-open-gpu-kernel-modules-lts" not in old
    assert "siderolabs/nvidia-open-gpu-kernel-modules" not in new
    assert {
        "siderolabs/nvidia-open-gpu-kernel-modules-lts",
        "siderolabs/nonfree-kmod-nvidia-production",
        "siderolabs/nvidia-container-toolkit-lts",
    } <= new
    assert "siderolabs/nonfree-kmod-nvidia" not in catalog.extensions_for("v1.4.8")
    assert "siderolabs/nonfree-kmod-nvidia" in catalog.extensions_for("v1.5.0")
    assert "siderolabs/nvidia-gdrdrv-device" not in catalog.extensions_for("v1.11.6")
    assert "siderolabs/nvidia-gdrdrv-device" in catalog.extensions_for("v1.12.0")
    assert catalog.extension_releases("siderolabs/nvidia-gdrdrv-device")[0] == "v1.12.0"
    assert catalog.extension_releases("siderolabs/no-such") == ()


def test_overlays_start_at_1_7() -> None:
    assert catalog.overlays_for("v1.6.8") == frozenset()
    assert "rpi_generic" in catalog.overlays_for("v1.7.0")
    assert catalog.overlay_image("rpi_generic") == "siderolabs/sbc-raspberrypi"
    with pytest.raises(CatalogError, match="'rpi_9' is not an official overlay"):
        catalog.overlay_image("rpi_9")


def test_resolve_known_and_newer_patch() -> None:
    assert catalog.resolve_version("v1.13.9") == "v1.13.9"
    assert catalog.resolve_version("1.13.9") == "v1.13.9"
    assert catalog.resolve_version("v1.13.12") == "v1.13.9"
    assert catalog.resolve_version("v1.14.3") == "v1.14.0"
    assert catalog.extensions_for("v1.13.12") == catalog.extensions_for("v1.13.9")


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("v1.15.0", "closest known: v1.14.0, v1.13.9, v1.13.8"),
        # A major beyond the table is nearest to the newest releases, not to v1.2.x.
        ("v2.0.0", "closest known: v1.14.0, v1.13.9, v1.13.8"),
        ("v1.1.9", "closest known: v1.2.0, v1.2.1, v1.2.2"),
        ("v1.1.0", "not in the extension catalogue (v1.2.0 … v1.14.0)"),
        ("v1.13", "needs a patch number; closest known: v1.13.9"),
        ("v1.14.0-rc.1", "is a pre-release"),
        ("latest", "is not a release version like v1.13.9"),
    ],
)
def test_unknown_versions(version: str, message: str) -> None:
    with pytest.raises(CatalogError, match=re.escape(message)):
        catalog.extensions_for(version)


def test_check_accepts_offered_names() -> None:
    catalog.check_extensions(
        ["siderolabs/qemu-guest-agent", "siderolabs/nvidia-container-toolkit-lts"], "v1.13.9"
    )
    catalog.check_extensions([], "v1.13.9")


def test_check_names_one_unknown_with_suggestions() -> None:
    with pytest.raises(CatalogError) as caught:
        catalog.check_extensions(
            ["siderolabs/qemu-guest-agnt"],
            "v1.13.9",
            where='cluster.yaml: pool "gpu": extensions[2]',
        )
    assert str(caught.value) == (
        "cluster.yaml: pool \"gpu\": extensions[2]: extension 'siderolabs/qemu-guest-agnt' is "
        "not offered by Talos v1.13.9: did you mean siderolabs/qemu-guest-agent, "
        "siderolabs/xen-guest-agent, siderolabs/vmtoolsd-guest-agent?"
    )


def test_check_lists_every_unknown_name_once() -> None:
    names = [
        "siderolabs/nvidia-open-gpu-kernel-modules",
        "qemu-guest-agent",
        "siderolabs/qemu-guest-agent",
        "foo/bar",
        "foo/bar",
    ]
    with pytest.raises(CatalogError) as caught:
        catalog.check_extensions(names, "v1.13.12")
    lines = str(caught.value).splitlines()
    assert lines[0] == "3 extensions are not offered by Talos v1.13.12 (catalogue of v1.13.9):"
    assert lines[1].startswith(
        "  - 'siderolabs/nvidia-open-gpu-kernel-modules': offered by Talos v1.2.0 … v1.7.7; "
        "did you mean siderolabs/nvidia-open-gpu-kernel-modules-lts, "
    )
    assert lines[2] == "  - 'qemu-guest-agent': write it in full: siderolabs/qemu-guest-agent"
    assert lines[3] == "  - 'foo/bar': not an official extension of any known release"
    assert len(lines) == 4


def test_check_rejects_an_unknown_version() -> None:
    with pytest.raises(CatalogError, match=re.escape("'v1.99.0' is not in")):
        catalog.check_extensions(["siderolabs/zfs"], "v1.99.0")


def test_normalise_extension_name() -> None:
    assert catalog.normalise_extension_name("qemu-guest-agent") == "siderolabs/qemu-guest-agent"
    assert catalog.normalise_extension_name("siderolabs/zfs") == "siderolabs/zfs"
    assert catalog.normalise_extension_name("example/zfs") == "example/zfs"
    assert catalog.normalise_extension_name("not-an-extension") == "not-an-extension"
    # Matching is exact: the factory treats names case-sensitively.
    assert catalog.normalise_extension_name("ZFS") == "ZFS"


def test_unoffered_extensions_is_the_one_name_check() -> None:
    offered = extensions_for("v1.13.9")
    names = [
        "siderolabs/qemu-guest-agnet",
        "qemu-guest-agent",
        "siderolabs/nvidia-open-gpu-kernel-modules",
        "siderolabs/iscsi-tools",
        "siderolabs/qemu-guest-agnet",
    ]
    typo, bare, untiered = unoffered_extensions(names, offered)
    assert typo.name == "siderolabs/qemu-guest-agnet"  # once, though named twice
    assert typo.hint().startswith("did you mean siderolabs/qemu-guest-agent, ")
    assert bare.hint() == "write it in full: siderolabs/qemu-guest-agent"
    assert untiered.hint().startswith("offered by Talos v1.2.0 … v1.7.7; did you mean ")
    # A factory's own list: only what that list holds is suggested.
    assert untiered.hint(releases=False).startswith("did you mean ")
    assert unoffered_extensions(["foo/bar"], offered)[0].hint() == (
        "not an official extension of any known release"
    )
    assert unoffered_extensions(["foo/bar"], offered)[0].hint(releases=False) == ""
