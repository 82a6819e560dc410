"""The lock file and the check of extension names against the factory's list."""

from __future__ import annotations

import pytest

from schematic.errors import CatalogError
from schematic.factory import lock as extension_lock
from schematic.factory import names as extension_names
from schematic.factory.client import ExtensionInfo, OverlayInfo
from schematic.factory.lock import build_lock
from schematic.factory.names import check_extension_names

URL = "https://factory.example.test"
NVIDIA_OPEN = {
    "name": "siderolabs/nvidia-open-gpu-kernel-modules-production",
    "ref": "ghcr.io/siderolabs/nvidia-open-gpu-kernel-modules-production:595.91.07-v1.13.9",
    "digest": "sha256:" + "a" * 64,
    "author": "Sidero Labs",
    "description": "NVIDIA open GPU kernel modules",
}
QEMU_EXT = {
    "name": "siderolabs/qemu-guest-agent",
    "ref": "ghcr.io/siderolabs/qemu-guest-agent:10.0.2",
    "digest": "sha256:" + "b" * 64,
    "author": "Sidero Labs",
    "description": "QEMU guest agent",
    "newField": "ignored",
}


def test_public_api_is_pinned() -> None:
    assert extension_lock.__all__ == ["build_lock"]
    assert extension_names.__all__ == ["check_extension_names", "check_overlay"]


def test_build_lock_is_deterministic_and_pins_refs() -> None:
    infos = [ExtensionInfo(**QEMU_EXT), ExtensionInfo(**NVIDIA_OPEN)]
    used = ["siderolabs/qemu-guest-agent", NVIDIA_OPEN["name"], "siderolabs/qemu-guest-agent"]
    lock = build_lock(infos, used, factory="https://u:p@factory.talos.dev/", talos="v1.13.9")
    assert lock == (
        "# Extension images the generated schematics resolve to; written by talos-schematic.\n"
        "imageFactoryURL: https://factory.talos.dev\n"
        "talosVersion: v1.13.9\n"
        "extensions:\n"
        "- name: siderolabs/nvidia-open-gpu-kernel-modules-production\n"
        "  ref: ghcr.io/siderolabs/nvidia-open-gpu-kernel-modules-production:595.91.07-v1.13.9\n"
        f"  digest: sha256:{'a' * 64}\n"
        "- name: siderolabs/qemu-guest-agent\n"
        "  ref: ghcr.io/siderolabs/qemu-guest-agent:10.0.2\n"
        f"  digest: sha256:{'b' * 64}\n"
    )
    assert (
        build_lock(
            list(reversed(infos)),
            reversed(used),
            factory="https://factory.talos.dev",
            talos="v1.13.9",
        )
        == lock
    )


def test_unknown_extension_names_are_catalog_errors() -> None:
    infos = [ExtensionInfo(**QEMU_EXT), ExtensionInfo(**NVIDIA_OPEN)]
    with pytest.raises(CatalogError) as caught:
        check_extension_names(infos, ["siderolabs/qemu-guest-agnet"], talos="v1.13.9", factory=URL)
    assert str(caught.value) == (
        f"{URL}: Talos v1.13.9 offers no extension siderolabs/qemu-guest-agnet "
        "(did you mean siderolabs/qemu-guest-agent?)"
    )
    with pytest.raises(CatalogError, match=r"offers no extension siderolabs/zfs$"):
        build_lock(infos, ["siderolabs/zfs"], factory=URL, talos="v1.13.9")


def test_build_lock_pins_the_overlays_used_in_name_order() -> None:
    rpi = OverlayInfo(
        name="rpi_generic",
        image="siderolabs/sbc-raspberrypi",
        ref="ghcr.io/siderolabs/sbc-raspberrypi:v0.1.8",
        digest="sha256:" + "c" * 64,
    )
    rock = OverlayInfo(
        name="rock5b",
        image="siderolabs/sbc-rockchip",
        ref="ghcr.io/siderolabs/sbc-rockchip:v0.1.9",
        digest="sha256:" + "d" * 64,
    )
    infos = [ExtensionInfo(**QEMU_EXT)]
    lock = build_lock(infos, [QEMU_EXT["name"]], talos="v1.13.9", overlays=[rock, rpi, rock])
    assert lock.startswith("# Extension and overlay images the generated schematics resolve to")
    assert lock.endswith(
        "overlays:\n"
        "- name: rock5b\n"
        "  image: siderolabs/sbc-rockchip\n"
        "  ref: ghcr.io/siderolabs/sbc-rockchip:v0.1.9\n"
        f"  digest: sha256:{'d' * 64}\n"
        "- name: rpi_generic\n"
        "  image: siderolabs/sbc-raspberrypi\n"
        "  ref: ghcr.io/siderolabs/sbc-raspberrypi:v0.1.8\n"
        f"  digest: sha256:{'c' * 64}\n"
    )
    assert build_lock(infos, [QEMU_EXT["name"]], talos="v1.13.9", overlays=[rpi, rock]) == lock
    assert "overlays" not in build_lock(infos, [QEMU_EXT["name"]], talos="v1.13.9")
