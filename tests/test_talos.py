"""Talos versions and the NVIDIA driver table."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from schematic.errors import CatalogError, GpuRefusal, NvidiaError
from schematic.facts.talos import TalosVersion, driver_key, driver_row, driver_table

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.mark.parametrize(
    ("text", "parts", "printed"),
    [
        ("v1.13.9", (1, 13, 9), "v1.13.9"),
        ("1.13.9", (1, 13, 9), "v1.13.9"),
        (" v1.2.0 ", (1, 2, 0), "v1.2.0"),
        ("v1.14.0-rc.1", (1, 14, 0), "v1.14.0-rc.1"),
        ("v1.14.0-alpha.2", (1, 14, 0), "v1.14.0-alpha.2"),
    ],
)
def test_parse_accepts_with_or_without_v(
    text: str, parts: tuple[int, int, int], printed: str
) -> None:
    version = TalosVersion.parse(text)
    assert (version.major, version.minor, version.patch) == parts
    assert str(version) == printed


@pytest.mark.parametrize(
    "junk",
    ["", "latest", "v1.13", "1", "v1.13.9.1", "v1.13.x", "vv1.13.9", "v01.13.9", "v1.13.9-foo"],
)
def test_parse_refuses_junk(junk: str) -> None:
    with pytest.raises(CatalogError, match="not a Talos version"):
        TalosVersion.parse(junk)


def test_versions_order_numerically_with_prereleases_first() -> None:
    texts = [
        "v1.10.0",
        "v1.9.6",
        "v1.14.0",
        "v1.14.0-rc.1",
        "v1.14.0-alpha.3",
        "v1.14.0-beta.1",
        "v1.2.10",
        "v1.2.9",
    ]
    ordered = [str(v) for v in sorted(TalosVersion.parse(t) for t in texts)]
    assert ordered == [
        "v1.2.9",
        "v1.2.10",
        "v1.9.6",
        "v1.10.0",
        "v1.14.0-alpha.3",
        "v1.14.0-beta.1",
        "v1.14.0-rc.1",
        "v1.14.0",
    ]
    assert TalosVersion.parse("1.13.9") == TalosVersion.parse("v1.13.9")


def test_table_is_contiguous_within_each_minor() -> None:
    rows = driver_table()
    assert str(rows[0].first) == "v1.2.0" and str(rows[-1].last) == "v1.14.0"
    for earlier, later in itertools.pairwise(rows):
        assert earlier.last < later.first
        if earlier.last.minor_line == later.first.minor_line:
            assert later.first.patch == earlier.last.patch + 1


@pytest.mark.parametrize(
    ("version", "lts", "production", "toolkit", "naming"),
    [
        ("v1.2.0", "515.65.01", None, "v1.10.0", "unsuffixed"),
        ("v1.7.7", "535.129.03", None, "v1.14.6", "unsuffixed"),
        ("v1.8.0", "535.183.06", "550.90.07", "v1.16.1", "tiered"),
        ("v1.9.2", "535.216.03", "550.127.08", "v1.17.2", "tiered"),
        ("v1.9.3", "535.230.02", "550.144.03", "v1.17.3", "tiered"),
        ("v1.10.5", "535.247.01", "570.148.08", "v1.17.8", "tiered"),
        ("v1.12.1", "580.105.08", "570.195.03", "v1.18.1", "tiered"),
        ("v1.12.11", "580.126.20", "570.211.01", "v1.18.2", "tiered"),
        ("v1.13.0", "580.126.20", "595.58.03", "v1.19.0", "tiered"),
        ("v1.13.9", "580.178.04", "595.91.07", "v1.19.1", "tiered"),
        ("v1.14.0", "580.178.04", "595.91.07", "v1.19.1", "tiered"),
    ],
)
def test_driver_row_for_listed_releases(
    version: str, lts: str, production: str | None, toolkit: str, naming: str
) -> None:
    match = driver_row(version)
    assert match.note == ""
    assert (match.row.lts_driver, match.row.production_driver) == (lts, production)
    assert (match.row.container_toolkit, match.row.naming) == (toolkit, naming)


@pytest.mark.parametrize(
    ("known", "unknown"),
    [
        ("v1.12.11", "v1.12.12"),
        ("v1.9.6", "v1.9.7"),
        ("v1.14.0", "v1.14.1"),
        ("v1.14.0", "v1.15.0"),
    ],
)
def test_a_release_without_a_row_has_unknown_drivers_and_names_the_refresh(
    known: str, unknown: str
) -> None:
    # A patch may change the drivers (v1.13.0 → v1.13.1 did): no other row stands in for it.
    assert driver_row(known).note == ""
    with pytest.raises(NvidiaError) as raised:
        driver_row(TalosVersion.parse(unknown))
    assert raised.value.refusal is GpuRefusal.UNKNOWN_RELEASE
    assert f"the NVIDIA drivers of Talos {unknown} are unknown" in str(raised.value)
    assert "`talos-schematic facts refresh`" in str(raised.value)
    assert "--assume-drivers-of" in str(raised.value)


def test_prerelease_uses_its_release() -> None:
    match = driver_row("v1.13.0-beta.1")
    assert match.row.production_driver == "595.58.03"
    assert "pre-release" in match.note


def test_release_before_nvidia_extensions_is_refused() -> None:
    with pytest.raises(NvidiaError, match=r"v1\.1\.5 predates the NVIDIA system extensions"):
        driver_row("v1.1.5")


def test_every_published_release_has_an_exact_row() -> None:
    listing = SHARED / "reference" / "talos" / "extensions-by-version.json"
    if not listing.is_file():
        pytest.skip("shared reference data not present")
    versions = [entry["version"] for entry in json.loads(listing.read_text())["versions"]]
    assert len(versions) > 100
    for version in versions:
        assert driver_row(version).note == "", version


def test_packaged_table_matches_the_shared_facts() -> None:
    facts = SHARED / "data" / "talos-nvidia-drivers.tsv"
    if not facts.is_file():
        pytest.skip("shared data not present")
    lines = facts.read_text().splitlines()[1:]
    rows = [
        "\t".join(
            [
                str(r.first),
                str(r.last),
                r.lts_driver,
                r.production_driver or "",
                r.container_toolkit,
                r.naming,
            ]
        )
        for r in driver_table()
    ]
    assert rows == lines


# --- the installer a release upgrades from -----------------------------------------------------


@pytest.mark.parametrize(
    ("version", "repository"),
    [
        ("v1.5.0", "factory.talos.dev/installer"),
        ("v1.13.9", "factory.talos.dev/installer"),
        ("v1.14.0-rc.1", "factory.talos.dev/metal-installer"),
        ("v1.14.0", "factory.talos.dev/metal-installer"),
        ("v1.15.2", "factory.talos.dev/metal-installer"),
    ],
)
def test_default_installer_repository_per_release(version: str, repository: str) -> None:
    from schematic.facts.talos import default_installer_repository

    assert default_installer_repository(version) == repository


@pytest.mark.parametrize(
    ("version", "platform", "repository"),
    [
        ("v1.13.9", "openstack", "factory.talos.dev/installer"),
        ("v1.14.0", "openstack", "factory.talos.dev/openstack-installer"),
        ("v1.14.0", "nocloud", "factory.talos.dev/nocloud-installer"),
        ("v1.14.0", "metal", "factory.talos.dev/metal-installer"),
    ],
)
def test_default_installer_repository_follows_the_platform_from_1_14(
    version: str, platform: str, repository: str
) -> None:
    from schematic.facts.talos import default_installer_repository

    assert default_installer_repository(version, platform) == repository


def test_vanilla_installer_image_per_release() -> None:
    from schematic.facts.talos import EMPTY_SCHEMATIC_ID, vanilla_installer_image

    assert vanilla_installer_image("v1.13.9") == "ghcr.io/siderolabs/installer:v1.13.9"
    assert vanilla_installer_image("v1.14.0") == (
        f"factory.talos.dev/metal-installer/{EMPTY_SCHEMATIC_ID}:v1.14.0"
    )
    from schematic.core.model import Schematic

    assert Schematic.from_extensions(()).id == EMPTY_SCHEMATIC_ID


def test_driver_versions_compare_by_their_numbers() -> None:
    assert driver_key("580.95.05") == (580, 95, 5)
    assert driver_key("580.95.05") < driver_key("580.105.08") < driver_key("595.45.04")
    assert max(["570.195.03", "580.82.07"], key=driver_key) == "580.82.07"
    for malformed in ("r580", "580.x", ""):
        with pytest.raises(ValueError):
            driver_key(malformed)
