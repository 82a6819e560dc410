"""The pools a new cluster file starts with: each ``--pool NAME=PROFILE``, and one per distinct
machine of a hardware dump, its hardware written inline as ``detect`` reads it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from schematic.errors import UsageError

__all__ = ["pool_entries"]

# The keys of a detected profile a pool's inline `hardware:` carries (its name and description
# become the pool's name and comment).
_HARDWARE_KEYS = ("platform", "architecture", "cpuVendor", "gpus", "nvswitch", "extensions")
# A Cozystack tenant (KubeVirt) pool's autoscaling range, written to start from; other pools'
# nodes join by their machine config and boot media, where these keys mean nothing.
_TENANT_REPLICAS = {"minReplicas": 0, "maxReplicas": 2}


def pool_entries(pools: Sequence[str], dump: Path | None) -> list[tuple[str, dict[str, Any]]]:
    """(comment, pool) for each --pool NAME=PROFILE and each machine of the dump."""
    from schematic.inputs.profiles import load_profile

    entries: list[tuple[str, dict[str, Any]]] = []
    for given in pools:
        name, sep, profile = given.partition("=")
        if not sep or not name or not profile:
            raise UsageError(f"{given!r} is not NAME=PROFILE", "--pool")
        found = load_profile(profile)
        pool = {"name": name, "profile": profile} | _replicas(found.platform)
        entries.append((found.description or found.name, pool))
    if dump is not None:
        from schematic.doctor.detect import detect
        from schematic.errors import DetectError
        from schematic.safe_yaml import InputKind, read_bytes

        try:
            data = read_bytes(str(dump), kind=InputKind.HARDWARE)
            text = data.decode("utf-8", errors="replace")
        except OSError as err:
            raise DetectError(f"{dump}: cannot read: {err.strerror or err}") from None
        for index, detected in enumerate(detect(text, str(dump)), 1):
            hardware = {
                key: detected[key]
                for key in _HARDWARE_KEYS
                if key in detected and detected[key] not in ([], False)
            }
            name = "gpu" if hardware.get("gpus") else "workers"
            entries.append(
                (
                    detected.get("description", ""),
                    {"name": f"{name}-{index}", "hardware": hardware}
                    | _replicas(hardware.get("platform")),
                )
            )
    if not entries:
        entries.append(
            (
                "No GPU: Cozystack's default extension set, no NVIDIA extension, no kernel "
                "modules. A GPU pool names a profile with GPUs (talos-schematic profiles), e.g.\n"
                "  - name: gpu\n    profile: rtx-pro-6000-blackwell-server",
                {"name": "workers", "profile": "kubevirt-cpu"} | _TENANT_REPLICAS,
            )
        )
    names = [pool["name"] for _, pool in entries]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise UsageError(f"pool names repeat: {', '.join(duplicates)}", "--pool")
    return entries


def _replicas(platform: object) -> dict[str, int]:
    return dict(_TENANT_REPLICAS) if platform == "kubevirt" else {}
