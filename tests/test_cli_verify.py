"""`verify` on a `generate --out` directory and on a cluster file, against mocked factories."""

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
OTHER = "https://other.example.test"
CLUSTER = f"""\
cluster: ml
namespace: tenant-ml
cozystack:
  version: osimage
talos:
  version: v1.13.9
  imageFactoryURL: {URL}
pools:
  - name: cpu-a
    profile: kubevirt-cpu
  - name: cpu-b
    profile: kubevirt-cpu
    maxReplicas: 3
  - name: gpu
    profile: kubevirt-v100-pcie-16gb
"""
POOLS = ("cpu-a", "cpu-b", "gpu")


@pytest.fixture
def env(factory_env: dict[str, str]) -> dict[str, str]:
    return factory_env


@pytest.fixture
def router(factory_router: respx.MockRouter) -> respx.MockRouter:
    return factory_router


def run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(app, list(args), env=env)


def generated(env: dict[str, str], cluster: Path, out: Path, *options: str) -> dict[str, str]:
    """Generate offline into ``out``; each pool's schematic ID."""
    result = run(env, "generate", str(cluster), "--out", str(out), *options)
    assert result.exit_code == 0, result.stderr
    index = yaml.safe_load((out / "index.yaml").read_text())
    return {pool["name"]: pool["schematicID"] for pool in index["pools"]}


def serve(router: respx.MockRouter, out: Path, ids: dict[str, str]) -> None:
    """The factory holds every schematic of ``out`` with its body."""
    for name, schematic_id in ids.items():
        body = (out / name / "schematic.yaml").read_text()
        router.get(f"/schematics/{schematic_id}").mock(return_value=httpx.Response(200, text=body))


def test_verify_out_all_present_exits_0(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    ids = generated(env, cluster, out)
    serve(router, out, ids)
    result = run(env, "verify", "--out", str(out))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "".join(
        f"present    {ids[name]}  {out / name / 'schematic.yaml'}\n" for name in POOLS
    )
    # One GET per distinct ID: the two CPU pools share theirs.
    assert router.calls.call_count == 2


def test_verify_out_missing_exits_3(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    ids = generated(env, cluster, out)
    serve(router, out, {"cpu-a": ids["cpu-a"]})
    router.get(f"/schematics/{ids['gpu']}").mock(
        return_value=httpx.Response(404, text="schematic not found")
    )
    result = run(env, "verify", "--out", str(out))
    assert result.exit_code == 3
    assert f"missing    {ids['gpu']}  {out / 'gpu' / 'schematic.yaml'}\n" in result.stdout
    assert result.stdout.count("present") == 2
    assert f"talos-schematic: {URL}: 1 of 3 schematics missing or different" in result.stderr


def test_verify_out_different_body_exits_3(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    ids = generated(env, cluster, out)
    serve(router, out, {"gpu": ids["gpu"]})
    router.get(f"/schematics/{ids['cpu-a']}").mock(
        return_value=httpx.Response(200, text="customization: {}\n")
    )
    result = run(env, "verify", "--out", str(out))
    assert result.exit_code == 3
    statuses = [line.split()[0] for line in result.stdout.splitlines()]
    assert statuses == ["different", "different", "present"]
    assert "the factory stores another body" in result.stderr


def test_verify_out_reads_a_factory_stamped_body(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    def stamping(request: httpx.Request) -> httpx.Response:
        stored = "owner: team@example.com\n" + Schematic.from_yaml(request.content).canonical()
        return httpx.Response(
            201, json={"id": hashlib.sha256(stored.encode()).hexdigest(), "schematic": stored}
        )

    router.post("/schematics").mock(side_effect=stamping)
    out = tmp_path / "out"
    ids = generated(env, cluster, out, "--register")
    serve(router, out, ids)
    result = run(env, "verify", str(out))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("present") == 3


def test_verify_out_without_schematic_files_checks_presence(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    ids = generated(env, cluster, out, "--format", "values")
    for schematic_id in set(ids.values()):
        router.get(f"/schematics/{schematic_id}").mock(
            return_value=httpx.Response(200, text="anything: stored\n")
        )
    # Without urls.yaml the index still says which factory the output boots from.
    result = run(env, "verify", "--out", str(out))
    assert result.exit_code == 0, result.stderr
    assert f'present    {ids["gpu"]}  {out / "index.yaml"}: pool "gpu"\n' in result.stdout


def test_verify_out_edited_schematic_is_an_error(
    env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    generated(env, cluster, out)
    (out / "gpu" / "schematic.yaml").write_text("customization: {}\n")
    with respx.mock(assert_all_mocked=True) as mock:
        result = run(env, "verify", "--out", str(out))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"talos-schematic: {out / 'gpu' / 'schematic.yaml'}: ")
    assert "regenerate it" in result.stderr
    assert mock.calls.call_count == 0


def test_verify_cluster_file_checks_each_distinct_schematic(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    ids = generated(env, cluster, out)
    serve(router, out, ids)
    # The factory URL comes from the cluster file's talos.imageFactoryURL.
    result = run(env, "verify", str(cluster))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (
        f'present    {ids["cpu-a"]}  {cluster}: pools "cpu-a", "cpu-b"\n'
        f'present    {ids["gpu"]}  {cluster}: pool "gpu"\n'
    )


def test_verify_cluster_file_missing_exits_3(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    router.get(url__regex=r"/schematics/[0-9a-f]{64}$").mock(
        return_value=httpx.Response(404, text="schematic not found")
    )
    result = run(env, "verify", str(cluster))
    assert result.exit_code == 3
    assert result.stdout.count("missing") == 2


def test_verify_factory_flag_overrides_the_cluster_file(env: dict[str, str], cluster: Path) -> None:
    with respx.mock(base_url=OTHER, assert_all_mocked=True) as mock:
        route = mock.get(url__regex=r"/schematics/[0-9a-f]{64}$").mock(
            return_value=httpx.Response(404, text="schematic not found")
        )
        result = run(env, "verify", str(cluster), "--factory", OTHER)
    assert result.exit_code == 3
    assert route.call_count == 2
    assert f"talos-schematic: {OTHER}: 2 of 2" in result.stderr


def test_verify_bad_cluster_file_is_one_message(env: dict[str, str], cluster: Path) -> None:
    cluster.write_text(CLUSTER.replace("kubevirt-cpu\n", "no-such-profile\n", 1))
    with respx.mock(assert_all_mocked=True) as mock:
        result = run(env, "verify", str(cluster))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"talos-schematic: {cluster}")
    assert "Traceback" not in result.stderr
    assert mock.calls.call_count == 0
