"""`generate --live-catalogue` and `check --live-catalogue` check board overlays against the
factory's `/version/<v>/overlays/official`, against respx-mocked factories (never the network)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import respx
import yaml
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands
from schematic.errors import CatalogError
from schematic.factory.client import FactoryClient

register_all_commands()

URL = "https://factory.example.test"
pytestmark = pytest.mark.usefixtures("instant_retries")
TALOS = "v1.13.9"
EXTENSIONS_PATH = f"/version/{TALOS}/extensions/official"
OVERLAYS_PATH = f"/version/{TALOS}/overlays/official"
CLUSTER = f"""\
cluster: edge
cozystack:
  version: osimage
talos:
  version: {TALOS}
  imageFactoryURL: {URL}
pools:
  - name: pi
    profile: metal-rpi5
  - name: intel
    profile: metal-intel
"""
EXTENSIONS = [
    {
        "name": "siderolabs/intel-ucode",
        "ref": "ghcr.io/siderolabs/intel-ucode:20250812",
        "digest": "sha256:" + "4" * 64,
        "author": "Sidero Labs",
        "description": "",
    }
]


def overlays(*entries: tuple[str, str]) -> list[dict[str, str]]:
    return [
        {
            "name": name,
            "image": image,
            "ref": f"ghcr.io/{image}:v0.1.{index}",
            "digest": "sha256:" + str(index) * 64,
        }
        for index, (name, image) in enumerate(entries)
    ]


OFFICIAL = overlays(
    ("rpi_generic", "siderolabs/sbc-raspberrypi"),
    ("rpi_5", "siderolabs/sbc-raspberrypi"),
    ("rock5b", "siderolabs/sbc-rockchip"),
)


@pytest.fixture
def env(factory_env: dict[str, str]) -> dict[str, str]:
    return factory_env


@pytest.fixture
def router(factory_router: respx.MockRouter) -> respx.MockRouter:
    factory_router.get(EXTENSIONS_PATH).mock(return_value=httpx.Response(200, json=EXTENSIONS))
    return factory_router


def run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(app, list(args), env=env)


def test_an_offered_overlay_passes_and_is_asked_once(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    route = router.get(OVERLAYS_PATH).mock(return_value=httpx.Response(200, json=OFFICIAL))
    out = tmp_path / "out"
    result = run(env, "generate", str(cluster), "--out", str(out), "--live-catalogue")
    assert result.exit_code == 0, result.stderr
    assert route.call_count == 1
    assert (
        (out / "pi" / "schematic.yaml")
        .read_text()
        .startswith("overlay:\n    image: siderolabs/sbc-raspberrypi\n    name: rpi_generic\n")
    )
    lock = yaml.safe_load((out / "extensions.lock.yaml").read_text())
    assert [e["name"] for e in lock["extensions"]] == ["siderolabs/intel-ucode"]
    # Only the overlay a pool uses, with the factory's ref and digest.
    assert lock["overlays"] == [
        {
            "name": "rpi_generic",
            "image": "siderolabs/sbc-raspberrypi",
            "ref": OFFICIAL[0]["ref"],
            "digest": OFFICIAL[0]["digest"],
        }
    ]
    assert (
        (out / "extensions.lock.yaml")
        .read_text()
        .startswith("# Extension and overlay images the generated schematics resolve to")
    )
    assert run(env, "check", str(cluster), "--out", str(out), "--live-catalogue").exit_code == 0
    # A new board firmware image is drift, as a new extension image is.
    newer = [{**OFFICIAL[0], "digest": "sha256:" + "9" * 64}, *OFFICIAL[1:]]
    route.mock(return_value=httpx.Response(200, json=newer))
    drifted = run(env, "check", str(cluster), "--out", str(out), "--live-catalogue")
    assert drifted.exit_code == 3
    assert "  changed: extensions.lock.yaml\n" in drifted.stderr


def test_an_overlay_the_factory_lacks_names_the_pool_and_key_and_writes_nothing(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    # A self-hosted factory that serves fewer boards than the official one.
    router.get(OVERLAYS_PATH).mock(
        return_value=httpx.Response(200, json=overlays(("rpi_5", "siderolabs/sbc-raspberrypi")))
    )
    out = tmp_path / "out"
    result = run(env, "generate", str(cluster), "--out", str(out), "--live-catalogue")
    assert result.exit_code == 1
    assert result.stderr == (
        f'talos-schematic: {cluster}: pool "pi": overlay.name: {URL}: Talos {TALOS} offers no '
        "overlay 'rpi_generic' (it offers rpi_5)\n"
    )
    assert not out.exists()


def test_an_overlay_in_another_image_names_the_image(
    router: respx.MockRouter, env: dict[str, str], tmp_path: Path
) -> None:
    router.get(OVERLAYS_PATH).mock(return_value=httpx.Response(200, json=OFFICIAL))
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        CLUSTER + "  - name: rock\n    profile: metal-rock5b\n"
        "    overlay: {name: rock5b, image: example/sbc-rock}\n"
    )
    result = run(env, "generate", str(cluster), "--live-catalogue", "-f", "urls")
    assert result.exit_code == 1
    assert result.stderr == (
        f'talos-schematic: {cluster}: pool "rock": overlay.image: {URL}: Talos {TALOS} offers '
        "overlay 'rock5b' in siderolabs/sbc-rockchip, not example/sbc-rock\n"
    )
    assert result.stdout == ""


def test_without_a_board_the_overlay_list_is_not_asked(
    router: respx.MockRouter, env: dict[str, str], tmp_path: Path
) -> None:
    route = router.get(OVERLAYS_PATH).mock(return_value=httpx.Response(200, json=OFFICIAL))
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        CLUSTER.split("  - name: pi")[0] + "  - {name: intel, profile: metal-intel}\n"
    )
    result = run(env, "generate", str(cluster), "--live-catalogue", "-f", "urls")
    assert result.exit_code == 0, result.stderr
    assert route.call_count == 0


def test_check_with_live_catalogue_checks_the_overlay_too(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    route = router.get(OVERLAYS_PATH).mock(return_value=httpx.Response(200, json=OFFICIAL))
    out = tmp_path / "out"
    assert run(env, "generate", str(cluster), "--out", str(out)).exit_code == 0
    assert run(env, "check", str(cluster), "--out", str(out)).exit_code == 0
    assert route.call_count == 0
    route.mock(return_value=httpx.Response(200, json=[]))
    result = run(env, "check", str(cluster), "--out", str(out), "--live-catalogue")
    assert result.exit_code == 1
    assert 'pool "pi": overlay.name: ' in result.stderr
    assert result.stderr.endswith("offers no overlay 'rpi_generic' (it lists no overlays)\n")
    assert route.call_count == 1


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (
            httpx.Response(404, text="version not found"),
            f"{URL}: Talos {TALOS}: the factory does not know this version (HTTP 404 Not Found: "
            "version not found)",
        ),
        (
            httpx.Response(200, json=[{"name": "rpi_generic"}]),
            f"GET {OVERLAYS_PATH}: unexpected overlay list (0.image: Field required)",
        ),
        (
            httpx.Response(200, text="<html>sign in</html>", headers={"content-type": "text/html"}),
            "with an HTML page instead of the factory's answer",
        ),
    ],
)
def test_a_bad_overlay_list_is_one_message(
    router: respx.MockRouter,
    env: dict[str, str],
    cluster: Path,
    tmp_path: Path,
    response: httpx.Response,
    message: str,
) -> None:
    router.get(OVERLAYS_PATH).mock(return_value=response)
    out = tmp_path / "out"
    result = run(env, "generate", str(cluster), "--out", str(out), "--live-catalogue")
    assert result.exit_code == 1
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_the_client_reads_the_overlay_list(router: respx.MockRouter) -> None:
    router.get(OVERLAYS_PATH).mock(
        return_value=httpx.Response(200, json=[{**OFFICIAL[0], "added": "later"}])
    )
    with FactoryClient(URL) as client:
        (info,) = client.official_overlays("1.13.9")
        with pytest.raises(CatalogError, match="is not a Talos version"):
            client.official_overlays("latest")
    assert (info.name, info.image) == ("rpi_generic", "siderolabs/sbc-raspberrypi")
    assert info.ref == "ghcr.io/siderolabs/sbc-raspberrypi:v0.1.0"
