"""Against the public Image Factory; run with TALOS_SCHEMATIC_ONLINE=1 pytest -m online."""

from __future__ import annotations

import os
import re

import pytest

from schematic.core.model import Schematic
from schematic.factory.client import FactoryClient, register_schematics, verify_ids

pytestmark = [
    pytest.mark.online,
    pytest.mark.skipif(
        os.environ.get("TALOS_SCHEMATIC_ONLINE") != "1",
        reason="talks to https://factory.talos.dev; set TALOS_SCHEMATIC_ONLINE=1",
    ),
]

# Cozystack's default worker schematic: long registered, so POSTing it changes nothing.
QEMU_BODY = (
    "customization:\n  systemExtensions:\n    officialExtensions:\n"
    "      - siderolabs/qemu-guest-agent\n"
)
QEMU_ID = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"


def test_public_factory_agrees_with_the_offline_id() -> None:
    schematic = Schematic.from_yaml(QEMU_BODY)
    with FactoryClient("https://factory.talos.dev", environ={}) as client:
        registrations = register_schematics(client, [("qemu", schematic)])
        assert registrations["qemu"].id == QEMU_ID
        assert registrations["qemu"].notice == ""
        (result,) = verify_ids(client, [("qemu", QEMU_ID, schematic)])
        assert result.status == "present"
        assert "v1.10.0" in client.versions()
        by_name = {info.name: info for info in client.official_extensions("v1.10.0")}
    assert "siderolabs/qemu-guest-agent" in by_name
    nvidia = by_name["siderolabs/nvidia-open-gpu-kernel-modules-production"]
    # The tag carries the driver version, so a lock file shows a driver change.
    assert re.fullmatch(r".+:\d+\.\d+\.\d+-v1\.10\.0", nvidia.ref)
    assert nvidia.digest.startswith("sha256:")
