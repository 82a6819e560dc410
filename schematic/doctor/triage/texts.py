"""The words of each diagnosis: lint's rule registry (schematic/data/lint-rules.yaml), where
the codes only triage reports (TS2xx) have their texts too, and the codes both report carry
``runtime`` (what a broken node shows) for `explain`."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["RuleText", "fix_places", "full_ids", "rule_text"]


@dataclass(frozen=True)
class RuleText:
    title: str
    severity: str
    fix: str
    confirm: str


def rule_text(code: str) -> RuleText:
    """Title, severity, fix and how to confirm, for a diagnosis under ``code``."""
    from schematic.doctor.rules import RULES

    rule = RULES[code]
    # lint suspects a cause from manifests (TS131 is a warning there); triage sees it happen,
    # so a cause diagnosed from runtime evidence is an error. TS2xx keep their own severity.
    severity = rule.severity if code.startswith("TS2") else "error"
    return RuleText(rule.title, severity, full_ids(rule.fix), rule.confirm)


_CUT_ID = re.compile(r"\b([0-9a-f]{8})…([0-9a-f]{4})\b")


def full_ids(text: str) -> str:
    """``text`` with each schematic ID the rule data shortens (``ce4c9805…7515``) written out in
    full from the well-known schematics: a person inside the failure pastes it as is."""
    from schematic.facts.well_known import well_known_entries

    known = [entry.id for entry in well_known_entries()]

    def expand(found: re.Match[str]) -> str:
        matches = [i for i in known if i.startswith(found[1]) and i.endswith(found[2])]
        return matches[0] if len(matches) == 1 else found.group()

    return _CUT_ID.sub(expand, text)


# Where each target keeps what a fix changes: the pool's schematic, its kernel modules, the
# control plane's ports, the GPU Operator's device-plugin settings.
_SCHEMATIC_WHERE = (
    (
        "Cozystack",
        "the values of KubernetesNodes `<cluster>-{pool}`: `osImage.factory.schematicID` "
        "(charts with per-pool osImage), root `schematicID` (charts with kernelModules) or "
        "`talos.schematicID` (v1.6.x); `talos-schematic generate` writes them",
    ),
    (
        "talhelper",
        "`schematic:` of the pool's node entries in talconfig.yaml (or `talosImageURL: "
        "factory.talos.dev/<platform>-installer/<ID>`), then `talhelper genconfig`",
    ),
    (
        "Talos",
        "`machine.install.image: factory.talos.dev/<platform>-installer/<ID>:<version>` in the "
        "machine config, then `talosctl upgrade --image` with the same image",
    ),
)
_MODULES_WHERE = (
    (
        "Cozystack",
        "`kernelModules` in the values of KubernetesNodes `<cluster>-{pool}` (charts with "
        "kernelModules; unset loads the NVIDIA set on a pool with an `nvidia.com/*` GPU)",
    ),
    ("talhelper", "`kernelModules:` of the pool's node entries in talconfig.yaml"),
    (
        "Talos",
        "`machine.kernel.modules` in the machine config (a KernelModuleConfig document from "
        "Talos 1.14)",
    ),
)
_WHERE: dict[str, tuple[tuple[str, str], ...]] = {
    "TS101": _SCHEMATIC_WHERE,
    "TS103": _SCHEMATIC_WHERE,
    "TS104": _SCHEMATIC_WHERE,
    "TS105": _SCHEMATIC_WHERE,
    "TS110": _SCHEMATIC_WHERE,
    "TS130": _SCHEMATIC_WHERE,
    "TS214": _SCHEMATIC_WHERE,
    "TS211": _SCHEMATIC_WHERE,
    "TS123": _MODULES_WHERE,
    "TS155": _MODULES_WHERE,
    "TS131": (
        (
            "Cozystack",
            "`spec.network.additionalServicePorts` of the tenant's KamajiControlPlane: "
            "`{name: talos-trustd, port: 50001, targetPort: 50001}`",
        ),
        ("Talos", "the Service or load balancer in front of the control plane: port 50001"),
    ),
    "TS140": (
        (
            "Cozystack",
            "`addons.gpuOperator.valuesOverride.devicePlugin.env` of the Kubernetes app: restate "
            "the whole list with DEVICE_LIST_STRATEGY=cdi-annotations (a list replaces, never "
            "merges)",
        ),
    ),
}


# Cozystack names a pool's machines after its KubernetesNodes object `<cluster>-<pool>`, with
# `kubernetes-` in front: a pool known from such names is the object's name with the prefix.
_COZYSTACK_MACHINE_PREFIX = "kubernetes-"


def fix_places(code: str, pool: str) -> tuple[str, ...]:
    """Per target, the key and object a fix under ``code`` changes (empty when no key does)."""
    places = []
    for target, where in _WHERE.get(code, ()):
        if pool.startswith(_COZYSTACK_MACHINE_PREFIX) and "`<cluster>-{pool}`" in where:
            # The object itself, not `<cluster>-kubernetes-<cluster>-<pool>`.
            where = where.replace("{pool}", pool).replace(
                f"<cluster>-{pool}", pool.removeprefix(_COZYSTACK_MACHINE_PREFIX)
            )
        places.append(f"{target}: {where.replace('{pool}', pool or '<pool>')}")
    return tuple(places)
