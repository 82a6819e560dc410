"""`talos-schematic urls`: boot-media and installer URLs of any schematic ID, no cluster file."""

from __future__ import annotations

import json
import re
import sys
from enum import StrEnum
from typing import Annotated, get_args

import typer

from schematic.cli.base import JsonAliasOption, TextFormat, TextFormatOption, app, fail, json_alias
from schematic.errors import TalosSchematicError
from schematic.inputs.factory_url import split_factory_url
from schematic.inputs.profile_values import Platform

_SCHEMATIC_ID = re.compile(r"[0-9a-f]{64}")
# The platforms a profile may name; `kubevirt` boots the factory's openstack image.
PLATFORMS: tuple[str, ...] = get_args(Platform)


class Arch(StrEnum):
    amd64 = "amd64"
    arm64 = "arm64"


@app.command(short_help="Print the boot-media and installer URLs of any schematic ID.")
def urls(
    schematic_id: Annotated[
        str,
        typer.Argument(
            metavar="SCHEMATIC_ID",
            help="A schematic ID (64 hex digits), e.g. from `talos-schematic id` or the factory.",
        ),
    ],
    talos: Annotated[
        str, typer.Option("--talos", metavar="vX.Y.Z", help="Talos version, e.g. v1.13.9.")
    ],
    platform: Annotated[
        str,
        typer.Option(
            "--platform",
            metavar="PLATFORM",
            help="The platform the node boots as: metal, kubevirt (the openstack image), "
            "nocloud, proxmox, vmware, aws, ... (a profile's platforms).",
        ),
    ] = "metal",
    arch: Annotated[Arch, typer.Option("--arch", help="CPU architecture.")] = Arch.amd64,
    secureboot: Annotated[
        bool, typer.Option("--secureboot", help="The SecureBoot media and installer.")
    ] = False,
    board: Annotated[
        bool,
        typer.Option(
            "--board",
            help="The schematic carries a board overlay (a Raspberry Pi, a Rock 5B): its disk "
            "image is metal-arm64.raw.xz.",
        ),
    ] = False,
    factory: Annotated[
        str,
        typer.Option(
            "--factory",
            metavar="URL",
            help="The Image Factory the URLs point at.",
        ),
    ] = "https://factory.talos.dev",
    installer_repository: Annotated[
        str | None,
        typer.Option(
            "--installer-repository",
            metavar="REPOSITORY",
            help="Installer repository (default: the release's for the platform: "
            "factory.talos.dev/installer up to Talos 1.13, <platform>-installer from 1.14).",
            show_default=False,
        ),
    ] = None,
    output_format: TextFormatOption = TextFormat.text,
    as_json: JsonAliasOption = False,
) -> None:
    """Print the disk image, ISO, PXE and installer references of a schematic ID for a Talos
    release and platform, as generate's urls.yaml carries them; offline, no cluster file.

    The factory builds them only for an ID it has received (talos-schematic register FILE).

    Example: talos-schematic urls $(talos-schematic id gpu.yaml) --talos v1.13.9 --platform nocloud
    """
    from schematic.facts.talos import TalosVersion
    from schematic.output.render import yamltext
    from schematic.output.render.urls import media_urls
    from schematic.plan.references import schematic_media

    if platform not in PLATFORMS:
        raise typer.BadParameter(
            f"{platform!r} is not one of {', '.join(PLATFORMS)}", param_hint="--platform"
        )
    wanted = schematic_id.strip().lower()
    if not _SCHEMATIC_ID.fullmatch(wanted):
        raise typer.BadParameter(
            f"{schematic_id!r} is not a schematic ID (64 hex digits)", param_hint="SCHEMATIC_ID"
        )
    if board and (platform != "metal" or arch != Arch.arm64):
        raise typer.BadParameter(
            "board images are metal-arm64: add --platform metal --arch arm64", param_hint="--board"
        )
    try:
        version = TalosVersion.parse(talos)
        media = schematic_media(
            wanted,
            version,
            platform,
            arch.value,
            secureboot=secureboot,
            board=board,
            # Printed: without user:password@; a query or fragment (a token?) is refused.
            image_factory_url=split_factory_url(factory)[0],
            installer_repository=installer_repository,
        )
        document = {"schematicID": wanted, "talos": str(version)} | media_urls(media)
    except TalosSchematicError as err:
        raise fail(err) from None
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    if json_alias(output_format, as_json, TextFormat.text) == TextFormat.json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        sys.stdout.write(yamltext.dump(document))
