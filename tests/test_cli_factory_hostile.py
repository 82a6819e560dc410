"""Credentials and hostile factory answers: one message, exit 1, no secret, nothing written.

Each case runs the command line against a respx-mocked factory (any unrouted request fails the
test), and checks the exit code, that stderr holds one message without the secret, and that
the output directory is as it was.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import respx
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands

register_all_commands()
URL = "https://factory.example.test"
pytestmark = pytest.mark.usefixtures("instant_retries")
QEMU_BODY = (
    "customization:\n  systemExtensions:\n    officialExtensions:\n"
    "      - siderolabs/qemu-guest-agent\n"
)
CLUSTER = f"""\
cluster: c
namespace: tenant-c
cozystack:
  version: osimage
talos:
  version: v1.13.9
  imageFactoryURL: {URL}
pools:
  - name: cpu
    profile: kubevirt-cpu
"""
SECRET = "s3cr3t-Token-value"


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
    with respx.mock(base_url=URL, assert_all_mocked=True, assert_all_called=False) as mock:
        yield mock


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A cluster file, a schematic file and an output directory an earlier run wrote."""
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "a.yaml").write_text(QEMU_BODY)
    result = CliRunner().invoke(
        app, ["generate", str(tmp_path / "cluster.yaml"), "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    return tmp_path


def snapshot(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and "cache" not in p.parts
    }


def invoke(args: list[str], env: dict[str, str]) -> Result:
    return CliRunner().invoke(app, args, env=env)


def one_message(result: Result, *secrets: str) -> str:
    lines = [
        line for line in result.stderr.splitlines() if not line.startswith("talos-schematic: note:")
    ]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    for secret in secrets:
        assert secret not in result.output
    return lines[0]


def commands(work: Path) -> list[list[str]]:
    """Every command that talks to a factory, each writing nothing when it fails."""
    return [
        ["register", str(work / "a.yaml")],
        ["versions"],
        ["extensions", "--talos", "v1.13.9", "--live"],
        ["verify", "--out", str(work / "out")],
        ["generate", str(work / "cluster.yaml"), "--out", str(work / "out"), "--register"],
    ]


@pytest.mark.parametrize(
    "token", [SECRET + "\r", SECRET + "\n", "tök" + SECRET, SECRET + " x", SECRET + "\x1b"]
)
def test_a_token_no_header_can_carry_is_refused_before_any_request(
    work: Path, env: dict[str, str], router: respx.MockRouter, token: str
) -> None:
    route = router.route().mock(return_value=httpx.Response(500))
    env["TALOS_SCHEMATIC_FACTORY_TOKEN"] = token
    before = snapshot(work)
    for args in commands(work):
        result = invoke(args, env)
        assert result.exit_code == 1, (args, result.output)
        message = one_message(result, SECRET, token)
        assert "TALOS_SCHEMATIC_FACTORY_TOKEN" in message
    assert route.call_count == 0
    assert snapshot(work) == before


def test_a_basic_credential_with_a_line_break_is_refused(
    work: Path, env: dict[str, str], router: respx.MockRouter
) -> None:
    route = router.route().mock(return_value=httpx.Response(500))
    env["TALOS_SCHEMATIC_FACTORY_AUTH"] = f"ci:{SECRET}\r"
    result = invoke(["versions"], env)
    assert result.exit_code == 1
    assert "TALOS_SCHEMATIC_FACTORY_AUTH" in one_message(result, SECRET)
    assert route.call_count == 0


@pytest.mark.parametrize("secret", ["ab", "xyz", "k"])
def test_short_secrets_echoed_by_the_factory_are_not_printed(
    work: Path, env: dict[str, str], router: respx.MockRouter, secret: str
) -> None:
    router.get("/versions").mock(
        return_value=httpx.Response(400, text=f"bad token {secret}; user ci:{secret} denied")
    )
    env["TALOS_SCHEMATIC_FACTORY_AUTH"] = f"ci:{secret}"
    result = invoke(["versions"], env)
    assert result.exit_code == 1
    message = one_message(result)
    assert f" {secret};" not in message and f":{secret} " not in message
    assert "bad token ***; user ***" in message


def test_a_token_echoed_by_the_factory_is_not_printed(
    work: Path, env: dict[str, str], router: respx.MockRouter
) -> None:
    router.get("/versions").mock(
        return_value=httpx.Response(400, text=f"Illegal header value b'Bearer {SECRET}'")
    )
    env["TALOS_SCHEMATIC_FACTORY_TOKEN"] = SECRET
    result = invoke(["versions"], env)
    assert result.exit_code == 1
    assert "***" in one_message(result, SECRET)


def test_a_bad_gzip_body_is_one_message(
    work: Path, env: dict[str, str], router: respx.MockRouter
) -> None:
    bad = httpx.Response(
        200, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"}
    )
    bad.stream = httpx.ByteStream(b"not gzip at all")
    router.route().mock(return_value=bad)
    before = snapshot(work)
    for args in commands(work):
        result = invoke(args, env)
        assert result.exit_code == 1, (args, result.output)
        assert "could not be decoded" in one_message(result)
    assert snapshot(work) == before


def test_deeply_nested_json_is_one_message(
    work: Path, env: dict[str, str], router: respx.MockRouter
) -> None:
    router.route().mock(
        return_value=httpx.Response(
            200, content=b"[" * 200_000, headers={"Content-Type": "application/json"}
        )
    )
    before = snapshot(work)
    for args in commands(work):
        result = invoke(args, env)
        if args[0] == "verify":
            # GET /schematics/{id} answers YAML: this body is simply not the schematic.
            assert result.exit_code == 3, result.output
            assert "Traceback" not in result.output
            continue
        assert result.exit_code == 1, (args, result.output)
        assert "JSON" in one_message(result)
    assert snapshot(work) == before


@pytest.mark.parametrize(
    "stored",
    [
        "x" * 1_000_000,
        QEMU_BODY + "  extraKernelArgs:\n" + "".join(f"    - a{n}\n" for n in range(20_000)),
    ],
    ids=["one 1 MB line", "20,000 lines added"],
)
def test_a_huge_stored_body_is_told_in_short_lines(
    work: Path, env: dict[str, str], router: respx.MockRouter, stored: str
) -> None:
    """verify names the first few changed lines, each cut short, and counts the rest."""
    router.get(url__regex=r"/schematics/[0-9a-f]{64}$").mock(
        return_value=httpx.Response(200, text=stored, headers={"Content-Type": "application/yaml"})
    )
    before = snapshot(work)
    result = invoke(["verify", "--out", str(work / "out")], env)
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output
    told = [line for line in result.stderr.splitlines() if "stores another body" in line]
    assert len(told) == 1, result.stderr
    assert "more)" in told[0]
    assert all(len(line) < 1_000 for line in result.stderr.splitlines()), result.stderr[:2_000]
    assert snapshot(work) == before


def test_a_gzip_bomb_is_decoded_to_one_message(
    work: Path, env: dict[str, str], router: respx.MockRouter
) -> None:
    # Well-formed gzip, valid start of JSON, then garbage: still one message.
    body = gzip.compress(b'{"id": "' + b"a" * 64 + b'"' + b" " * 1_000_000 + b"}}")
    router.post("/schematics").mock(
        return_value=httpx.Response(
            201,
            content=body,
            headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
        )
    )
    result = invoke(["register", str(work / "a.yaml")], env)
    assert result.exit_code == 1
    one_message(result)


@pytest.mark.parametrize(
    "factory",
    ["http://[::1", "http://[::1]:99999", "https://u:pw@[x", "http://ex ample.test", "http://\0x"],
)
def test_a_malformed_factory_url_is_one_message(
    work: Path, env: dict[str, str], factory: str
) -> None:
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as mock:
        route = mock.route().mock(return_value=httpx.Response(500))
        result = invoke(["versions", "--factory", factory], env)
        assert route.call_count == 0
    assert result.exit_code == 1, result.output
    assert "pw" not in one_message(result)


def test_image_factory_url_userinfo_is_never_written_or_printed(
    work: Path, env: dict[str, str]
) -> None:
    cluster = work / "secret-cluster.yaml"
    cluster.write_text(CLUSTER.replace("https://", f"https://ci:{SECRET}@"))
    before = snapshot(work)
    for args in (
        ["generate", str(cluster)],
        ["generate", str(cluster), "--out", str(work / "out")],
        ["check", str(cluster), "--out", str(work / "out")],
    ):
        result = invoke(args, env)
        assert result.exit_code == 1, result.output
        message = one_message(result, SECRET)
        assert "imageFactoryURL" in message and "TALOS_SCHEMATIC_FACTORY_AUTH" in message
    assert snapshot(work) == before
    assert not any(SECRET.encode() in data for data in snapshot(work / "out").values())
