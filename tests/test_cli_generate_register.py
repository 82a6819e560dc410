"""`generate --register`, `--live-catalogue` and `--factory`, and `check` with the lock file,
against respx-mocked factories (never the network)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import respx
import yaml
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic
from schematic.output.render.kinds import kind_named

register_all_commands()

URL = "https://factory.example.test"
pytestmark = pytest.mark.usefixtures("instant_retries")
OTHER = "https://other.example.test"
TALOS = "v1.13.9"
CATALOGUE_PATH = f"/version/{TALOS}/extensions/official"
OWNER = "owner: team@example.com\n"
# Five pools, three distinct schematics: two CPU pools, two V100 pools, one CPU pool with iSCSI.
CLUSTER = f"""\
cluster: ml
cozystack:
  version: osimage
namespace: tenant-ml
talos:
  version: {TALOS}
  imageFactoryURL: {URL}
pools:
  - name: cpu-a
    profile: kubevirt-cpu
    maxReplicas: 2
  - name: cpu-b
    profile: kubevirt-cpu
    maxReplicas: 3
  - name: gpu-a
    profile: kubevirt-v100-pcie-16gb
  - name: gpu-b
    profile: kubevirt-v100-pcie-16gb
    minReplicas: 1
  - name: storage
    profile: kubevirt-cpu
    extensions: [siderolabs/iscsi-tools]
"""
DISTINCT = 3
USED_EXTENSIONS = (
    "siderolabs/iscsi-tools",
    "siderolabs/nonfree-kmod-nvidia-lts",
    "siderolabs/nvidia-container-toolkit-lts",
    "siderolabs/qemu-guest-agent",
)
LOCK = f"""\
# Extension images the generated schematics resolve to; written by talos-schematic.
imageFactoryURL: {URL}
talosVersion: {TALOS}
extensions:
- name: siderolabs/iscsi-tools
  ref: ghcr.io/siderolabs/iscsi-tools:v0.2.0
  digest: sha256:{"0" * 64}
- name: siderolabs/nonfree-kmod-nvidia-lts
  ref: ghcr.io/siderolabs/nonfree-kmod-nvidia-lts:v0.2.1
  digest: sha256:{"1" * 64}
- name: siderolabs/nvidia-container-toolkit-lts
  ref: ghcr.io/siderolabs/nvidia-container-toolkit-lts:v0.2.2
  digest: sha256:{"2" * 64}
- name: siderolabs/qemu-guest-agent
  ref: ghcr.io/siderolabs/qemu-guest-agent:v0.2.3
  digest: sha256:{"3" * 64}
"""


@pytest.fixture
def env(factory_env: dict[str, str]) -> dict[str, str]:
    return factory_env


@pytest.fixture
def router(factory_router: respx.MockRouter) -> respx.MockRouter:
    return factory_router


def run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(app, list(args), env=env)


def tree(directory: Path) -> dict[str, bytes]:
    return {
        path.relative_to(directory).as_posix(): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def echo_factory(request: httpx.Request) -> httpx.Response:
    made = Schematic.from_yaml(request.content)
    return httpx.Response(201, json={"id": made.id, "schematic": made.canonical()})


def stamping_factory(request: httpx.Request) -> httpx.Response:
    # An Enterprise factory stores the body with its owner, and answers that body's ID.
    stored = OWNER + Schematic.from_yaml(request.content).canonical()
    return httpx.Response(
        201, json={"id": hashlib.sha256(stored.encode()).hexdigest(), "schematic": stored}
    )


def catalogue(leave_out: str = "") -> list[dict[str, str]]:
    return [
        {
            "name": name,
            "ref": f"ghcr.io/{name}:v0.2.{index}",
            "digest": f"sha256:{str(index) * 64}",
            "author": "Sidero Labs",
            "description": "",
        }
        for index, name in enumerate(USED_EXTENSIONS)
        if name != leave_out
    ]


def offline_ids(out: Path) -> dict[str, str]:
    index = yaml.safe_load((out / "index.yaml").read_text())
    return {pool["name"]: pool["schematicID"] for pool in index["pools"]}


# --- no network unless asked ------------------------------------------------------------------


def test_without_register_generate_makes_no_request(
    env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as mock:
        written = run(env, "generate", str(cluster), "--out", str(tmp_path / "out"))
        printed = run(env, "generate", str(cluster), "--format", "json")
        checked = run(env, "check", str(cluster), "--out", str(tmp_path / "out"))
    assert (written.exit_code, printed.exit_code, checked.exit_code) == (0, 0, 0)
    assert mock.calls.call_count == 0


def test_without_register_generate_does_not_import_httpx(cluster: Path, tmp_path: Path) -> None:
    program = (
        "import sys\n"
        "from schematic.cli import main\n"
        f"sys.argv = ['talos-schematic', 'generate', {str(cluster)!r}, "
        f"'--out', {str(tmp_path / 'out')!r}]\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
        "print('httpx' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "False\n"


# --- registration -----------------------------------------------------------------------------


def test_register_posts_once_per_distinct_schematic(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    route = router.post("/schematics").mock(side_effect=echo_factory)
    result = run(env, "generate", str(cluster), "--out", str(tmp_path / "out"), "--register")
    assert result.exit_code == 0, result.stderr
    assert route.call_count == DISTINCT
    posted = sorted(call.request.content for call in route.calls)
    written = tree(tmp_path / "out")
    bodies = sorted(set(body for name, body in written.items() if name.endswith("schematic.yaml")))
    assert posted == bodies
    # Same IDs as offline: registration changes nothing in the output.
    assert run(env, "generate", str(cluster), "--out", str(tmp_path / "offline")).exit_code == 0
    assert written == tree(tmp_path / "offline")
    assert "note:" not in result.stderr


def test_register_reports_progress_per_distinct_schematic(
    router: respx.MockRouter,
    env: dict[str, str],
    cluster: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import schematic.cli.generate_command as commands

    seen: list[tuple[int, int]] = []

    def progress(label: str) -> Callable[[int, int], None]:
        assert label == "registering schematics"
        return lambda done, total: seen.append((done, total))

    monkeypatch.setattr(commands, "progress_line", progress)
    router.post("/schematics").mock(side_effect=echo_factory)
    result = run(env, "generate", str(cluster), "--register", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert seen == [(1, DISTINCT), (2, DISTINCT), (3, DISTINCT)]


def test_register_failure_leaves_the_output_directory_byte_identical(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert run(env, "generate", str(cluster), "--out", str(out)).exit_code == 0
    before = tree(out)
    # The cluster file changes, so a successful run would rewrite the directory.
    cluster.write_text(CLUSTER.replace("maxReplicas: 2", "maxReplicas: 7"))
    route = router.post("/schematics").mock(return_value=httpx.Response(500, text="boom"))
    result = run(env, "generate", str(cluster), "--out", str(out), "--register")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"talos-schematic: {URL}: {cluster}: pool")
    assert "POST /schematics: HTTP 500 Internal Server Error (after 4 attempts): boom" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr
    assert route.call_count >= 4
    assert tree(out) == before


def test_register_failure_creates_no_output_directory(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    router.post("/schematics").mock(return_value=httpx.Response(400, text="invalid schematic"))
    result = run(env, "generate", str(cluster), "--out", str(tmp_path / "out"), "--register")
    assert result.exit_code == 1
    assert not (tmp_path / "out").exists()
    assert list(tmp_path.iterdir()) == [cluster]


def test_register_failure_names_every_pool_sharing_the_schematic(
    router: respx.MockRouter, env: dict[str, str], cluster: Path
) -> None:
    router.post("/schematics").mock(return_value=httpx.Response(403, text="forbidden"))
    result = run(env, "generate", str(cluster), "--register", "--format", "json")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert f'{URL}: {cluster}: pools "cpu-a", "cpu-b": POST /schematics: HTTP 403' in (
        result.stderr
    )


def test_owner_stamped_answer_puts_the_factory_id_everywhere(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    assert run(env, "generate", str(cluster), "--out", str(tmp_path / "offline")).exit_code == 0
    offline = offline_ids(tmp_path / "offline")
    router.post("/schematics").mock(side_effect=stamping_factory)
    out = tmp_path / "out"
    result = run(env, "generate", str(cluster), "--out", str(out), "--register", "--format", "json")
    assert result.exit_code == 0, result.stderr
    full = run(env, "generate", str(cluster), "--out", str(tmp_path / "full"), "--register")
    assert full.exit_code == 0, full.stderr

    summary = json.loads((out / "summary.json").read_text())
    files = tree(tmp_path / "full")
    unstamped = tree(tmp_path / "offline")
    for pool in summary["pools"]:
        name = pool["name"]
        stamped = OWNER + unstamped[f"{name}/schematic.yaml"].decode()
        factory_id = hashlib.sha256(stamped.encode()).hexdigest()
        assert factory_id != offline[name]
        assert pool["schematicID"] == factory_id
        assert pool["schematic"] == stamped
        assert files[f"{name}/schematic.yaml"].decode() == stamped
        for kind in ("values.yaml", "kubernetes-nodes.yaml", "urls.yaml"):
            assert factory_id in files[f"{name}/{kind}"].decode(), kind
        assert f"/installer/{factory_id}:{TALOS}" in files[f"{name}/urls.yaml"].decode()
    assert offline_ids(tmp_path / "full") == {
        pool["name"]: pool["schematicID"] for pool in summary["pools"]
    }
    # Only the index keeps the offline IDs (for `check`); nothing a node boots carries them.
    index = yaml.safe_load(files.pop("index.yaml"))
    assert {pool["name"]: pool["offlineSchematicID"] for pool in index["pools"]} == offline
    everything = b"".join(files.values()) + (out / "summary.json").read_bytes()
    assert not any(schematic_id.encode() in everything for schematic_id in offline.values())
    notices = [line for line in full.stderr.splitlines() if "is used instead of" in line]
    assert len(notices) == DISTINCT
    assert all("added 'owner: team@example.com'" in line for line in notices)
    assert f'{URL}: {cluster}: pools "cpu-a", "cpu-b": the factory stores' in full.stderr


def test_check_accepts_owner_stamped_output_without_the_factory(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    route = router.post("/schematics").mock(side_effect=stamping_factory)
    out = tmp_path / "out"
    assert run(env, "generate", str(cluster), "--out", str(out), "--register").exit_code == 0
    posted = route.call_count
    checked = run(env, "check", str(cluster), "--out", str(out))
    assert checked.exit_code == 0, checked.stderr
    assert route.call_count == posted  # check asks no factory

    # A stamped body edited by hand no longer vouches for its pool.
    body = out / "storage" / "schematic.yaml"
    body.write_text(body.read_text().replace("team@", "other@"))
    edited = run(env, "check", str(cluster), "--out", str(out))
    assert edited.exit_code == 3
    assert "storage/schematic.yaml" in edited.stderr and "cpu-a" not in edited.stderr


def test_owner_stamped_answer_on_stdout(
    router: respx.MockRouter, env: dict[str, str], cluster: Path
) -> None:
    router.post("/schematics").mock(side_effect=stamping_factory)
    result = run(env, "generate", str(cluster), "--register", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count(OWNER.rstrip("\n")) == 5
    assert "is used instead of the offline" in result.stderr


def test_same_body_under_another_id_is_an_error_and_nothing_is_written(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    def wrong_id(request: httpx.Request) -> httpx.Response:
        body = Schematic.from_yaml(request.content).canonical()
        return httpx.Response(201, json={"id": "f" * 64, "schematic": body})

    router.post("/schematics").mock(side_effect=wrong_id)
    result = run(env, "generate", str(cluster), "--out", str(tmp_path / "out"), "--register")
    assert result.exit_code == 1
    assert "answered ID " + "f" * 64 in result.stderr
    assert "nothing is written" in result.stderr
    assert not (tmp_path / "out").exists()


def test_factory_flag_overrides_the_cluster_file(
    env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    with respx.mock(base_url=OTHER, assert_all_mocked=True) as mock:
        route = mock.post("/schematics").mock(side_effect=echo_factory)
        result = run(
            env,
            "generate",
            str(cluster),
            "--out",
            str(tmp_path / "out"),
            "--register",
            "--factory",
            OTHER,
        )
    assert result.exit_code == 0, result.stderr
    assert route.call_count == DISTINCT
    assert f"registered with {OTHER}; the generated image URLs point at" in result.stderr
    # The image URLs keep the cluster file's factory.
    assert f"{URL}/image/" in (tmp_path / "out" / "cpu-a" / "urls.yaml").read_text()


def test_environment_overrides_the_cluster_file(env: dict[str, str], cluster: Path) -> None:
    with respx.mock(base_url=OTHER, assert_all_mocked=True) as mock:
        route = mock.post("/schematics").mock(side_effect=echo_factory)
        result = run(
            {**env, "TALOS_SCHEMATIC_FACTORY": OTHER},
            "generate",
            str(cluster),
            "--register",
            "--format",
            "json",
        )
    assert result.exit_code == 0, result.stderr
    assert route.call_count == DISTINCT


# --- the live catalogue and its lock file -----------------------------------------------------


def test_live_catalogue_unknown_extension_names_the_pool(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    router.get(CATALOGUE_PATH).mock(
        return_value=httpx.Response(200, json=catalogue(leave_out="siderolabs/iscsi-tools"))
    )
    posts = router.post("/schematics").mock(side_effect=echo_factory)
    result = run(
        env,
        "generate",
        str(cluster),
        "--out",
        str(tmp_path / "out"),
        "--live-catalogue",
        "--register",
    )
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f'talos-schematic: {cluster}: pool "storage": {URL}: Talos {TALOS} offers no '
        "extension siderolabs/iscsi-tools"
    )
    assert len(result.stderr.splitlines()) == 1
    assert posts.call_count == 0
    assert not (tmp_path / "out").exists()


def test_live_catalogue_writes_a_deterministic_lock_file_and_caches_the_list(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    route = router.get(CATALOGUE_PATH).mock(return_value=httpx.Response(200, json=catalogue()))
    first, second = tmp_path / "first", tmp_path / "second"
    assert (
        run(env, "generate", str(cluster), "--out", str(first), "--live-catalogue").exit_code == 0
    )
    assert (
        run(env, "generate", str(cluster), "--out", str(second), "--live-catalogue").exit_code == 0
    )
    assert (first / "extensions.lock.yaml").read_text() == LOCK
    assert tree(first) == tree(second)
    # Fetched once per (factory, version); the second run read the on-disk cache.
    assert route.call_count == 1


def test_live_catalogue_on_stdout_checks_names_without_a_lock(
    router: respx.MockRouter, env: dict[str, str], cluster: Path
) -> None:
    router.get(CATALOGUE_PATH).mock(return_value=httpx.Response(200, json=catalogue()))
    result = run(env, "generate", str(cluster), "--live-catalogue", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert "extensions.lock" not in result.stdout


def test_check_ignores_the_lock_offline_and_compares_it_with_live_catalogue(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    router.get(CATALOGUE_PATH).mock(return_value=httpx.Response(200, json=catalogue()))
    out = tmp_path / "out"
    assert run(env, "generate", str(cluster), "--out", str(out), "--live-catalogue").exit_code == 0
    assert run(env, "check", str(cluster), "--out", str(out)).exit_code == 0
    assert run(env, "check", str(cluster), "--out", str(out), "--live-catalogue").exit_code == 0

    lock = out / "extensions.lock.yaml"
    lock.write_text(LOCK.replace("v0.2.1", "v0.3.0"))
    drifted = run(env, "check", str(cluster), "--out", str(out), "--live-catalogue")
    assert drifted.exit_code == 3
    assert "  changed: extensions.lock.yaml\n" in drifted.stderr
    assert "--live-catalogue" in drifted.stderr.splitlines()[-1]
    assert run(env, "check", str(cluster), "--out", str(out)).exit_code == 0

    lock.unlink()
    missing = run(env, "check", str(cluster), "--out", str(out), "--live-catalogue")
    assert missing.exit_code == 3
    assert "  missing: extensions.lock.yaml\n" in missing.stderr


def test_generate_without_live_catalogue_drops_a_stale_lock(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    router.get(CATALOGUE_PATH).mock(return_value=httpx.Response(200, json=catalogue()))
    out = tmp_path / "out"
    assert run(env, "generate", str(cluster), "--out", str(out), "--live-catalogue").exit_code == 0
    assert run(env, "generate", str(cluster), "--out", str(out)).exit_code == 0
    assert not (out / "extensions.lock.yaml").exists()


def test_owner_stamped_registration_gives_talhelper_the_schematic_it_posts_itself(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    # talhelper posts its node's schematic to the factory itself: it gets the body the cluster
    # file asks for, never the factory's stamped copy with its owner.
    offline = tmp_path / "offline"
    assert (
        run(env, "generate", str(cluster), "--out", str(offline), "-f", "talhelper").exit_code == 0
    )
    router.post("/schematics").mock(side_effect=stamping_factory)
    out = tmp_path / "out"
    result = run(env, "generate", str(cluster), "--out", str(out), "-f", "talhelper", "--register")
    assert result.exit_code == 0, result.stderr
    for name, text in tree(out).items():
        if name.endswith(str(kind_named("talhelper").pool_file)):
            assert "owner:" not in text.decode(), name
            ours = yaml.safe_load(text)["schematic"]
            assert ours == yaml.safe_load((offline / name).read_bytes())["schematic"], name


def test_owner_stamped_registration_gives_terraform_the_schematic_it_posts_itself(
    router: respx.MockRouter, env: dict[str, str], cluster: Path, tmp_path: Path
) -> None:
    # The provider's talos_image_factory_schematic posts the schematic: it must carry the
    # cluster file's body (the factory stamps it again and answers the stamped ID), while the
    # postcondition checks that stamped ID.
    offline = tmp_path / "offline"
    assert (
        run(env, "generate", str(cluster), "--out", str(offline), "-f", "terraform").exit_code == 0
    )
    router.post("/schematics").mock(side_effect=stamping_factory)
    out = tmp_path / "out"
    result = run(env, "generate", str(cluster), "--out", str(out), "-f", "terraform", "--register")
    assert result.exit_code == 0, result.stderr
    checked = 0
    for name, text in tree(out).items():
        if name.endswith(str(kind_named("terraform").pool_file)):
            ours, theirs = json.loads(text), json.loads((offline / name).read_bytes())
            posted = next(iter(ours["resource"]["talos_image_factory_schematic"].values()))
            before = next(iter(theirs["resource"]["talos_image_factory_schematic"].values()))
            assert "owner:" not in posted["schematic"], name
            assert posted["schematic"] == before["schematic"], name
            stamped = next(iter(ours["locals"].values()))["schematic_id"]
            assert (
                stamped
                == hashlib.sha256(
                    (
                        OWNER
                        + Schematic.from_yaml(posted["schematic"].replace("$${", "${")).canonical()
                    ).encode()
                ).hexdigest()
            )
            checked += 1
    assert checked
