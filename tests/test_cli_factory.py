"""`register`, `verify`, `extensions` and `versions` against respx-mocked factories."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import respx
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic

URL = "https://factory.example.test"
pytestmark = pytest.mark.usefixtures("instant_retries")
QEMU_ID = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
QEMU_BODY = (
    "customization:\n  systemExtensions:\n    officialExtensions:\n"
    "      - siderolabs/qemu-guest-agent\n"
)
EMPTY_ID = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
TOKEN = "cli-secret-token"

register_all_commands()


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "TALOS_SCHEMATIC_FACTORY": URL,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TALOS_SCHEMATIC_FACTORY_TOKEN": "",
        "TALOS_SCHEMATIC_FACTORY_AUTH": "",
    }


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=URL, assert_all_mocked=True, assert_all_called=True) as mock:
        yield mock


def echo_factory(request: httpx.Request) -> httpx.Response:
    made = Schematic.from_yaml(request.content)
    return httpx.Response(201, json={"id": made.id, "schematic": made.canonical()})


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_register_prints_id_and_file_with_one_post_per_body(
    runner: CliRunner, router: respx.MockRouter, env: dict[str, str], tmp_path: Path
) -> None:
    route = router.post("/schematics").mock(side_effect=echo_factory)
    a = write(tmp_path / "a.yaml", QEMU_BODY)
    b = write(tmp_path / "b.json", '{"customization": {}}')
    c = write(tmp_path / "c.yaml", QEMU_BODY.replace("  ", "    "))
    result = runner.invoke(app, ["register", str(a), str(b), str(c)], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{QEMU_ID}  {a}\n{EMPTY_ID}  {b}\n{QEMU_ID}  {c}\n"
    assert route.call_count == 2


def test_register_flag_overrides_environment(
    runner: CliRunner, env: dict[str, str], tmp_path: Path
) -> None:
    other = "https://other.example.test"
    with respx.mock(base_url=other, assert_all_mocked=True) as mock:
        route = mock.post("/schematics").mock(side_effect=echo_factory)
        a = write(tmp_path / "a.yaml", QEMU_BODY)
        result = runner.invoke(app, ["register", "--factory", other, str(a)], env=env)
    assert result.exit_code == 0, result.output
    assert route.call_count == 1


def test_register_400_is_one_message_exit_1(
    runner: CliRunner, router: respx.MockRouter, env: dict[str, str], tmp_path: Path
) -> None:
    router.post("/schematics").mock(return_value=httpx.Response(400, text="bad schematic"))
    a = write(tmp_path / "a.yaml", QEMU_BODY)
    result = runner.invoke(app, ["register", str(a)], env=env)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"talos-schematic: {URL}: {a}: POST /schematics: HTTP 400 Bad Request: bad schematic\n"
    )


def test_register_connection_refused_retries_then_exit_1(
    runner: CliRunner, router: respx.MockRouter, env: dict[str, str], tmp_path: Path
) -> None:
    route = router.post("/schematics").mock(side_effect=httpx.ConnectError("Connection refused"))
    a = write(tmp_path / "a.yaml", QEMU_BODY)
    result = runner.invoke(app, ["register", str(a)], env=env)
    assert result.exit_code == 1
    assert result.stderr == (
        f"talos-schematic: {URL}: {a}: POST /schematics: connection refused (after 4 attempts)\n"
    )
    assert route.call_count == 4


def test_register_invalid_file_makes_no_request(
    runner: CliRunner, env: dict[str, str], tmp_path: Path
) -> None:
    bad = write(tmp_path / "bad.yaml", "nope: 1\n")
    with respx.mock(assert_all_mocked=True) as mock:
        result = runner.invoke(app, ["register", str(bad), str(tmp_path / "missing.yaml")], env=env)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"talos-schematic: {bad}")
    assert mock.calls.call_count == 0


def test_register_never_prints_the_token(
    runner: CliRunner, router: respx.MockRouter, env: dict[str, str], tmp_path: Path
) -> None:
    route = router.post("/schematics").mock(
        return_value=httpx.Response(403, text=f"token {TOKEN} is not allowed")
    )
    a = write(tmp_path / "a.yaml", QEMU_BODY)
    result = runner.invoke(
        app, ["register", str(a)], env={**env, "TALOS_SCHEMATIC_FACTORY_TOKEN": TOKEN}
    )
    assert result.exit_code == 1
    assert route.calls.last.request.headers["authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in result.output
    assert "token *** is not allowed" in result.stderr


def test_owner_stamp_notice_goes_to_stderr_and_factory_id_to_stdout(
    runner: CliRunner, router: respx.MockRouter, env: dict[str, str], tmp_path: Path
) -> None:
    import hashlib

    stamped = "owner: team@example.com\n" + Schematic.from_yaml(QEMU_BODY).canonical()
    stamped_id = hashlib.sha256(stamped.encode()).hexdigest()
    router.post("/schematics").mock(
        return_value=httpx.Response(201, json={"id": stamped_id, "schematic": stamped})
    )
    a = write(tmp_path / "a.yaml", QEMU_BODY)
    result = runner.invoke(app, ["register", str(a)], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{stamped_id}  {a}\n"
    assert "added 'owner: team@example.com'" in result.stderr
    assert f"instead of the offline {QEMU_ID}" in result.stderr


def test_verify_directory_reports_and_exits_3_on_missing(
    runner: CliRunner, router: respx.MockRouter, env: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    (out / "pools").mkdir(parents=True)
    a = write(out / "pools" / "gpu.schematic.yaml", QEMU_BODY)
    b = write(out / "pools" / "cpu.schematic.yaml", "customization: {}\n")
    write(out / "values.yaml", "not: a schematic\n")
    router.get(f"/schematics/{QEMU_ID}").mock(
        return_value=httpx.Response(200, text=Schematic.from_yaml(QEMU_BODY).canonical())
    )
    router.get(f"/schematics/{EMPTY_ID}").mock(
        return_value=httpx.Response(404, text="schematic not found")
    )
    result = runner.invoke(app, ["verify", "--out", str(out)], env=env)
    assert result.exit_code == 3
    assert result.stdout == f"missing    {EMPTY_ID}  {b}\npresent    {QEMU_ID}  {a}\n"
    assert "1 of 2 schematics missing or different" in result.stderr


def test_verify_all_present_exits_0(
    runner: CliRunner, router: respx.MockRouter, env: dict[str, str], tmp_path: Path
) -> None:
    router.get(f"/schematics/{QEMU_ID}").mock(
        return_value=httpx.Response(200, text=Schematic.from_yaml(QEMU_BODY).canonical())
    )
    a = write(tmp_path / "a.yaml", QEMU_BODY)
    result = runner.invoke(app, ["verify", str(a)], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"present    {QEMU_ID}  {a}\n"


def test_verify_without_targets_is_a_usage_error(runner: CliRunner, env: dict[str, str]) -> None:
    result = runner.invoke(app, ["verify"], env=env)
    assert result.exit_code == 2


def test_verify_empty_directory_is_an_error(
    runner: CliRunner, env: dict[str, str], tmp_path: Path
) -> None:
    result = runner.invoke(app, ["verify", str(tmp_path)], env=env)
    assert result.exit_code == 1
    assert result.stderr == f"talos-schematic: {tmp_path}: no *.schematic.yaml files here\n"


def test_versions_lines_and_json(
    runner: CliRunner, router: respx.MockRouter, env: dict[str, str]
) -> None:
    router.get("/versions").mock(return_value=httpx.Response(200, json=["v1.12.0", "v1.13.9"]))
    lines = runner.invoke(app, ["versions"], env=env)
    as_json = runner.invoke(app, ["versions", "--json"], env=env)
    assert lines.stdout == "v1.12.0\nv1.13.9\n"
    assert json.loads(as_json.stdout) == ["v1.12.0", "v1.13.9"]


def test_versions_html_page_is_exit_1(
    runner: CliRunner, router: respx.MockRouter, env: dict[str, str]
) -> None:
    router.get("/versions").mock(
        return_value=httpx.Response(
            200, text="<html>login</html>", headers={"content-type": "text/html"}
        )
    )
    result = runner.invoke(app, ["versions"], env=env)
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"talos-schematic: {URL}: GET /versions: HTTP 200 OK with an HTML"
    )


LIVE = [
    {
        "name": "siderolabs/qemu-guest-agent",
        "ref": "ghcr.io/siderolabs/qemu-guest-agent:10.0.2",
        "digest": "sha256:" + "b" * 64,
        "author": "Sidero Labs",
        "description": "QEMU guest agent",
    },
    {
        "name": "siderolabs/nvidia-open-gpu-kernel-modules-production",
        "ref": "ghcr.io/siderolabs/nvidia-open-gpu-kernel-modules-production:595.91.07-v1.13.9",
        "digest": "sha256:" + "a" * 64,
        "author": "Sidero Labs",
        "description": "NVIDIA open GPU kernel modules",
    },
]


def test_extensions_live_lists_refs_and_fills_the_cache(
    runner: CliRunner, router: respx.MockRouter, env: dict[str, str], tmp_path: Path
) -> None:
    router.get("/version/v1.13.9/extensions/official").mock(
        return_value=httpx.Response(200, json=LIVE)
    )
    result = runner.invoke(app, ["extensions", "--talos", "v1.13.9", "--live"], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "siderolabs/nvidia-open-gpu-kernel-modules-production  "
        f"{LIVE[1]['ref']}  {LIVE[1]['digest']}",
        f"{'siderolabs/qemu-guest-agent':<52}  {LIVE[0]['ref']}  {LIVE[0]['digest']}",
    ]
    assert len(list((tmp_path / "cache" / "talos-schematic").glob("extensions-*.json"))) == 1


def test_extensions_live_json(
    runner: CliRunner, router: respx.MockRouter, env: dict[str, str]
) -> None:
    router.get("/version/v1.13.9/extensions/official").mock(
        return_value=httpx.Response(200, json=LIVE)
    )
    result = runner.invoke(app, ["extensions", "--talos", "v1.13.9", "--live", "--json"], env=env)
    assert json.loads(result.stdout) == [LIVE[1], LIVE[0]]


def test_extensions_live_unknown_version_exit_1(
    runner: CliRunner, router: respx.MockRouter, env: dict[str, str]
) -> None:
    router.get("/version/v9.9.9/extensions/official").mock(
        return_value=httpx.Response(404, text="version not found")
    )
    result = runner.invoke(app, ["extensions", "--talos", "v9.9.9", "--live"], env=env)
    assert result.exit_code == 1
    assert result.stderr == (
        f"talos-schematic: {URL}: Talos v9.9.9: the factory does not know this version "
        "(HTTP 404 Not Found: version not found)\n"
    )


def test_extensions_packaged_makes_no_request(runner: CliRunner, env: dict[str, str]) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        lines = runner.invoke(app, ["extensions", "--talos", "v1.13.9"], env=env)
        as_json = runner.invoke(app, ["extensions", "--talos", "v1.13.9", "--json"], env=env)
    assert lines.exit_code == 0, lines.output
    names = lines.stdout.splitlines()
    assert "siderolabs/qemu-guest-agent" in names
    assert "siderolabs/nvidia-open-gpu-kernel-modules-production" in names
    assert names == sorted(names)
    assert json.loads(as_json.stdout) == [{"name": name} for name in names]
    assert mock.calls.call_count == 0


def test_help_documents_the_credential_variables(runner: CliRunner) -> None:
    result = runner.invoke(app, ["register", "--help"], env={"COLUMNS": "200"})
    assert "TALOS_SCHEMATIC_FACTORY_TOKEN" in result.stdout
    assert "TALOS_SCHEMATIC_FACTORY_AUTH" in result.stdout


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from schematic.cli.base import progress_line

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress_line("registering") is None
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    show = progress_line("registering")
    assert show is not None
    show(1, 2)
    show(2, 2)
    assert terminal.getvalue() == "\rregistering 1/2\rregistering 2/2\n"
