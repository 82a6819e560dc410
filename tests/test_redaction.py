"""One redactor hides credentials before any text is quoted: triage's evidence in every format,
the factory client's messages, and the factory URL, which refuses credentials outside its
``user:password@`` part.

The secrets below are the forms real logs and pastes hold: a bearer token (kubelet and registry
errors echo ``Authorization`` headers), ``user:password@`` in a registry or proxy URL, a
``?token=`` query (presigned URLs), a ``;token=`` matrix parameter, a kubeconfig's ``token:``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.errors import FactoryError
from schematic.inputs.factory_url import refuse_userinfo, split_factory_url
from schematic.redact import redacted

register_all_commands()

SECRETS = ("hunter2pass", "eyJhbGciOiJIUzI1NiJ9payload", "s3cr3tvalue", "matrixsecret")
# A line TS103 quotes (proprietary modules on a GPU that needs the open ones; the form of
# tests/test_terminal_safety.py's NVRM line), with what a pasted log may hold after it.
NVRM = (
    "[   87.300000] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85) installed in this "
    "system requires use of the NVIDIA open kernel modules. pulled "
    "https://admin:hunter2pass@registry.example/v2/x?token=s3cr3tvalue "
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9payload ;token=matrixsecret"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://user:pa55@factory.example/x", "https://***@factory.example/x"),
        ("https://ghp_abcdefgh@github.com/x", "https://***@github.com/x"),
        ("GET /x?token=abc123&page=2", "GET /x?token=***&page=2"),
        ("GET /x;access_token=abc123", "GET /x;access_token=***"),
        ("Authorization: Bearer eyJhbGciOi.x.y", "Authorization: ***"),
        ("header bearer abcdefgh12345", "header bearer ***"),
        ('{"password": "hunter2", "user": "a"}', '{"password": "***", "user": "a"}'),
        ("AWS_SECRET_ACCESS_KEY=abcd", "AWS_SECRET_ACCESS_KEY=***"),
        ("    token: eyJhbGciOiJSUzI1NiIsImtpZCI6", "    token: ***"),
        ("client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVk", "client-key-data: ***"),
        ("key: LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0t", "key: ***"),
        # Must not fire: prose about tokens and keys, a URL without credentials.
        ("failed to get token: expired", "failed to get token: expired"),
        ("Loading of module with unavailable key is rejected", None),
        ("https://factory.talos.dev/image/abc/v1.13.9/metal-amd64.iso", None),
        ("services: 3 waiting; key=value pairs", None),
    ],
)
def test_redacted_hides_credentials_by_their_form(text: str, expected: str | None) -> None:
    assert redacted(text) == (text if expected is None else expected)


def test_redacted_hides_known_secrets_and_short_ones_only_standing_alone() -> None:
    assert redacted("sent abcdef to xabcdefx", ["abcdef"]) == "sent *** to x***x"
    assert redacted("ab and cab", ["ab"]) == "*** and cab"


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "sarif"])
def test_triage_quotes_evidence_without_its_credentials(tmp_path: Path, fmt: str) -> None:
    (tmp_path / "dmesg.txt").write_text(NVRM + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["triage", "-f", fmt, str(tmp_path)])
    assert result.exit_code == 3, result.stderr
    assert "TS103" in result.stdout
    for secret in SECRETS:
        assert secret not in result.stdout + result.stderr, (fmt, secret)
    # The line is still quoted, its credentials masked.
    assert "https://***@registry.example" in result.stdout
    if fmt == "json":
        [diagnosis] = json.loads(result.stdout)["diagnoses"]
        assert "Authorization: ***" in diagnosis["evidence"][0]["text"]


@pytest.mark.parametrize(
    "url",
    [
        "https://factory.example/;token=matrixsecret",
        "https://factory.example/path;token=matrixsecret/x",
        "https://factory.example/api_key=s3cr3tvalue",
        "https://factory.example/token/s3cr3tvalue",
        "https://factory.example/x/secret/s3cr3tvalue/",
    ],
)
def test_the_factory_url_refuses_a_credential_in_its_path(url: str) -> None:
    with pytest.raises(FactoryError) as raised:
        split_factory_url(url)
    assert "must not carry a credential in its path" in str(raised.value)
    assert "matrixsecret" not in str(raised.value) and "s3cr3tvalue" not in str(raised.value)
    with pytest.raises(ValueError, match="credential in its path"):
        refuse_userinfo(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://factory.talos.dev",
        "https://factory.example/talos/factory",
        "http://127.0.0.1:8080/",
    ],
)
def test_the_factory_url_takes_a_path_without_credentials(url: str) -> None:
    base, credentials = split_factory_url(url)
    assert base == url.rstrip("/") and credentials is None
    refuse_userinfo(url)


def test_user_info_is_taken_as_credentials_and_masked() -> None:
    base, credentials = split_factory_url("https://user:hunter2pass@factory.example/f")
    assert (base, credentials) == ("https://factory.example/f", ("user", "hunter2pass"))


# Words the patterns need, in the cases and look-alikes the case-insensitive match takes (U+017F
# for "s", U+212A for "k"), among text that holds none.
_PIECES = st.sampled_from(
    [
        "Authorization: ",
        "BEARER ",
        "basic ",
        "https://",
        "u:p@",
        "?ToKeN=",
        "password=",
        '"secret": "',
        "api_key=",
        "client-\u212aey-data: ",
        "pa\u017f\u017fword=",
        "PWD=",
        "signature=",
        "abcdefgh0123456789XYZ",
        " ",
        "\n",
        "é",
        "node-1: restarts 14, exit 255",
    ]
)


@settings(max_examples=400, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=12).map("".join))
def test_the_quick_check_skips_only_text_no_pattern_changes(text: str) -> None:
    # A text the redactor returns untouched by its quick check is one the patterns leave as
    # it is: the check never lets a credential through.
    from schematic.redact import _PATTERNS

    by_patterns = text
    for pattern, replacement in _PATTERNS:
        by_patterns = pattern.sub(replacement, by_patterns)
    assert redacted(text) == by_patterns
