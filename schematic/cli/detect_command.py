"""`talos-schematic detect`: hardware dumps → hardware profiles, or a check against one."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, Any

import typer

from schematic.cli.base import JsonAliasOption, MaxInputSizeOption, app, fail, json_alias
from schematic.errors import DetectError, TalosSchematicError, printable


class ProfileFormat(StrEnum):
    yaml = "yaml"
    json = "json"


def _read(path: str) -> tuple[str, str]:
    from schematic.safe_yaml import InputKind, read_bytes

    # The name as messages show it: on one line, whatever it holds.
    shown = "<stdin>" if path == "-" else printable(path, one_line=True)
    try:
        # Dumps may carry stray bytes in device names: they are replaced, not refused.
        return read_bytes(path, kind=InputKind.HARDWARE).decode("utf-8", errors="replace"), shown
    except OSError as err:
        raise DetectError(f"{shown}: cannot read: {err.strerror or err}") from None


def _declared(profile: str) -> dict[str, Any]:
    """The profile's fields under their YAML (camelCase) keys."""
    from schematic.inputs.profiles import load_profile

    return load_profile(profile).as_document()


@app.command()
def detect(
    file: Annotated[
        str,
        typer.Argument(
            metavar="[FILE|-]",
            help="`lspci -nn`, `lspci -nnmm` or `talosctl get pcidevices -o yaml|json` "
            "output; several nodes may be concatenated. `-` (default) reads stdin.",
        ),
    ] = "-",
    against: Annotated[
        str | None,
        typer.Option(
            "--against",
            metavar="PROFILE",
            help="Compare the node with this profile (shipped name or path); exit 3 on a "
            "difference.",
        ),
    ] = None,
    output_format: Annotated[
        ProfileFormat,
        typer.Option(
            "--format", "-f", help="Print the profiles as YAML documents or as a JSON list."
        ),
    ] = ProfileFormat.yaml,
    as_json: JsonAliasOption = False,
    max_input_size: MaxInputSizeOption = None,
) -> None:
    """Print a hardware profile per distinct machine in a hardware dump.

    GPUs are NVIDIA display functions (class 0300/0302) with counts; NVSwitches, CPU vendor,
    and the platform (kubevirt for QEMU/KVM guests, vmware, else metal) come from the other
    devices. Nodes with identical hardware share one profile.

    Example: talosctl get pcidevices -o yaml | talos-schematic detect - > node.profile.yaml
    """
    as_json = json_alias(output_format, as_json, ProfileFormat.yaml) == ProfileFormat.json
    from schematic.doctor.detect import compare_profile, detect, dump_profiles

    try:
        text, source = _read(file)
        profiles = detect(text, source)
        if against is None:
            sys.stdout.write(dump_profiles(profiles, as_json=as_json))
            return
        if len(profiles) != 1:
            names = ", ".join(p["name"] for p in profiles)
            raise DetectError(
                f"{source}: --against checks one machine; the input holds {len(profiles)} "
                f"with different hardware ({names})"
            )
        declared = _declared(against)
    except TalosSchematicError as err:
        raise fail(err) from None

    detected = profiles[0]
    differences = compare_profile(detected, declared)
    label = declared.get("name") or against
    if differences:
        print(f"{source}: node differs from profile {label}:", file=sys.stderr)
        for difference in differences:
            print(f"  {difference}", file=sys.stderr)
        raise typer.Exit(3)
    if declared.get("cpuVendor") and "cpuVendor" not in detected:
        print(
            f"{source}: cpuVendor not checked: the dump does not show the CPU vendor",
            file=sys.stderr,
        )
    print(f"{source}: node matches profile {label}", file=sys.stderr)
