"""`talos-schematic gpu`: which NVIDIA extensions, modules and settings these GPUs need."""

from __future__ import annotations

import dataclasses
import json
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from schematic.cli.base import JsonAliasOption, TextFormat, TextFormatOption, app, fail, json_alias
from schematic.cli.options import AssumeDriversOption, FactsOption, deciding_by_facts
from schematic.cli.telling import say
from schematic.errors import TalosSchematicError

if TYPE_CHECKING:
    from schematic.facts.nvidia import GpuRequest, NvidiaDecision


class Arch(StrEnum):
    amd64 = "amd64"
    arm64 = "arm64"


class FlavourChoice(StrEnum):
    auto = "auto"
    open = "open"
    proprietary = "proprietary"


class TierChoice(StrEnum):
    auto = "auto"
    lts = "lts"
    production = "production"


def _requests(devices: list[str]) -> list[GpuRequest]:
    """Arguments as requests: an ID, a name, or ``ID=ARCHITECTURE`` for an unlisted ID."""
    from schematic.facts.nvidia import (
        GpuRequest,
        describe_pci_function,
        lookup_gpu,
        normalise_pci_id,
    )

    requests = []
    for device in devices:
        text, _, architecture = device.partition("=")
        pci_id = normalise_pci_id(text)
        if architecture or (pci_id is not None and describe_pci_function(pci_id) is not None):
            requests.append(GpuRequest(id=pci_id or text, architecture=architecture or None))
        else:
            requests.append(GpuRequest(id=lookup_gpu(text).id))
    return requests


def _schematic(
    extensions: tuple[str, ...], kernel_args: tuple[str, ...], *, metal: bool
) -> tuple[str, str]:
    """The canonical schematic of a node with these NVIDIA extensions, and its ID: the
    platform's baseline added and the names sorted, as generate writes a pool's."""
    from schematic.core.model import Schematic
    from schematic.plan.cluster import baseline_extensions

    names = sorted({*baseline_extensions("metal" if metal else "kubevirt"), *extensions})
    schematic = Schematic.from_extensions(names, kernel_args)
    return schematic.canonical(), schematic.id


def _no_gpu_json(notes: tuple[str, ...]) -> dict[str, Any]:
    return {
        "gpus": [],
        "flavour": None,
        "tier": None,
        "driver": None,
        "extensions": [],
        "kernelModules": [],
        "sysctls": {},
        "kernelArgs": [],
        "reasons": [*notes, "no NVIDIA GPU: no NVIDIA extensions (they would break the boot)"],
        "notes": [],
    }


def _human(decision: NvidiaDecision, counts: dict[str, int], *, metal: bool) -> str:
    # First, as it changes the answer (passthrough, the guest agent, fabric manager) and was
    # otherwise visible only in the kernel arguments.
    platform = (
        "bare metal (--metal)"
        if metal
        else "KubeVirt VM, GPUs passed through (assumed; --metal for bare metal)"
    )
    lines = [f"platform: {platform}"]
    lines += [
        f"{counts.get(gpu.id, 1)}x {gpu.id}  {gpu.name}  ({gpu.chip or '?'}, {gpu.architecture})"
        for gpu in decision.gpus
    ]
    tier = f"tier {decision.tier}" if decision.tier else "no tier (unsuffixed)"
    lines.append(
        f"Talos {decision.talos}: {decision.flavour} kernel modules, {tier}, "
        f"driver {decision.driver}"
    )
    lines.append("extensions:")
    lines += [f"  {name}" for name in decision.extensions]
    modules = ", ".join(
        m.name + (f" ({' '.join(m.parameters)})" if m.parameters else "")
        for m in decision.kernel_modules
    )
    lines.append(f"kernel modules: {modules}")
    if decision.sysctls:
        lines.append("sysctls: " + ", ".join(f"{k}={v}" for k, v in decision.sysctls.items()))
    if decision.kernel_args:
        lines.append("kernel args: " + " ".join(decision.kernel_args))
    lines.append("why:")
    lines += [f"  - {reason}" for reason in decision.reasons]
    lines += [f"note: {note}" for note in decision.notes]
    lines += [f"does not work: {defect}" for defect in decision.defects]
    return "\n".join(lines)


@app.command()
def gpu(
    devices: Annotated[
        list[str],
        typer.Argument(
            metavar="ID_OR_NAME...",
            help="PCI IDs (10de:2bb5, 0x2bb5, 2BB5), names (L40S) or quoted lines copied from "
            "lspci -nn or nvidia-smi -L; repeat an ID per GPU. "
            "ID=ARCHITECTURE declares a device the table lacks. HD-Audio, USB and NVSwitch "
            "functions are not counted; an NVSwitch with --metal adds the fabric manager "
            "(and ib_umad on NVLink-5 Blackwell HGX; 8 B200/B300 with --metal imply it).",
        ),
    ],
    talos: Annotated[
        str, typer.Option("--talos", metavar="vX.Y.Z", help="Talos version, e.g. v1.13.9.")
    ],
    arch: Annotated[
        Arch | None,
        typer.Option(help="CPU architecture [default: arm64 for GB10 / Grace, else amd64]."),
    ] = None,
    metal: Annotated[
        bool, typer.Option("--metal", help="Bare metal, not a KubeVirt VM with passthrough GPUs.")
    ] = False,
    nvswitch: Annotated[
        bool, typer.Option("--nvswitch", help="The bare-metal node has NVSwitches (HGX / DGX).")
    ] = False,
    flavour: Annotated[
        FlavourChoice, typer.Option("--flavour", "--flavor", help="Kernel-module flavour.")
    ] = FlavourChoice.auto,
    tier: Annotated[TierChoice, typer.Option(help="Driver tier.")] = TierChoice.auto,
    gdrdrv: Annotated[
        bool, typer.Option("--gdrdrv", help="Add GPUDirect RDMA (nvidia-gdrdrv-device).")
    ] = False,
    gds: Annotated[
        bool,
        typer.Option(
            "--gds",
            help="Add GPUDirect Storage: load module nvidia_fs, which the NVIDIA kernel-module "
            "extensions carry from Talos 1.14 (no separate extension).",
        ),
    ] = False,
    peermem: Annotated[
        bool,
        typer.Option(
            "--peermem", help="Load nvidia_peermem (RDMA NICs to GPU memory; open modules)."
        ),
    ] = False,
    with_schematic: Annotated[
        bool,
        typer.Option(
            "--schematic",
            help="Print the node's schematic (the NVIDIA extensions, plus the KubeVirt guest "
            "agent unless --metal) headed by its ID, ready for `talos-schematic register`; "
            'with --format json, the decision gains "schematic" and "schematicID".',
        ),
    ] = False,
    facts: FactsOption = None,
    assume_drivers_of: AssumeDriversOption = None,
    output_format: TextFormatOption = TextFormat.text,
    as_json: JsonAliasOption = False,
) -> None:
    """Choose the NVIDIA kernel-module flavour, tier and extensions for a node's GPUs.

    Examples: talos-schematic gpu 10de:2bb5 --talos v1.13.9 --format json

    talos-schematic gpu L40S --talos v1.13.9 --schematic > l40s.schematic.yaml
    """
    json_output = json_alias(output_format, as_json, TextFormat.text) == TextFormat.json
    from schematic.facts.nvidia import decide, resolve_gpus, usual_architecture
    from schematic.facts.release_facts import drivers_of

    try:
        with deciding_by_facts(facts, assume_drivers_of) as facts_used:
            requests = _requests(devices)
            resolved = resolve_gpus(requests)
            gpus = [found for found, _ in resolved.gpus]
            drivers = drivers_of(talos) if gpus else None
    except TalosSchematicError as err:
        raise fail(err) from None
    try:
        if not resolved.gpus:
            document = _no_gpu_json(resolved.notes)
            if with_schematic:
                body, schematic_id = _schematic((), (), metal=metal)
                if not json_output:
                    typer.echo(f"# schematic {schematic_id}\n{body}", nl=False)
                    return
                document |= {"schematicID": schematic_id, "schematic": body}
            if json_output:
                typer.echo(json.dumps(document, indent=2))
            else:
                typer.echo("\n".join(document["reasons"]))
            return
        chosen_arch = arch.value if arch else usual_architecture(gpus)
        decision = decide(
            requests,
            talos,
            arch=chosen_arch,
            passthrough=not metal,
            nvswitch=nvswitch or resolved.has_nvswitch,
            flavour=flavour.value,
            tier=tier.value,
            gdrdrv=gdrdrv,
            gds=gds,
            peermem=peermem,
            drivers=drivers,
        )
    except TalosSchematicError as err:
        raise fail(err) from None
    assert decision is not None  # resolve_gpus found GPUs, so decide did too
    if arch is None and chosen_arch == "arm64":
        decision = dataclasses.replace(
            decision,
            reasons=(
                "architecture arm64: these GPUs come in arm64 systems",
                *decision.reasons,
            ),
        )
    document = decision.to_json() | {"facts": facts_used}
    if with_schematic:
        body, schematic_id = _schematic(decision.extensions, decision.kernel_args, metal=metal)
        if not json_output:
            typer.echo(f"# schematic {schematic_id}\n{body}", nl=False)
            return
        document |= {"schematicID": schematic_id, "schematic": body}
    if json_output:
        typer.echo(json.dumps(document, indent=2))
    else:
        counts = {found.id: count for found, count in resolved.gpus}
        # A report, on stdout: wrapped like the messages on a terminal, as it is to a pipe.
        say(*_human(decision, counts, metal=metal).splitlines(), facts_used, stream=sys.stdout)
