"""`generate --register` registers a pool's boot-media schematic (`boot.schematic`) too, and an
owner-stamped boot schematic reaches every boot URL and passes `check`, against respx-mocked
factories (never the network)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import httpx
import pytest
import respx
import yaml
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic

register_all_commands()

URL = "https://factory.example.test"
pytestmark = pytest.mark.usefixtures("instant_retries")
TALOS = "v1.13.9"
OWNER = "owner: team@example.com\n"
BOOT_ARG = "talos.config=https://config.internal/worker.yaml"
CLUSTER = f"""\
cluster: edge
cozystack:
  version: osimage
talos:
  version: {TALOS}
  imageFactoryURL: {URL}
pools:
  - name: pxe-a
    profile: metal-amd
    boot:
      schematic:
        kernelArgs: [{BOOT_ARG}]
  - name: pxe-b
    profile: metal-amd
    maxReplicas: 2
    boot:
      schematic:
        kernelArgs: [{BOOT_ARG}]
  - name: plain
    profile: metal-intel
"""


@pytest.fixture
def env(factory_env: dict[str, str]) -> dict[str, str]:
    return factory_env


@pytest.fixture
def router(factory_router: respx.MockRouter) -> respx.MockRouter:
    return factory_router


def run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(app, list(args), env=env)


def posted_bodies(route: respx.Route) -> list[str]:
    return [call.request.content.decode() for call in route.calls]


def echo_factory(request: httpx.Request) -> httpx.Response:
    made = Schematic.from_yaml(request.content)
    return httpx.Response(201, json={"id": made.id, "schematic": made.canonical()})


def stamping_factory(request: httpx.Request) -> httpx.Response:
    stored = OWNER + Schematic.from_yaml(request.content).canonical()
    return httpx.Response(
        201, json={"id": hashlib.sha256(stored.encode()).hexdigest(), "schematic": stored}
    )


def urls_of(out: Path, pool: str) -> dict[str, str]:
    loaded: dict[str, str] = yaml.safe_load((out / pool / "urls.yaml").read_text())
    return loaded


def test_register_posts_each_boot_schematic_once(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    route = router.post("/schematics").mock(side_effect=echo_factory)
    out = tmp_path / "out"
    result = run(env, "generate", str(cluster), "--out", str(out), "--register")
    assert result.exit_code == 0, result.stderr
    bodies = posted_bodies(route)
    # metal-amd's schematic, metal-intel's, and the one boot schematic both PXE pools share.
    assert len(bodies) == 3
    boot = urls_of(out, "pxe-a")
    assert boot == {**urls_of(out, "pxe-b"), "pool": "pxe-a"}
    assert boot["bootSchematic"] in bodies
    assert Schematic.from_yaml(boot["bootSchematic"]).id == boot["bootSchematicID"]
    assert sum(BOOT_ARG in body for body in bodies) == 1


def test_a_failed_boot_registration_writes_nothing(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    def refuse_the_boot_schematic(request: httpx.Request) -> httpx.Response:
        if BOOT_ARG.encode() in request.content:
            return httpx.Response(400, text="invalid schematic")
        return echo_factory(request)

    router.post("/schematics").mock(side_effect=refuse_the_boot_schematic)
    out = tmp_path / "out"
    result = run(env, "generate", str(cluster), "--out", str(out), "--register")
    assert result.exit_code == 1
    assert 'pools "pxe-a", "pxe-b" boot media' in result.stderr
    assert "invalid schematic" in result.stderr
    assert not out.exists()


def test_a_stamped_boot_schematic_reaches_every_boot_url_and_passes_check(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    offline_dir = tmp_path / "offline"
    assert run(env, "generate", str(cluster), "--out", str(offline_dir)).exit_code == 0
    offline = urls_of(offline_dir, "pxe-a")
    route = router.post("/schematics").mock(side_effect=stamping_factory)
    out = tmp_path / "out"
    result = run(env, "generate", str(cluster), "--out", str(out), "--register")
    assert result.exit_code == 0, result.stderr

    urls = urls_of(out, "pxe-a")
    stamped_body = OWNER + offline["bootSchematic"]
    stamped_id = hashlib.sha256(stamped_body.encode()).hexdigest()
    assert urls["bootSchematic"] == stamped_body
    assert urls["bootSchematicID"] == stamped_id
    for key in ("image", "iso", "pxe", "ipxe"):
        assert f"/{stamped_id}/" in urls[key], key
        assert offline["bootSchematicID"] not in urls[key], key
    index = yaml.safe_load((out / "index.yaml").read_text())
    entry = next(pool for pool in index["pools"] if pool["name"] == "pxe-a")
    assert entry["bootSchematicID"] == stamped_id
    assert entry["offlineBootSchematicID"] == offline["bootSchematicID"]

    posted = route.call_count
    checked = run(env, "check", str(cluster), "--out", str(out))
    assert checked.exit_code == 0, checked.stderr
    assert route.call_count == posted

    # A stamped boot body edited by hand no longer vouches for its pool.
    path = out / "pxe-a" / "urls.yaml"
    path.write_text(path.read_text().replace("team@", "other@"))
    edited = run(env, "check", str(cluster), "--out", str(out))
    assert edited.exit_code == 3
    assert "pxe-a/urls.yaml" in edited.stderr and "pxe-b" not in edited.stderr


def serve(router: respx.MockRouter, bodies: dict[str, str]) -> None:
    """GET /schematics/<id> answered from ``bodies``, 404 for any other ID."""

    def answer(request: httpx.Request) -> httpx.Response:
        schematic_id = request.url.path.rsplit("/", 1)[1]
        if schematic_id in bodies:
            return httpx.Response(200, text=bodies[schematic_id])
        return httpx.Response(404, text="schematic not found")

    router.get(url__regex=r"/schematics/[0-9a-f]{64}$").mock(side_effect=answer)


@pytest.mark.parametrize("target", ["out", "cluster"])
def test_verify_checks_the_boot_schematic_too(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path, target: str
) -> None:
    out = tmp_path / "out"
    assert run(env, "generate", str(cluster), "--out", str(out)).exit_code == 0
    index = yaml.safe_load((out / "index.yaml").read_text())
    installers = {
        pool["schematicID"]: (out / pool["name"] / "schematic.yaml").read_text()
        for pool in index["pools"]
    }
    boot = urls_of(out, "pxe-a")
    serve(router, installers)
    argument = str(out) if target == "out" else str(cluster)
    missing = run(env, "verify", argument)
    assert missing.exit_code == 3
    boot_id = boot["bootSchematicID"]
    subjects = (
        [f"{out}/pxe-a/urls.yaml (bootSchematic)", f"{out}/pxe-b/urls.yaml (bootSchematic)"]
        if target == "out"
        else [f'{cluster}: pools "pxe-a", "pxe-b" boot media']
    )
    assert [line for line in missing.stdout.splitlines() if line.startswith("missing")] == [
        f"missing    {boot_id}  {subject}" for subject in subjects
    ]
    serve(router, {**installers, boot_id: boot["bootSchematic"]})
    present = run(env, "verify", argument)
    assert present.exit_code == 0, present.stdout + present.stderr
    assert [line for line in present.stdout.splitlines() if boot_id in line] == [
        f"present    {boot_id}  {subject}" for subject in subjects
    ]
