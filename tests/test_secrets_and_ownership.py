"""Secrets at a cut, credentials in a factory URL, a planted journal, problems by the thousand.

- A server's text is cut to a snippet only after its secrets are hidden, and a cut that ends in
  the first characters of a secret loses them: no prefix of a token or of ``user:password``
  (or its base64) is shown, wherever the cut falls.
- A factory URL that reaches stdout or a file never carries ``user:password@``, a query or a
  fragment (where a token travels).
- A planted journal cannot claim a user's empty file or empty folder.
- A file with a problem on each of 16,000 keys is reported in one message, the first problems
  by line and a count of the rest.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import respx
import yaml
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic
from schematic.errors import ClusterFileError, FactoryError
from schematic.factory.client import (
    MAX_LIST_RESPONSE_SIZE,
    FactoryClient,
    RetryPolicy,
    verify_ids,
)
from schematic.inputs.cluster_file import load_cluster
from schematic.inputs.reading import MAX_PROBLEMS
from schematic.output.disk import JOURNAL, digest, recover
from schematic.safe_yaml import INPUT_LIMITS, InputKind

register_all_commands()

URL = "https://factory.example.test"
TOKEN = "T0kenS3cretValueABCDEFGHIJKLMNOP"
PAIR = "admin:Sup3rS3cretPass"
QEMU = Schematic.from_yaml(
    "customization:\n  systemExtensions:\n    officialExtensions:\n"
    "      - siderolabs/qemu-guest-agent\n"
)
EXAMPLE = Path(__file__).parent.parent / "examples" / "cluster.yaml"


def _prefixes(secret: str) -> list[str]:
    # Four characters of a secret are already a clue; shorter ones are ordinary text.
    return [secret[:length] for length in range(4, len(secret) + 1)]


def _client(**secret: str) -> FactoryClient:
    environ = {}
    if "token" in secret:
        environ["TALOS_SCHEMATIC_FACTORY_TOKEN"] = secret["token"]
    if "auth" in secret:
        environ["TALOS_SCHEMATIC_FACTORY_AUTH"] = secret["auth"]
    return FactoryClient(URL, environ=environ, retry=RetryPolicy(attempts=1, backoff=0.0))


def _padded(secret: str, offset: int) -> str:
    """A server's error body with ``secret`` echoed at ``offset`` characters in."""
    return "e" * offset + secret + " and more text after it " * 20


# Offsets that put the secret across the 300-character cut (the message's own words come
# first, so the exact place is not known here: a range around it covers every split).
STRADDLING = range(200, 320, 3)


def _echoed_forms() -> list[tuple[dict[str, str], str, list[str]]]:
    encoded = base64.b64encode(PAIR.encode()).decode()
    return [
        ({"token": TOKEN}, f"Bearer {TOKEN}", _prefixes(TOKEN)),
        ({"auth": PAIR}, f"Basic {encoded}", _prefixes(encoded) + _prefixes(PAIR)),
        ({"auth": PAIR}, PAIR, _prefixes("Sup3rS3cretPass")),
    ]


@pytest.mark.parametrize(("secret", "echo", "forbidden"), _echoed_forms())
def test_no_prefix_of_a_secret_survives_a_cut_in_versions_and_register(
    secret: dict[str, str], echo: str, forbidden: list[str]
) -> None:
    body = ""

    def answer(status: int) -> Callable[[httpx.Request], httpx.Response]:
        return lambda request: httpx.Response(status, text=body)

    # One client for every offset: the server's answer is what changes.
    with respx.mock(base_url=URL) as router, _client(**secret) as client:
        router.get("/versions").mock(side_effect=answer(403))
        router.post("/schematics").mock(side_effect=answer(400))
        router.get("/version/v1.13.9/extensions/official").mock(side_effect=answer(403))
        for offset in STRADDLING:
            body = _padded(echo, offset)
            messages = []
            for call in (
                client.versions,
                lambda: client.register(QEMU),
                lambda: client.official_extensions("v1.13.9"),
            ):
                with pytest.raises(FactoryError) as raised:
                    call()
                messages.append(str(raised.value))
            for message in messages:
                assert "…" in message, message  # the cut did happen
                for prefix in forbidden:
                    assert prefix not in message, (offset, prefix, message)


def test_no_prefix_of_a_secret_survives_verify_cutting_a_changed_line() -> None:
    stored = ""
    with respx.mock(base_url=URL) as router, _client(token=TOKEN) as client:
        router.get(f"/schematics/{QEMU.id}").mock(
            side_effect=lambda request: httpx.Response(200, text=stored)
        )
        for offset in range(30, 80):
            stored = QEMU.canonical().replace(
                "siderolabs/qemu-guest-agent", f"siderolabs/{'x' * offset}-Bearer-{TOKEN}-tail"
            )
            [result] = verify_ids(client, [("pool", QEMU.id, QEMU)])
            assert result.status == "different"
            for prefix in _prefixes(TOKEN):
                assert prefix not in result.detail, (offset, result.detail)


# --- credentials in a factory URL ------------------------------------------------------------


def run(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"TALOS_SCHEMATIC_FACTORY": ""})
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


SCHEMATIC_ID = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"


def test_urls_never_prints_user_and_password() -> None:
    code, out, err = run(
        "urls", SCHEMATIC_ID, "--talos", "v1.13.9", "--factory", "https://admin:Pa55@f.example"
    )
    assert code == 0, err
    assert "Pa55" not in out + err and "admin" not in out + err
    assert "https://f.example/image/" in out


@pytest.mark.parametrize(
    "factory", ["https://f.example/?token=T0ken5ecret", "https://f.example/#T0ken5ecret"]
)
def test_urls_refuses_a_query_or_fragment_without_echoing_it(factory: str) -> None:
    code, out, err = run("urls", SCHEMATIC_ID, "--talos", "v1.13.9", "--factory", factory)
    assert code == 1
    assert out == ""
    assert "T0ken5ecret" not in err and "query or fragment" in err


@pytest.mark.parametrize(
    "url",
    [
        "https://f.example/?token=T0ken5ecret",
        "https://f.example/#T0ken5ecret",
        "https://f.example/path?x=1&token=T0ken5ecret",
    ],
)
def test_a_token_in_image_factory_url_is_refused_before_anything_is_written(
    tmp_path: Path, url: str
) -> None:
    text = EXAMPLE.read_text()
    document = yaml.safe_load(text)
    document["talos"]["imageFactoryURL"] = url
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(document))
    code, out, err = run("generate", str(cluster), "--out", str(tmp_path / "out"))
    assert code == 1
    assert "T0ken5ecret" not in out + err
    assert "imageFactoryURL" in err and "query" in err
    assert not (tmp_path / "out").exists()


# --- a planted journal ----------------------------------------------------------------------


def test_a_planted_journal_removes_no_empty_file_or_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, _, err = run("generate", str(EXAMPLE), "--out", str(out))
    assert code == 0, err
    (out / ".gitkeep").write_bytes(b"")
    (out / "docs").mkdir()
    (out / "docs" / "__init__.py").write_bytes(b"")
    (out / "empty").mkdir()
    junk = "0" * 64
    (out / JOURNAL).write_text(
        "talos-schematic journal 2\n"
        "dir docs\ndir empty\n"
        f"write {junk} docs/__init__.py\n"
        f"remove {junk} .gitkeep\n"
        f"temp {junk} .gitkeep\n"
        f"write {junk} gitkeep\n"
        f"temp {junk} .gitkeep.0123abcd.tmp\n"
        f"write {junk} empty/x\n"
        "end\n"
    )
    code, _, err = run("generate", str(EXAMPLE), "--out", str(out))
    assert code == 0, err
    assert (out / ".gitkeep").exists()
    assert (out / "docs" / "__init__.py").exists()
    assert (out / "empty").is_dir()
    assert "removed pool" not in err


def _killed_while_adding(out: Path, folder: str, identity: str | None = None) -> None:
    """What a run killed right after making a new pool's folder leaves: the empty folder and
    the journal recording it (its device and inode, or ``identity`` for a planted journal)."""
    (out / folder).mkdir()
    info = (out / folder).stat()
    made = identity or f"{info.st_dev}:{info.st_ino}"
    (out / JOURNAL).write_text(
        f"talos-schematic journal 2\ndir {folder}\nmade {made} {folder}\n"
        f"write {'0' * 64} {folder}/values.yaml\nend\n"
    )


@pytest.fixture
def generated(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    code, _, err = run("generate", str(EXAMPLE), "--out", str(out))
    assert code == 0, err
    return out


def test_a_folder_a_killed_run_made_is_reported_by_check_and_removed_by_the_next_run(
    generated: Path,
) -> None:
    out = generated
    _killed_while_adding(out, "gpu-new")
    code, _, err = run("check", str(EXAMPLE), "--out", str(out))
    assert code == 3, err
    assert "left by a killed run: gpu-new/" in err
    code, _, err = run("generate", str(EXAMPLE), "--out", str(out))
    assert code == 0, err
    assert not (out / "gpu-new").exists()
    code, _, err = run("check", str(EXAMPLE), "--out", str(out))
    assert code == 0, err


def test_a_planted_journal_cannot_prove_a_users_empty_folder_made_by_the_tool(
    generated: Path,
) -> None:
    # The journal names the folder, but not the device and inode it has: not the tool's.
    out = generated
    _killed_while_adding(out, "mine", identity="1:1")
    code, _, err = run("check", str(EXAMPLE), "--out", str(out))
    assert (code, "left by a killed run" in err) == (0, False), err
    code, _, err = run("generate", str(EXAMPLE), "--out", str(out))
    assert code == 0, err
    assert (out / "mine").is_dir()


@pytest.mark.parametrize("padding", [0, INPUT_LIMITS[InputKind.OUTPUT_RECORD]])
def test_a_journal_past_its_limit_is_not_acted_on(tmp_path: Path, padding: int) -> None:
    # Within its limit a journal's temporary file (its digest proving it the tool's) is
    # cleaned up; past it, the journal is not read at all, and nothing is removed.
    (tmp_path / ".values.yaml.0123abcd.tmp").write_bytes(b"x")
    recorded = digest(b"x")
    (tmp_path / JOURNAL).write_text(
        "talos-schematic journal 2\n"
        f"write {recorded} values.yaml\n"
        f"temp {recorded} .values.yaml.0123abcd.tmp\n" + "#\n" * (padding // 2) + "end\n"
    )
    claims = recover(tmp_path)
    assert (tmp_path / ".values.yaml.0123abcd.tmp").exists() == bool(padding)
    assert claims == ({} if padding else {"values.yaml": frozenset({recorded})})


# --- problems by the thousand ---------------------------------------------------------------


def test_sixteen_thousand_unknown_keys_are_one_message_first_by_line(tmp_path: Path) -> None:
    cluster = tmp_path / "uk.yaml"
    cluster.write_text("".join(f"k{i}: 1\n" for i in range(16_000)))
    with pytest.raises(ClusterFileError) as raised:
        load_cluster(cluster)
    lines = str(raised.value).splitlines()
    assert len(lines) == MAX_PROBLEMS + 1
    numbers = [int(line.split(":")[1]) for line in lines[:-1] if line.count(":") > 1]
    assert numbers == sorted(numbers)
    assert lines[-1].startswith("… and ") and lines[-1].endswith(" more problems")
    left = int(lines[-1].split()[2])
    shown = len(lines) - 1
    # Every unknown key (and the missing ones the reader also names) is shown or counted.
    assert shown + left >= 16_000


def test_a_line_is_found_for_each_problem_as_before(tmp_path: Path) -> None:
    cluster = tmp_path / "c.yaml"
    cluster.write_text(
        "cluster: c\ntalos: {version: v1.13.9}\npools:\n  - name: gpu\n    bogus: 1\n"
        "    profile: kubevirt-cpu\n    other: 2\n"
    )
    with pytest.raises(ClusterFileError) as raised:
        load_cluster(cluster)
    message = str(raised.value)
    assert f"{cluster}:5:" in message and f"{cluster}:7:" in message
    assert json.dumps(message)  # one string, whatever it holds


# --- a large well-formed factory answer -------------------------------------------------------


def _names(count: int) -> bytes:
    return json.dumps([{"name": f"siderolabs/x{i}"} for i in range(count)]).encode()


def test_an_extension_list_past_its_limit_is_refused_unread() -> None:
    body = _names(60_000)  # about 1.6 MB: a real list is tens of kilobytes
    assert len(body) > MAX_LIST_RESPONSE_SIZE
    with respx.mock(base_url=URL) as router:
        router.get("/version/v1.13.9/extensions/official").mock(
            return_value=httpx.Response(200, content=body)
        )
        router.get("/versions").mock(return_value=httpx.Response(200, content=body))
        with _client() as client:
            for call in (lambda: client.official_extensions("v1.13.9"), client.versions):
                with pytest.raises(FactoryError, match="larger than the 1 MiB a list may be"):
                    call()


def test_an_extension_list_within_its_limit_is_read() -> None:
    digest = "sha256:" + "0" * 64
    body = json.dumps(
        [{"name": f"siderolabs/x{i}", "ref": f"r:{i}", "digest": digest} for i in range(5_000)]
    ).encode()
    assert len(body) < MAX_LIST_RESPONSE_SIZE
    with respx.mock(base_url=URL) as router:
        router.get("/version/v1.13.9/extensions/official").mock(
            return_value=httpx.Response(200, content=body)
        )
        with _client() as client:
            assert len(client.official_extensions("v1.13.9")) == 5_000


def test_a_profile_of_twenty_thousand_unknown_keys_is_one_message(tmp_path: Path) -> None:
    # Each unknown key kept gets a "did you mean" hint; those past the kept ones are counted
    # without searching for one (the search for every key took a minute).
    from schematic.errors import ProfileError
    from schematic.inputs.profiles import load_profile

    profile = tmp_path / "p.yaml"
    # (20,000 keys: about 170 kB, under a profile's size limit)
    profile.write_text("".join(f"k{i}: 1\n" for i in range(20_000)))
    with pytest.raises(ProfileError) as raised:
        load_profile(str(profile))
    assert str(raised.value).splitlines()[-1].endswith(" more problems")
