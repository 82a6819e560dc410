"""Which factory, and its URL without credentials; importing it never loads httpx."""

from __future__ import annotations

import subprocess
import sys

import pytest

from schematic.errors import FactoryError
from schematic.inputs import factory_url
from schematic.inputs.factory_url import split_factory_url


def test_public_api_is_pinned() -> None:
    assert sorted(factory_url.__all__) == [
        "DEFAULT_FACTORY_URL",
        "FACTORY_ENV",
        "PATH_CREDENTIAL_REFUSED",
        "QUERY_REFUSED",
        "USERINFO_REFUSED",
        "refuse_userinfo",
        "resolve_factory_url",
        "split_factory_url",
        "without_userinfo",
    ]


def test_userinfo_is_split_off_and_the_trailing_slash_dropped() -> None:
    assert split_factory_url(" https://u%40x:p%3Aw@factory.example.test/prefix/ ") == (
        "https://factory.example.test/prefix",
        ("u@x", "p:w"),
    )
    assert split_factory_url("http://127.0.0.1:8080") == ("http://127.0.0.1:8080", None)


def test_bad_port_is_a_factory_error() -> None:
    with pytest.raises(FactoryError, match="invalid port"):
        split_factory_url("https://factory.example.test:99999")


def test_importing_it_does_not_load_httpx() -> None:
    program = "import sys, schematic.inputs.factory_url\nprint('httpx' in sys.modules)\n"
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (0, "False\n"), done.stderr
