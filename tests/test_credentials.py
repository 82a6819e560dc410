"""Credentials are never printed or written, and a factory's strings never reach a terminal raw.

Each case names the secret it plants and checks every output (exit code, stdout, stderr, files
written) for it, in the forms a server could echo it back in.
"""

from __future__ import annotations

import importlib
import json
import os
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest
import respx
from typer.testing import CliRunner

from schematic.cli import app
from schematic.errors import FactoryError, printable
from schematic.factory.client import FactoryClient, RetryPolicy
from schematic.inputs.factory_url import (
    USERINFO_REFUSED,
    refuse_userinfo,
    split_factory_url,
    without_userinfo,
)

for _module in ("generate_command", "check_command", "factory_commands"):
    importlib.import_module(f"schematic.cli.{_module}")

URL = "https://factory.example.test"
EXAMPLES = Path(__file__).parent.parent / "examples"
# Passwords holding what a strict URL parser takes for the end of the user-info part.
PASSWORDS = ["Pa55/word", "Pa55?word", "Pa55#word", "Pa55@word", "Pa55:w/o?r#d"]
pytestmark = pytest.mark.usefixtures("instant_retries")


def secret_forms(secret: str) -> list[str]:
    return [
        secret,
        urllib.parse.quote(secret, safe=""),
        json.dumps(secret)[1:-1],
    ]


def assert_hidden(secret: str, *texts: str) -> None:
    for text in texts:
        for form in secret_forms(secret):
            assert form not in text, f"{form!r} shown in {text!r}"


def invoke(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, args, env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"escaped as {result.exception!r}") from result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def env(factory_env: dict[str, str]) -> dict[str, str]:
    """No factory, token or password from the environment; a private cache."""
    return factory_env


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=URL, assert_all_mocked=True, assert_all_called=False) as mock:
        yield mock


# --- the one parser --------------------------------------------------------------------------


@pytest.mark.parametrize("password", PASSWORDS)
def test_userinfo_runs_to_the_last_at_whatever_it_holds(password: str) -> None:
    url = f"https://admin:{password}@factory.example.test/prefix/"
    assert split_factory_url(url) == ("https://factory.example.test/prefix", ("admin", password))
    assert without_userinfo(url) == "https://***@factory.example.test/prefix/"
    with pytest.raises(ValueError) as refused:
        refuse_userinfo(url)
    assert str(refused.value) == USERINFO_REFUSED


@pytest.mark.parametrize("password", PASSWORDS)
@pytest.mark.parametrize(
    ("tail", "problem"),
    [
        ("factory.example.test:99999", "invalid port"),
        ("factory.example.test/?q=1", "query or fragment"),
        ("[::1", "not a valid URL"),
        ("", "not an http(s) Image Factory URL"),
        ("factory.example.test/\x1b[2J", "control character"),
    ],
)
def test_a_refused_factory_url_never_shows_its_password(
    password: str, tail: str, problem: str
) -> None:
    with pytest.raises(FactoryError) as caught:
        split_factory_url(f"http://admin:{password}@{tail}")
    assert problem in str(caught.value)
    assert_hidden(password, str(caught.value))


def test_a_url_without_userinfo_is_left_alone() -> None:
    refuse_userinfo("https://factory.example.test/prefix")
    assert without_userinfo("https://factory.example.test") == "https://factory.example.test"


# --- the command line ------------------------------------------------------------------------


@pytest.mark.parametrize("password", PASSWORDS)
@pytest.mark.parametrize("where", ["--factory", "environment"])
def test_a_password_in_the_factory_url_is_never_printed(
    password: str, where: str, env: dict[str, str], router: respx.MockRouter
) -> None:
    """The password reaches the factory as basic auth; a 401 echoing it shows none of it."""
    echoed = {
        "error": f"bad credentials for admin:{password}",
        "url": f"/login?pw={urllib.parse.quote(password, safe='')}",
    }
    route = router.get("/versions").mock(return_value=httpx.Response(401, json=echoed))
    url = f"https://admin:{password}@factory.example.test"
    args = ["versions"]
    if where == "--factory":
        args += ["--factory", url]
    else:
        env["TALOS_SCHEMATIC_FACTORY"] = url
    code, out, err = invoke(args, env)
    assert code == 1, err
    assert route.call_count == 1
    sent = route.calls[0].request.headers["authorization"]
    assert sent == httpx.BasicAuth("admin", password)._auth_header
    assert err.count("\n") == 1 and "HTTP 401" in err, err
    assert_hidden(password, out, err)


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_password_is_hidden_when_the_factory_url_is_refused(
    password: str, env: dict[str, str]
) -> None:
    env["TALOS_SCHEMATIC_FACTORY"] = f"http://admin:{password}@127.0.0.1:99999"
    code, out, err = invoke(["versions"], env)
    assert code == 1
    assert err == "talos-schematic: http://127.0.0.1:99999: the factory URL has an invalid port\n"
    assert_hidden(password, out, err)


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_cluster_file_url_with_credentials_is_refused_and_nothing_is_written(
    password: str, env: dict[str, str], tmp_path: Path
) -> None:
    text = (EXAMPLES / "cluster.yaml").read_text()
    plain = "imageFactoryURL: https://factory.talos.dev"
    assert plain in text
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        text.replace(plain, f"imageFactoryURL: https://admin:{password}@factory.talos.dev")
    )
    out = tmp_path / "out"
    code, stdout, err = invoke(["generate", str(cluster), "--out", str(out)], env)
    assert code == 1
    line = text.splitlines().index(f"  {plain}") + 1
    assert err == f"talos-schematic: {cluster}:{line}: talos.imageFactoryURL: {USERINFO_REFUSED}\n"
    assert_hidden(password, stdout, err)
    assert not out.exists()
    code, stdout, err = invoke(["generate", str(cluster)], env)
    assert code == 1
    assert_hidden(password, stdout, err)


@pytest.mark.parametrize("token", ['tok"en-with\\quote', "tok/en+with=base64/chars", "tøken"])
def test_a_token_echoed_json_escaped_or_url_encoded_is_redacted(
    token: str, env: dict[str, str], router: respx.MockRouter
) -> None:
    if not token.isascii():
        pytest.skip("a header carries ASCII only; refused before sending (tested elsewhere)")
    body = json.dumps(
        {
            "message": f"token {token} rejected",
            "echo": f"Authorization: Bearer {token}",
            "query": f"?token={urllib.parse.quote(token, safe='')}",
            "plus": f"?token={urllib.parse.quote_plus(token)}",
            "lower": "?token=" + urllib.parse.quote(token, safe="").lower(),
        }
    )
    router.get("/versions").mock(return_value=httpx.Response(403, text=body))
    env["TALOS_SCHEMATIC_FACTORY"] = URL
    env["TALOS_SCHEMATIC_FACTORY_TOKEN"] = token
    code, out, err = invoke(["versions"], env)
    assert code == 1 and "HTTP 403" in err
    assert_hidden(token, out, err)
    assert "quote" not in err or "***" in err


def test_a_non_ascii_password_echoed_escaped_is_redacted() -> None:
    password = "pässwörd/€"
    with (
        respx.mock(base_url=URL, assert_all_mocked=True) as mock,
        FactoryClient(URL, environ={"TALOS_SCHEMATIC_FACTORY_AUTH": f"admin:{password}"}) as fc,
    ):
        mock.get("/versions").mock(
            return_value=httpx.Response(
                401,
                text=json.dumps({"a": password, "b": password.replace("/", "\\/")})
                + urllib.parse.quote(password),
            )
        )
        with pytest.raises(FactoryError) as caught:
            fc.versions()
    message = str(caught.value)
    for form in (
        password,
        json.dumps(password)[1:-1],
        json.dumps(password)[1:-1].replace("/", "\\/"),
        urllib.parse.quote(password),
    ):
        assert form not in message, message


# --- a factory's strings -----------------------------------------------------------------------

ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x9b31m\r\x00"


def test_control_characters_from_the_factory_are_escaped_before_printing(
    env: dict[str, str], router: respx.MockRouter
) -> None:
    router.get("/versions").mock(
        return_value=httpx.Response(200, json=["v1.13.9", f"v1.14.0{ESCAPES}"])
    )
    env["TALOS_SCHEMATIC_FACTORY"] = URL
    code, out, err = invoke(["versions"], env)
    assert code == 0, err
    assert out.splitlines() == ["v1.13.9", f"v1.14.0{printable(ESCAPES)}"]
    assert not any(ch in out + err for ch in "\x1b\x07\x9b\r\x00")


def test_control_characters_from_the_factory_reach_neither_stdout_nor_the_cache(
    env: dict[str, str], router: respx.MockRouter, tmp_path: Path
) -> None:
    entry = {
        "name": f"siderolabs/evil{ESCAPES}",
        "ref": "ghcr.io/siderolabs/evil:1",
        "digest": "sha256:" + "0" * 64,
        "author": ESCAPES,
        "description": f"a {ESCAPES} b",
    }
    router.get("/version/v1.13.9/extensions/official").mock(
        return_value=httpx.Response(200, json=[entry])
    )
    env["TALOS_SCHEMATIC_FACTORY"] = URL
    for args in (["--live"], ["--live", "--json"]):
        code, out, err = invoke(["extensions", "--talos", "v1.13.9", *args], env)
        assert code == 0, err
        assert not any(ch in out + err for ch in "\x1b\x07\x9b\r\x00"), out
        assert printable(ESCAPES) in out or json.dumps(printable(ESCAPES))[1:-1] in out
    cached = list((tmp_path / "cache").rglob("*.json"))
    assert cached
    for path in cached:
        text = path.read_text()
        assert not any(ch in text for ch in "\x1b\x07\x9b\r\x00")
        assert not any(
            ch in json.dumps(json.loads(text), ensure_ascii=False) for ch in "\x1b\x07\x9b\r\x00"
        )


# --- the environment ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variables", "reason"),
    [
        ({"HTTPS_PROXY": "socks5://127.0.0.1:1"}, "socksio"),
        ({"HTTPS_PROXY": "socks5://admin:Pa55/word@127.0.0.1:1"}, "text is not shown"),
        ({"HTTPS_PROXY": "http://admin:Pa55/word@[::1"}, "InvalidURL"),
        ({"ALL_PROXY": "::::"}, "InvalidURL"),
        ({"SSL_CERT_FILE": "/nonexistent/ca.pem"}, "CA certificates cannot be read"),
    ],
)
def test_a_broken_proxy_or_ca_setting_is_one_message(
    variables: dict[str, str], reason: str, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    env["TALOS_SCHEMATIC_FACTORY"] = URL
    code, out, err = invoke(["versions"], {**env, **variables})
    assert code == 1
    assert err.count("\n") == 1, err
    assert err.startswith(f"talos-schematic: {URL}: cannot set up a connection"), err
    assert reason in err and next(iter(variables)) in err, err
    assert_hidden("Pa55/word", out, err)


# --- Retry-After -------------------------------------------------------------------------------


@pytest.mark.parametrize("days_ago", [1, 365 * 30])
def test_a_retry_after_date_in_the_past_means_retry_now(days_ago: int) -> None:
    """The real sleep is used: a negative wait would raise ValueError from time.sleep."""
    past = format_datetime(datetime.now(UTC) - timedelta(days=days_ago), usegmt=True)
    with respx.mock(base_url=URL, assert_all_mocked=True) as mock:
        route = mock.get("/versions").mock(
            side_effect=[
                httpx.Response(503, headers={"Retry-After": past}),
                httpx.Response(200, json=["v1.13.9"]),
            ]
        )
        with FactoryClient(URL, environ={}, retry=RetryPolicy(attempts=2)) as client:
            assert client.versions() == ["v1.13.9"]
    assert route.call_count == 2


def test_a_retry_after_date_in_the_past_asks_for_no_wait() -> None:
    past = format_datetime(datetime.now(UTC) - timedelta(hours=1), usegmt=True)
    waits: list[float] = []
    with respx.mock(base_url=URL, assert_all_mocked=True) as mock:
        mock.get("/versions").mock(
            side_effect=[
                httpx.Response(429, headers={"Retry-After": past}),
                httpx.Response(200, json=[]),
            ]
        )
        with FactoryClient(URL, environ={}, sleep=waits.append) as client:
            assert client.versions() == []
    assert waits == [0.0]


def test_no_secret_is_left_in_the_environment_of_these_tests() -> None:
    assert "Pa55" not in os.environ.get("TALOS_SCHEMATIC_FACTORY", "")
