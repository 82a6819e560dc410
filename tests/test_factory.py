"""The Image Factory client against respx-mocked factories: answers, faults, retries, counts."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
import respx

import schematic.factory.client as factory
from schematic.core.model import Schematic
from schematic.errors import CatalogError, FactoryError
from schematic.factory.client import (
    ExtensionInfo,
    FactoryClient,
    RetryPolicy,
    register_schematics,
    resolve_factory_url,
    verify_ids,
)

URL = "https://factory.example.test"
QEMU_BODY = (
    "customization:\n  systemExtensions:\n    officialExtensions:\n"
    "      - siderolabs/qemu-guest-agent\n"
)
QEMU_ID = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
QEMU_CANONICAL = (
    "customization:\n    systemExtensions:\n        officialExtensions:\n"
    "            - siderolabs/qemu-guest-agent\n"
)
EMPTY_ID = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
TOKEN = "s3cr3t-token-value"


def kernel_arg_schematic(n: int) -> Schematic:
    return Schematic.from_yaml(f"customization:\n  extraKernelArgs:\n    - test.n={n}\n")


def created(schematic: Schematic) -> httpx.Response:
    return httpx.Response(201, json={"id": schematic.id, "schematic": schematic.canonical()})


def echo_factory(request: httpx.Request) -> httpx.Response:
    """A well-behaved factory: hashes the body it receives."""
    return created(Schematic.from_yaml(request.content))


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def client(sleeps: Sleeps) -> Iterator[FactoryClient]:
    # jitter fixed at its top so the backoff sequence is exact.
    with FactoryClient(URL, environ={}, sleep=sleeps, jitter=lambda: 1.0) as made:
        yield made


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=URL, assert_all_mocked=True, assert_all_called=True) as mock:
        yield mock


@pytest.fixture
def qemu() -> Schematic:
    made = Schematic.from_yaml(QEMU_BODY)
    assert made.id == QEMU_ID
    return made


def test_public_api_is_pinned() -> None:
    assert sorted(factory.__all__) == sorted(
        [
            "AUTH_ENV",
            "DEFAULT_FACTORY_URL",
            "DEFAULT_MAX_REQUEST_TIME",
            "DEFAULT_MAX_RESPONSE_SIZE",
            "DEFAULT_RETRY",
            "FACTORY_ENV",
            "TOKEN_ENV",
            "ExtensionInfo",
            "FactoryClient",
            "OverlayInfo",
            "Registration",
            "RetryPolicy",
            "SchematicBody",
            "VerifyResult",
            "register_schematics",
            "resolve_factory_url",
            "verify_ids",
        ]
    )


# --- a healthy factory ---------------------------------------------------------------------


def test_register_sends_canonical_body_and_identifies_itself(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic
) -> None:
    route = router.post("/schematics").mock(
        return_value=httpx.Response(201, json={"id": QEMU_ID, "schematic": QEMU_CANONICAL})
    )
    registration = client.register(qemu, "pool gpu")
    assert registration.id == QEMU_ID
    assert registration.offline_id == QEMU_ID
    assert registration.canonical == QEMU_CANONICAL
    assert registration.notice == ""
    assert registration.subjects == ("pool gpu",)
    sent = route.calls.last.request
    assert sent.content == QEMU_CANONICAL.encode()
    assert sent.headers["user-agent"] == "talos-schematic/0.1.0"
    assert sent.headers["content-type"] == "application/yaml"
    assert "authorization" not in sent.headers


def test_older_factory_answering_only_the_id_is_accepted(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic
) -> None:
    router.post("/schematics").mock(return_value=httpx.Response(201, json={"id": QEMU_ID}))
    assert client.register(qemu, "f.yaml").id == QEMU_ID


def test_transport_can_be_injected_without_respx(qemu: Schematic) -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url}")
        return httpx.Response(201, json={"id": QEMU_ID})

    http = httpx.Client(transport=httpx.MockTransport(handler))
    with FactoryClient(f"{URL}/prefix/", client=http, environ={}) as injected:
        assert injected.url == f"{URL}/prefix"
        assert injected.register(qemu).id == QEMU_ID
    assert seen == [f"POST {URL}/prefix/schematics"]


# --- the factory's answer is checked -------------------------------------------------------


def test_enterprise_owner_stamp_makes_the_factory_id_win(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic
) -> None:
    stamped = "owner: alice@example.com\n" + QEMU_CANONICAL
    stamped_id = hashlib.sha256(stamped.encode()).hexdigest()
    router.post("/schematics").mock(
        return_value=httpx.Response(201, json={"id": stamped_id, "schematic": stamped})
    )
    registration = client.register(qemu, "pool gpu")
    assert registration.id == stamped_id
    assert registration.offline_id == QEMU_ID
    assert registration.canonical == stamped
    assert registration.factory_changed_body
    assert registration.notice == (
        f"{URL}: pool gpu: the factory stores a different body "
        f"(added 'owner: alice@example.com'), so its ID {stamped_id} is used instead of the "
        f"offline {QEMU_ID}"
    )


@pytest.mark.parametrize(
    ("stored", "change"),
    [
        # An owner, and an extension gone: not the schematic that was sent any more.
        ("owner: alice@example.com\ncustomization: {}\n", "removed"),
        # Another field than owner added.
        (QEMU_CANONICAL + "    bootloader: grub\n", "added 'bootloader: grub'"),
    ],
)
def test_a_body_changed_beyond_an_added_owner_is_an_error(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic, stored: str, change: str
) -> None:
    stored_id = hashlib.sha256(stored.encode()).hexdigest()
    router.post("/schematics").mock(
        return_value=httpx.Response(201, json={"id": stored_id, "schematic": stored})
    )
    with pytest.raises(FactoryError) as caught:
        client.register(qemu, "pool gpu")
    message = str(caught.value)
    assert message.startswith(
        f"{URL}: pool gpu: POST /schematics: the factory stores a body that differs from the "
        "one sent by more than an added owner ("
    )
    assert change in message
    assert message.endswith(f"under ID {stored_id}; nothing is written")


def test_same_body_but_other_id_is_an_error(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic
) -> None:
    router.post("/schematics").mock(
        return_value=httpx.Response(201, json={"id": EMPTY_ID, "schematic": QEMU_CANONICAL})
    )
    with pytest.raises(FactoryError) as caught:
        client.register(qemu, "pool gpu")
    assert str(caught.value) == (
        f"{URL}: pool gpu: POST /schematics: the factory stores the body that was sent but "
        f"answered ID {EMPTY_ID} instead of {QEMU_ID}; nothing is written"
    )


def test_other_id_without_a_body_is_an_error(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic
) -> None:
    router.post("/schematics").mock(return_value=httpx.Response(201, json={"id": EMPTY_ID}))
    with pytest.raises(FactoryError, match=f"answered ID {EMPTY_ID} for a body whose ID is"):
        client.register(qemu, "pool gpu")


def test_other_body_that_does_not_hash_to_the_answered_id_is_an_error(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic
) -> None:
    router.post("/schematics").mock(
        return_value=httpx.Response(
            201, json={"id": EMPTY_ID, "schematic": "owner: bob\n" + QEMU_CANONICAL}
        )
    )
    with pytest.raises(FactoryError, match="a body that does not hash to it"):
        client.register(qemu, "pool gpu")


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (
            httpx.Response(201, json={"schematic": QEMU_CANONICAL}),
            "POST /schematics: HTTP 201 Created without a schematic ID",
        ),
        (
            httpx.Response(201, json={"id": "not-an-id"}),
            "POST /schematics: HTTP 201 Created without a schematic ID",
        ),
        (
            httpx.Response(201, json=[QEMU_ID]),
            "POST /schematics: HTTP 201 Created without a schematic ID",
        ),
        (
            httpx.Response(
                201, text='{"id": "ce4c9805', headers={"content-type": "application/json"}
            ),
            "POST /schematics: HTTP 201 Created with malformed or truncated JSON",
        ),
        (
            httpx.Response(201, text="", headers={"content-type": "application/json"}),
            "malformed or truncated JSON .*: \\(empty body\\)",
        ),
        (
            httpx.Response(200, text="<!DOCTYPE html><html><body>Sign in</body></html>"),
            "POST /schematics: HTTP 200 OK with an HTML page instead of the factory's answer",
        ),
        (
            httpx.Response(201, json={"id": QEMU_ID, "schematic": 7}),
            "'schematic' is not a YAML string",
        ),
    ],
)
def test_malformed_answers_are_errors_naming_url_and_subject(
    client: FactoryClient,
    router: respx.MockRouter,
    qemu: Schematic,
    response: httpx.Response,
    message: str,
) -> None:
    route = router.post("/schematics").mock(return_value=response)
    with pytest.raises(FactoryError, match=f"^{URL}: pool gpu: .*{message}"):
        client.register(qemu, "pool gpu")
    assert route.call_count == 1


# --- status codes --------------------------------------------------------------------------


def test_400_shows_the_factorys_text_and_is_not_retried(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic, sleeps: Sleeps
) -> None:
    route = router.post("/schematics").mock(
        return_value=httpx.Response(
            400,
            text="error unmarshaling schematic: unknown field\n",
            headers={"content-type": "text/plain"},
        )
    )
    with pytest.raises(FactoryError) as caught:
        client.register(qemu, "gpu.schematic.yaml")
    assert str(caught.value) == (
        f"{URL}: gpu.schematic.yaml: POST /schematics: HTTP 400 Bad Request: "
        "error unmarshaling schematic: unknown field"
    )
    assert route.call_count == 1
    assert sleeps == []


def test_401_is_final_and_names_the_credential_variables(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic
) -> None:
    route = router.post("/schematics").mock(return_value=httpx.Response(401, text="unauthorized"))
    with pytest.raises(
        FactoryError, match="HTTP 401 Unauthorized \\(set TALOS_SCHEMATIC_FACTORY_TOKEN"
    ):
        client.register(qemu, "pool gpu")
    assert route.call_count == 1


def test_redirect_is_not_followed_but_reported(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic
) -> None:
    router.post("/schematics").mock(
        return_value=httpx.Response(
            301, headers={"location": "https://new.example.test/schematics"}
        )
    )
    with pytest.raises(
        FactoryError,
        match=re.escape("redirects to https://new.example.test/schematics; pass that URL"),
    ):
        client.register(qemu, "pool gpu")


@pytest.mark.parametrize("status", [500, 502, 503, 504, 429])
def test_transient_statuses_are_retried_until_success(
    client: FactoryClient,
    router: respx.MockRouter,
    qemu: Schematic,
    sleeps: Sleeps,
    status: int,
) -> None:
    route = router.post("/schematics").mock(
        side_effect=[httpx.Response(status), httpx.Response(status), created(qemu)]
    )
    assert client.register(qemu, "pool gpu").id == QEMU_ID
    assert route.call_count == 3
    assert sleeps == [0.5, 1.0]


def test_5xx_retries_stop_at_the_budget(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic, sleeps: Sleeps
) -> None:
    route = router.post("/schematics").mock(
        return_value=httpx.Response(503, text="upstream overloaded")
    )
    with pytest.raises(FactoryError) as caught:
        client.register(qemu, "pool gpu")
    assert str(caught.value) == (
        f"{URL}: pool gpu: POST /schematics: HTTP 503 Service Unavailable (after 4 attempts): "
        "upstream overloaded"
    )
    assert route.call_count == 4
    assert sleeps == [0.5, 1.0, 2.0]


def test_html_error_page_from_a_proxy_is_named_as_such(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic
) -> None:
    page = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    router.post("/schematics").mock(
        return_value=httpx.Response(502, text=page, headers={"content-type": "text/html"})
    )
    with pytest.raises(FactoryError) as caught:
        client.register(qemu, "pool gpu")
    message = str(caught.value)
    assert message.startswith(f"{URL}: pool gpu: POST /schematics: HTTP 502 Bad Gateway")
    assert "HTML page, not the factory's answer" in message
    assert "nginx" not in message


def test_backoff_has_full_jitter_and_a_cap(qemu: Schematic, router: respx.MockRouter) -> None:
    sleeps = Sleeps()
    policy = RetryPolicy(attempts=6, backoff=0.5, max_backoff=3.0)
    jitters = iter([0.5, 0.5, 0.5, 0.5, 0.5])
    route = router.post("/schematics").mock(return_value=httpx.Response(504))
    with (
        FactoryClient(
            URL, environ={}, retry=policy, sleep=sleeps, jitter=lambda: next(jitters)
        ) as c,
        pytest.raises(FactoryError, match="after 6 attempts"),
    ):
        c.register(qemu, "p")
    assert route.call_count == 6
    assert sleeps == [0.25, 0.5, 1.0, 1.5, 1.5]


def test_429_honours_retry_after_seconds(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic, sleeps: Sleeps
) -> None:
    router.post("/schematics").mock(
        side_effect=[httpx.Response(429, headers={"retry-after": "7"}), created(qemu)]
    )
    assert client.register(qemu, "pool gpu").id == QEMU_ID
    assert sleeps == [7.0]


def test_429_honours_retry_after_http_date(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic, sleeps: Sleeps
) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=8), usegmt=True)
    router.post("/schematics").mock(
        side_effect=[httpx.Response(429, headers={"retry-after": when}), created(qemu)]
    )
    client.register(qemu, "pool gpu")
    assert len(sleeps) == 1
    assert 5.0 <= sleeps[0] <= 8.0


def test_429_beyond_the_retry_budget_fails(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic, sleeps: Sleeps
) -> None:
    route = router.post("/schematics").mock(
        return_value=httpx.Response(429, headers={"retry-after": "2"}, text="slow down")
    )
    with pytest.raises(FactoryError) as caught:
        client.register(qemu, "pool gpu")
    assert str(caught.value) == (
        f"{URL}: pool gpu: POST /schematics: HTTP 429 Too Many Requests (after 4 attempts): "
        "slow down"
    )
    assert route.call_count == 4
    assert sleeps == [2.0, 2.0, 2.0]


def test_retry_after_longer_than_allowed_ends_retries_at_once(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic, sleeps: Sleeps
) -> None:
    route = router.post("/schematics").mock(
        return_value=httpx.Response(503, headers={"retry-after": "3600"}, text="maintenance")
    )
    with pytest.raises(FactoryError) as caught:
        client.register(qemu, "pool gpu")
    assert str(caught.value) == (
        f"{URL}: pool gpu: POST /schematics: HTTP 503 Service Unavailable (asked to retry "
        "after 3600 s, longer than the 10 s allowed; gave up after 1 attempt): maintenance"
    )
    assert route.call_count == 1
    assert sleeps == []


@pytest.mark.parametrize(("asked", "waits"), [("10", True), ("10.5", False)])
def test_retry_after_is_honoured_up_to_the_cap_and_not_beyond(
    client: FactoryClient,
    router: respx.MockRouter,
    qemu: Schematic,
    sleeps: Sleeps,
    asked: str,
    waits: bool,
) -> None:
    # The policy allows 10 s: a wait of exactly 10 s is taken, anything longer ends at once.
    assert client.retry.max_retry_after == 10.0
    route = router.post("/schematics").mock(
        side_effect=[httpx.Response(503, headers={"retry-after": asked}), created(qemu)]
    )
    if waits:
        assert client.register(qemu, "pool gpu").id == QEMU_ID
        assert sleeps == [10.0]
        assert route.call_count == 2
    else:
        with pytest.raises(FactoryError, match=r"after 10\.5 s, longer than the 10 s allowed"):
            client.register(qemu, "pool gpu")
        assert sleeps == []
        assert route.call_count == 1


# --- transport faults ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), "connection refused"),
        (
            httpx.ConnectError("[Errno -2] Name or service not known"),
            "cannot resolve the host name ([Errno -2] Name or service not known)",
        ),
        (httpx.ConnectTimeout("timed out"), "connection timed out"),
        (httpx.ReadTimeout("timed out"), "no answer before the read timeout"),
        (
            httpx.RemoteProtocolError(
                "peer closed connection without sending complete message body"
            ),
            "the connection broke mid-answer (peer closed connection without sending complete "
            "message body)",
        ),
    ],
)
def test_transport_faults_retry_then_fail_with_one_message(
    client: FactoryClient,
    router: respx.MockRouter,
    qemu: Schematic,
    sleeps: Sleeps,
    fault: Exception,
    reason: str,
) -> None:
    route = router.post("/schematics").mock(side_effect=fault)
    with pytest.raises(FactoryError) as caught:
        client.register(qemu, "pool gpu")
    assert str(caught.value) == f"{URL}: pool gpu: POST /schematics: {reason} (after 4 attempts)"
    assert caught.value.__cause__ is None
    assert route.call_count == 4
    assert sleeps == [0.5, 1.0, 2.0]


def test_a_transient_connection_error_is_recovered(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic
) -> None:
    route = router.post("/schematics").mock(
        side_effect=[httpx.ConnectError("Connection refused"), created(qemu)]
    )
    assert client.register(qemu, "p").id == QEMU_ID
    assert route.call_count == 2


# --- URLs and credentials ------------------------------------------------------------------


def test_resolve_factory_url_precedence() -> None:
    env = {"TALOS_SCHEMATIC_FACTORY": "https://env.example.test"}
    assert resolve_factory_url("https://flag.example.test", "https://c.test", env) == (
        "https://flag.example.test"
    )
    assert resolve_factory_url(None, "https://c.test", env) == "https://env.example.test"
    assert resolve_factory_url(None, "https://c.test", {}) == "https://c.test"
    assert resolve_factory_url(None, None, {}) == "https://factory.talos.dev"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "factory.talos.dev",
            "factory.talos.dev: not an http(s) Image Factory URL "
            "(did you mean https://factory.talos.dev?)",
        ),
        ("ftp://factory.example.test", "ftp://factory.example.test: not an http(s)"),
        ("https://f.example.test/?x=1", "must not carry a query"),
        ("https://f.example.test:99999", "invalid port"),
        ("https://user:pw@:1", "https://***@:1: not an http"),
        ("user:pw@factory.example.test", "***@factory.example.test: not an http(s)"),
    ],
)
def test_bad_factory_urls_are_rejected(url: str, message: str) -> None:
    with pytest.raises(FactoryError, match=re.escape(message)) as caught:
        FactoryClient(url, environ={})
    assert "pw" not in str(caught.value)


def test_bearer_token_is_sent_and_never_shown(router: respx.MockRouter, qemu: Schematic) -> None:
    route = router.post("/schematics").mock(
        return_value=httpx.Response(400, text=f"bad request from Bearer {TOKEN}")
    )
    env = {"TALOS_SCHEMATIC_FACTORY_TOKEN": TOKEN, "TALOS_SCHEMATIC_FACTORY_AUTH": "u:password1"}
    with FactoryClient(URL, environ=env) as c, pytest.raises(FactoryError) as caught:
        c.register(qemu, "pool gpu")
    assert route.calls.last.request.headers["authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in str(caught.value)
    assert "Bearer ***" in str(caught.value)


def test_basic_auth_from_environment(router: respx.MockRouter, qemu: Schematic) -> None:
    route = router.post("/schematics").mock(return_value=created(qemu))
    with FactoryClient(URL, environ={"TALOS_SCHEMATIC_FACTORY_AUTH": "ci:hunter22"}) as c:
        c.register(qemu)
    expected = httpx.BasicAuth("ci", "hunter22")._auth_header
    assert route.calls.last.request.headers["authorization"] == expected


def test_userinfo_in_url_becomes_basic_auth_and_is_stripped(
    router: respx.MockRouter, qemu: Schematic, sleeps: Sleeps
) -> None:
    route = router.post("/schematics").mock(side_effect=httpx.ConnectError("Connection refused"))
    authed = URL.replace("https://", "https://ci:p%40ss-word@")
    with FactoryClient(authed, environ={}, sleep=sleeps) as c:
        assert c.url == URL
        with pytest.raises(FactoryError) as caught:
            c.register(qemu, "pool gpu")
    assert route.calls.last.request.url == f"{URL}/schematics"
    expected = httpx.BasicAuth("ci", "p@ss-word")._auth_header
    assert route.calls.last.request.headers["authorization"] == expected
    message = str(caught.value)
    assert message.startswith(f"{URL}: pool gpu:")
    assert "p@ss-word" not in message and "p%40ss" not in message and "ci:" not in message


# --- many schematics -----------------------------------------------------------------------


def test_one_post_per_distinct_schematic_among_pools(
    client: FactoryClient, router: respx.MockRouter
) -> None:
    route = router.post("/schematics").mock(side_effect=echo_factory)
    distinct = [kernel_arg_schematic(n) for n in range(3)]
    pools = [(f"pool p{i}", distinct[i % 3]) for i in range(7)]
    registrations = register_schematics(client, pools)
    assert route.call_count == 3
    assert sorted(call.request.content for call in route.calls) == sorted(
        s.canonical().encode() for s in distinct
    )
    assert list(registrations) == [f"pool p{i}" for i in range(7)]
    assert registrations["pool p4"].id == distinct[1].id
    assert registrations["pool p4"].subjects == ("pool p1", "pool p4")


def test_no_items_means_no_requests(client: FactoryClient) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        assert register_schematics(client, []) == {}
        assert verify_ids(client, []) == []
    assert mock.calls.call_count == 0


def test_requests_in_flight_are_bounded(router: respx.MockRouter) -> None:
    lock = threading.Lock()
    in_flight = 0
    peak = 0

    def slow_factory(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.01)
        with lock:
            in_flight -= 1
        return echo_factory(request)

    route = router.post("/schematics").mock(side_effect=slow_factory)
    items = [(f"pool {n}", kernel_arg_schematic(n)) for n in range(24)]
    with FactoryClient(URL, environ={}, max_in_flight=3) as c:
        assert len(register_schematics(c, items)) == 24
    assert route.call_count == 24
    assert 1 < peak <= 3


def test_progress_is_reported_per_distinct_schematic(
    client: FactoryClient, router: respx.MockRouter
) -> None:
    router.post("/schematics").mock(side_effect=echo_factory)
    seen: list[tuple[int, int]] = []
    items = [(f"p{n}", kernel_arg_schematic(n % 3)) for n in range(5)]
    register_schematics(client, items, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_one_failure_fails_the_whole_registration(
    client: FactoryClient, router: respx.MockRouter
) -> None:
    bad = kernel_arg_schematic(99)

    def picky_factory(request: httpx.Request) -> httpx.Response:
        if request.content == bad.canonical().encode():
            return httpx.Response(400, text="invalid schematic")
        return echo_factory(request)

    router.post("/schematics").mock(side_effect=picky_factory)
    items = [("pool a", kernel_arg_schematic(1)), ("pool b", bad), ("pool c", bad)]
    with pytest.raises(FactoryError) as caught:
        register_schematics(client, items)
    assert str(caught.value).splitlines()[0] == (
        f"{URL}: pool b, pool c: POST /schematics: HTTP 400 Bad Request: invalid schematic"
    )


def test_schematics_skipped_after_a_failure_are_named_not_raised_as_cancelled(
    router: respx.MockRouter,
) -> None:
    bad = kernel_arg_schematic(0)

    def first_fails(request: httpx.Request) -> httpx.Response:
        if request.content == bad.canonical().encode():
            return httpx.Response(400, text="invalid schematic")
        return echo_factory(request)

    router.post("/schematics").mock(side_effect=first_fails)
    # One request at a time: whatever has not started when the first fails is cancelled.
    items = [(f"pool {n}", kernel_arg_schematic(n)) for n in range(20)]
    one_at_a_time = FactoryClient(URL, environ={}, max_in_flight=1)
    with one_at_a_time, pytest.raises(FactoryError) as caught:
        register_schematics(one_at_a_time, items)
    lines = str(caught.value).splitlines()
    assert lines[0] == f"{URL}: pool 0: POST /schematics: HTTP 400 Bad Request: invalid schematic"
    assert all(line.startswith("not registered after that failure: pool ") for line in lines[1:])


# --- verify --------------------------------------------------------------------------------


def test_verify_reports_present_missing_and_different(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic
) -> None:
    empty = Schematic.from_yaml("customization: {}\n")
    other = kernel_arg_schematic(5)
    present = router.get(f"/schematics/{QEMU_ID}").mock(
        return_value=httpx.Response(
            200, text=QEMU_CANONICAL, headers={"content-type": "application/yaml"}
        )
    )
    router.get(f"/schematics/{EMPTY_ID}").mock(
        return_value=httpx.Response(404, text="schematic not found")
    )
    router.get(f"/schematics/{other.id}").mock(
        return_value=httpx.Response(200, text="owner: eve\n" + other.canonical())
    )
    results = verify_ids(
        client,
        [
            ("pool a", QEMU_ID, qemu),
            ("pool b", QEMU_ID, None),
            ("pool c", EMPTY_ID, empty),
            ("pool d", other.id, other),
        ],
    )
    assert [(r.subject, r.status) for r in results] == [
        ("pool a", "present"),
        ("pool b", "present"),
        ("pool c", "missing"),
        ("pool d", "different"),
    ]
    assert results[3].detail == "the factory stores another body (added 'owner: eve')"
    assert present.call_count == 1


def test_verify_treats_an_html_404_as_an_error_not_as_missing(
    client: FactoryClient, router: respx.MockRouter, qemu: Schematic
) -> None:
    router.get(f"/schematics/{QEMU_ID}").mock(
        return_value=httpx.Response(404, text="<html>Not Found</html>")
    )
    with pytest.raises(FactoryError, match=f"^{URL}: pool a: GET /schematics/{QEMU_ID}: HTTP 404"):
        verify_ids(client, [("pool a", QEMU_ID, qemu)])


def test_verify_rejects_a_non_id_without_a_request(client: FactoryClient) -> None:
    with (
        respx.mock(assert_all_mocked=True),
        pytest.raises(FactoryError, match="not a schematic ID"),
    ):
        verify_ids(client, [("pool a", "../versions", None)])


# --- versions and extensions ---------------------------------------------------------------


def test_versions(client: FactoryClient, router: respx.MockRouter) -> None:
    router.get("/versions").mock(return_value=httpx.Response(200, json=["v1.12.0", "v1.13.9"]))
    assert client.versions() == ["v1.12.0", "v1.13.9"]


def test_versions_rejects_other_shapes(client: FactoryClient, router: respx.MockRouter) -> None:
    router.get("/versions").mock(return_value=httpx.Response(200, json={"versions": []}))
    with pytest.raises(FactoryError, match=f"^{URL}: GET /versions: expected a JSON list"):
        client.versions()


NVIDIA_OPEN = {
    "name": "siderolabs/nvidia-open-gpu-kernel-modules-production",
    "ref": "ghcr.io/siderolabs/nvidia-open-gpu-kernel-modules-production:595.91.07-v1.13.9",
    "digest": "sha256:" + "a" * 64,
    "author": "Sidero Labs",
    "description": "NVIDIA open GPU kernel modules",
}
QEMU_EXT = {
    "name": "siderolabs/qemu-guest-agent",
    "ref": "ghcr.io/siderolabs/qemu-guest-agent:10.0.2",
    "digest": "sha256:" + "b" * 64,
    "author": "Sidero Labs",
    "description": "QEMU guest agent",
    "newField": "ignored",
}


def test_official_extensions(client: FactoryClient, router: respx.MockRouter) -> None:
    router.get("/version/v1.13.9/extensions/official").mock(
        return_value=httpx.Response(200, json=[NVIDIA_OPEN, QEMU_EXT])
    )
    infos = client.official_extensions("1.13.9")
    assert infos[0] == ExtensionInfo(**NVIDIA_OPEN)
    assert infos[1].ref == "ghcr.io/siderolabs/qemu-guest-agent:10.0.2"


def test_unknown_version_is_a_catalog_error(
    client: FactoryClient, router: respx.MockRouter
) -> None:
    router.get("/version/v9.9.9/extensions/official").mock(
        return_value=httpx.Response(404, text="version not found")
    )
    with pytest.raises(CatalogError) as caught:
        client.official_extensions("v9.9.9")
    assert str(caught.value) == (
        f"{URL}: Talos v9.9.9: the factory does not know this version "
        "(HTTP 404 Not Found: version not found)"
    )


def test_malformed_extension_list(client: FactoryClient, router: respx.MockRouter) -> None:
    router.get("/version/v1.13.9/extensions/official").mock(
        return_value=httpx.Response(200, json=[{"name": "x"}])
    )
    with pytest.raises(
        FactoryError, match=re.escape("unexpected extension list (0.ref: Field required)")
    ):
        client.official_extensions("v1.13.9")


def test_version_is_checked_before_it_goes_into_a_path(client: FactoryClient) -> None:
    with respx.mock(assert_all_mocked=True), pytest.raises(CatalogError, match="not a Talos"):
        client.official_extensions("v1.13/../../x")
