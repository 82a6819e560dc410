"""An upgrade report as text (terminal, CI log), JSON (tools) or Markdown (a pull-request comment).

All three say the same per pool: schematic ID before → after, extensions added / removed /
renamed, the NVIDIA driver before → after, kernel modules and machine-config changes, the keys
the generated output gains or loses (and why), whether Cozystack replaces the pool's machines
(and why), what the running nodes need, and for a pool that cannot follow the reason and the
fixes.
"""

from __future__ import annotations

import json
from typing import Any

from schematic.facts.nvidia import KernelModule
from schematic.plan.upgrade import DriverState, PoolChange, UpgradeReport

__all__ = ["upgrade_json", "upgrade_markdown", "upgrade_text"]

_STATUS_WORDS = {
    "unchanged": "no change",
    "changed": "changes",
    "breaking": "BREAKS",
    "added": "new pool",
    "removed": "removed",
}


def _id(schematic_id: str | None) -> str:
    # Whole: an ID is copied from here into a factory URL or a cluster file.
    return schematic_id or "—"


def _schematic(pool: PoolChange) -> str:
    if pool.status == "added":
        return f"(new) → {_id(pool.schematic_after)}"
    if pool.status == "removed":
        return f"{_id(pool.schematic_before)} → (removed)"
    if pool.schematic_after is None:
        return f"{_id(pool.schematic_before)} → (refused)"
    if pool.schematic_after == pool.schematic_before:
        return f"{_id(pool.schematic_before)} (unchanged)"
    return f"{_id(pool.schematic_before)} → {_id(pool.schematic_after)}"


def _extension_lines(pool: PoolChange) -> list[str]:
    lines = [f"+ {name}" for name in pool.added]
    lines += [f"- {name}" for name in pool.removed]
    lines += [f"{old} → {new}" for old, new in pool.renamed]
    lines += [f"+ kernel arg {arg}" for arg in pool.kernel_args_added]
    lines += [f"- kernel arg {arg}" for arg in pool.kernel_args_removed]
    return lines


def _driver(pool: PoolChange) -> str:
    before, after = pool.driver_before, pool.driver_after
    if before is None and after is None:
        return "no NVIDIA GPU"
    if pool.status == "breaking":
        return f"{before or 'none'} → (refused)"
    if before == after:
        return f"{before} (unchanged)"
    return f"{before or 'none'} → {after or 'none'}"


def _counts(report: UpgradeReport) -> str:
    counts = {status: 0 for status in _STATUS_WORDS}
    for pool in report.pools:
        counts[pool.status] += 1
    pools = len(report.pools)
    text = (
        f"{pools} pool{'s' * (pools != 1)}: {counts['changed']} changing, "
        f"{counts['unchanged']} unchanged, {counts['breaking']} breaking"
    )
    for status in ("added", "removed"):
        if counts[status]:
            text += f", {counts[status]} {status}"
    return text


def _listed(title: str, items: list[str], empty: str = "unchanged") -> list[str]:
    if not items:
        return [f"  {title}: {empty}"]
    return [f"  {title}:", *(f"    {item}" for item in items)]


def _machine_config(pool: PoolChange) -> list[str]:
    """What the pool's machine config says, for a pool on one side only; else its changes."""
    if pool.status == "added":
        return [f"new: kernel modules {_modules_text(pool.modules_after)}"]
    if pool.status == "removed":
        return ["removed with the pool"]
    return list(pool.machine_config)


def _modules_text(modules: tuple[KernelModule, ...]) -> str:
    return ", ".join(module.name for module in modules) or "none"


def _machines(pool: PoolChange) -> str | None:
    """Whether Cozystack replaces the pool's machines, and why (None: not a question here)."""
    if pool.replaced:
        return "replaced: " + "; ".join(pool.replaced)
    if pool.status == "added":
        return "new: created booting the new image"
    if pool.status == "removed":
        return "deleted with the pool"
    return None


def upgrade_text(report: UpgradeReport) -> str:
    """The report for a terminal or a CI log."""
    lines = [
        f"{report.cluster}: Talos {report.talos_before} → {report.talos_after}: {_counts(report)}"
    ]
    lines += [f"note: {note}" for note in report.notes]
    for pool in report.pools:
        lines.append(f"pool {pool.name}: {_STATUS_WORDS[pool.status]}")
        lines.append(f"  schematic: {_schematic(pool)}")
        lines.append(f"  driver: {_driver(pool)}")
        lines += [f"    why: {note}" for note in pool.driver_notes]
        if pool.refusal is not None:
            lines.append(f"  refused: {pool.refusal.reason}")
            lines.append("  fix (any one):")
            lines += [f"    - {fix}" for fix in pool.refusal.fixes]
            continue
        lines += _listed("extensions", _extension_lines(pool))
        lines += _listed("machine config", _machine_config(pool))
        lines += _listed("output", list(pool.output), "no new key")
        machines = _machines(pool)
        if machines:
            lines.append(f"  machines: {machines}")
        if not pool.actions:
            lines.append("  nodes: nothing to do")
            continue
        lines.append("  nodes:")
        for action in pool.actions:
            lines.append(f"    - {action.text}")
            if action.command:
                lines.append(f"      {action.command}")
    return "\n".join(lines) + "\n"


def _driver_json(driver: DriverState | None) -> dict[str, Any] | None:
    if driver is None:
        return None
    return {
        "flavour": driver.flavour,
        "tier": driver.tier,
        "driver": driver.driver,
        "containerToolkit": driver.container_toolkit,
    }


def _modules_json(modules: tuple[KernelModule, ...]) -> list[dict[str, Any]]:
    return [{"name": module.name, "parameters": list(module.parameters)} for module in modules]


def _pool_json(pool: PoolChange) -> dict[str, Any]:
    document: dict[str, Any] = {
        "name": pool.name,
        "status": pool.status,
        "schematicID": {"before": pool.schematic_before, "after": pool.schematic_after},
        "extensions": {
            "added": list(pool.added),
            "removed": list(pool.removed),
            "renamed": [{"from": old, "to": new} for old, new in pool.renamed],
        },
        "kernelArgs": {
            "added": list(pool.kernel_args_added),
            "removed": list(pool.kernel_args_removed),
        },
        "driver": {
            "before": _driver_json(pool.driver_before),
            "after": _driver_json(pool.driver_after),
            "why": list(pool.driver_notes),
        },
        "kernelModules": {
            "before": _modules_json(pool.modules_before),
            "after": _modules_json(pool.modules_after) if pool.refusal is None else None,
        },
        "machineConfig": list(pool.machine_config),
        "installer": {"before": pool.installer_before, "after": pool.installer_after},
        "output": list(pool.output),
        "machinesReplaced": {"replaced": bool(pool.replaced), "why": list(pool.replaced)},
        "nodes": [
            {"action": action.kind, "what": action.text, "command": action.command or None}
            for action in pool.actions
        ],
        "refused": None,
    }
    if pool.refusal is not None:
        document["refused"] = {"reason": pool.refusal.reason, "fixes": list(pool.refusal.fixes)}
    return document


def upgrade_json(report: UpgradeReport) -> str:
    """The report as stable JSON text ending in a newline: the report's keys indented, each
    pool on one line (a cluster may have thousands; json's indenting encoder is the slow one)."""
    head = {
        "cluster": report.cluster,
        "source": report.source,
        "talos": {"before": report.talos_before, "after": report.talos_after},
        "breaking": report.breaking,
        "notes": list(report.notes),
    }
    text = json.dumps(head, indent=2, ensure_ascii=False)
    pools = ",\n".join(
        "    " + json.dumps(_pool_json(pool), ensure_ascii=False) for pool in report.pools
    )
    body = f"[\n{pools}\n  ]" if pools else "[]"
    return f'{text.removesuffix("}").rstrip()},\n  "pools": {body}\n}}\n'


def _cell(parts: list[str]) -> str:
    """One table cell: pipes escaped, lines joined by <br> (a row is one line)."""
    text = "<br>".join(part.replace("|", "\\|").replace("\n", " ") for part in parts if part)
    return text or "—"


def _code(text: str) -> str:
    return f"`{text}`"


def upgrade_markdown(report: UpgradeReport) -> str:
    """The report as a pull-request comment: a heading, one table row per pool, then the
    reason and fixes of every pool that breaks."""
    lines = [
        f"### Talos {report.talos_before} → {report.talos_after} for `{report.cluster}`",
        "",
        _counts(report) + ".",
        "",
    ]
    lines += [f"> **Note:** {note}" for note in report.notes]
    if report.notes:
        lines.append("")
    lines += [
        "| pool | status | schematic | extensions | driver | machine config | output | nodes |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for pool in report.pools:
        status = _STATUS_WORDS[pool.status]
        if pool.status == "breaking":
            status = f"**{status}**"
        extensions = _extension_lines(pool) or ["unchanged"]
        config = _machine_config(pool) or ["unchanged"]
        output = list(pool.output) or ["no new key"]
        machines = _machines(pool)
        nodes = [
            *([f"machines {machines}"] if machines else []),
            *(_code(action.command) if action.command else action.text for action in pool.actions),
        ] or ["nothing to do"]
        if pool.refusal is not None:
            extensions = config = output = ["—"]
            nodes = ["see below"]
        row = [
            _cell([_code(pool.name)]),
            _cell([status]),
            _cell([_schematic(pool)]),
            _cell(extensions),
            _cell([_driver(pool), *pool.driver_notes]),
            _cell(config),
            _cell(output),
            _cell(nodes),
        ]
        lines.append("| " + " | ".join(row) + " |")
    for pool in report.pools:
        if pool.refusal is None:
            continue
        lines += ["", f"#### `{pool.name}` would break", "", pool.refusal.reason, ""]
        lines.append("Fix (any one):")
        lines += [f"- {fix}" for fix in pool.refusal.fixes]
    return "\n".join(lines) + "\n"
