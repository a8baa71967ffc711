"""Outbound endpoints' rules as pure functions: what operators may register, which events an
endpoint wants, what is sent, the backoff, and what an attempt's answer does to the endpoint."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks import Webhook

from core.model.endpoints import (
    KINDS,
    MOVES,
    Attempt,
    EndpointStatus,
    Filters,
    IllegalEndpointMove,
    RetryPolicy,
    Standing,
    after_attempt,
    check_move,
    cursor_before,
    ip_literal,
    new_secret,
    parse_kinds,
    parse_position,
    parse_roles,
    parse_threads,
    parse_url,
    payload,
    refusal,
    replayed,
    retry_after,
    task_scope,
)
from core.model.errors import InvalidInput

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
POLICY = RetryPolicy(base=1.0, cap=60.0, park_after=4)
ACTIVE = Standing(status=EndpointStatus.ACTIVE)


@pytest.mark.parametrize("current", list(EndpointStatus))
@pytest.mark.parametrize("wanted", list(EndpointStatus))
def test_every_move_is_allowed_exactly_when_the_table_says_so(
    current: EndpointStatus, wanted: EndpointStatus
) -> None:
    if wanted in MOVES[current]:
        check_move(current, wanted)
    else:
        with pytest.raises(IllegalEndpointMove):
            check_move(current, wanted)


@pytest.mark.parametrize(
    "url",
    ["https://hooks.example.com/in", "http://example.com:8080/a?b=c", "http://[2001:db8::1]/x"],
)
def test_http_urls_with_a_host_are_taken(url: str) -> None:
    assert parse_url(f"  {url} ") == url


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://example.com/", "http"),
        ("example.com/hook", "http"),
        ("https:///nohost", "host"),
        ("https://user:pw@example.com/", "credentials"),
        ("https://example.com/#frag", "fragment"),
        ("https://example.com:99999/", "valid"),
        ("https://exa mple.com/", "spaces"),
        (42, "http"),
    ],
)
def test_other_urls_are_refused_saying_why(url: object, says: str) -> None:
    with pytest.raises(InvalidInput, match=says) as caught:
        parse_url(url)
    assert caught.value.code == "invalid_url"


def test_kinds_default_to_all_and_must_be_known() -> None:
    assert parse_kinds(None) == frozenset(KINDS)
    assert parse_kinds(["task", "Message"]) == {"task", "message"}
    for bad in ([], ["messages"], "message", [1]):
        with pytest.raises(InvalidInput) as caught:
            parse_kinds(bad)
        assert caught.value.code == "invalid_kinds"


def test_roles_are_names_or_role_addresses_and_threads_are_ids() -> None:
    assert parse_roles(["concierge", "role:Ops"]) == {"concierge", "ops"}
    assert parse_roles(None) == frozenset()
    for bad in (["person:ann"], ["bad name"], "ops"):
        with pytest.raises(InvalidInput):
            parse_roles(bad)
    assert parse_threads(["01a22b10e73b78beb839c84f7b9bee99"]) == {
        "01a22b10e73b78beb839c84f7b9bee99"
    }
    with pytest.raises(InvalidInput):
        parse_threads(["../etc"])


def test_positions_are_whole_numbers_and_replay_is_inclusive() -> None:
    assert parse_position(None) is None
    assert parse_position(7) == 7
    for bad in (-1, True, 1.5, "3", 2**53):
        with pytest.raises(InvalidInput):
            parse_position(bad)
    assert cursor_before(None, head=12) == 12  # only what comes next
    assert cursor_before(5, head=12) == 4  # 5 is delivered again
    assert cursor_before(0, head=12) == cursor_before(1, head=12) == 0
    assert cursor_before(13, head=12) == 12
    with pytest.raises(InvalidInput, match="beyond"):
        cursor_before(14, head=12)


def test_a_secret_is_in_standard_webhooks_format_and_signs() -> None:
    secret = new_secret(bytes(range(32)))
    assert secret.startswith("whsec_")
    assert base64.b64decode(secret.removeprefix("whsec_")) == bytes(range(32))
    signature = Webhook(secret).sign("msg_1", NOW, "{}")
    assert signature.startswith("v1,")
    with pytest.raises(ValueError):
        new_secret(b"short")


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback address"),
        ("::1", "loopback address"),
        ("::ffff:127.0.0.1", "loopback address"),
        ("10.1.2.3", "private address"),
        ("192.168.0.10", "private address"),
        ("172.16.5.4", "private address"),
        ("169.254.169.254", "link-local address"),
        ("fe80::1%eth0", "link-local address"),
        ("fd00::1", "private address"),
        ("0.0.0.0", "unspecified address"),
        ("100.64.0.1", "non-global address"),
        ("224.0.0.1", "multicast address"),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
    ],
)
def test_only_global_addresses_are_reachable(address: str, why: str | None) -> None:
    assert refusal(address) == why


def test_ip_literals_are_told_from_names() -> None:
    assert ip_literal("127.0.0.1") == "127.0.0.1"
    assert ip_literal("[::1]") == "::1"
    assert ip_literal("::1") == "::1"
    assert ip_literal("localhost") is None
    assert ip_literal("example.com") is None


def test_filters_match_kinds_threads_and_roles_all_together() -> None:
    everything = Filters()
    assert everything.wants_timeline and everything.wants_tasks and not everything.scoped
    assert everything.wants_timeline_event("message", "t1", frozenset())

    narrow = Filters(
        kinds=frozenset({"message"}), roles=frozenset({"ops"}), threads=frozenset({"t1"})
    )
    assert narrow.wants_timeline_event("message", "t1", frozenset({"ops", "concierge"}))
    assert not narrow.wants_timeline_event("system", "t1", frozenset({"ops"}))
    assert not narrow.wants_timeline_event("message", "t2", frozenset({"ops"}))
    assert not narrow.wants_timeline_event("message", "t1", frozenset({"concierge"}))
    assert not narrow.wants_tasks

    tasks_of_ops = Filters(kinds=frozenset({"task"}), roles=frozenset({"ops"}))
    assert not tasks_of_ops.wants_timeline
    watched = task_scope(None, {}, frozenset({("t9", "ops")}))
    assert tasks_of_ops.wants_task_event(watched)
    unassigned = task_scope("ops", {"assignee": {"from": "ops", "to": None}}, frozenset())
    assert tasks_of_ops.wants_task_event(unassigned)
    handed_over = task_scope(
        "concierge", {"assignee": {"from": "ops", "to": "concierge"}}, frozenset()
    )
    assert tasks_of_ops.wants_task_event(handed_over)
    created_for = task_scope("concierge", {"assignee": "ops"}, frozenset())
    assert tasks_of_ops.wants_task_event(created_for)
    nobody = task_scope("concierge", {}, frozenset({("t9", "concierge")}))
    assert not tasks_of_ops.wants_task_event(nobody)
    in_thread = Filters(kinds=frozenset({"task"}), threads=frozenset({"t9"}))
    assert in_thread.wants_task_event(nobody)
    assert not in_thread.wants_task_event(created_for)


def test_the_payload_is_compact_json_with_the_events_time_and_data() -> None:
    body = payload("timeline.message", NOW, {"id": "e1", "text": "héllo"})
    assert body == (
        '{"type":"timeline.message","timestamp":"2026-11-30T12:00:00.000000Z",'
        '"data":{"id":"e1","text":"héllo"}}'
    )
    assert json.loads(body)["data"]["text"] == "héllo"


def test_the_backoff_doubles_up_to_the_cap_with_bounded_jitter() -> None:
    middle = [POLICY.delay(n, 0.5) for n in range(1, 9)]
    assert middle == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    assert POLICY.delay(3, 0.0) == pytest.approx(3.2)
    assert POLICY.delay(3, 0.999999) == pytest.approx(4.8, rel=1e-4)
    assert POLICY.delay(10, 0.999999) == 60.0  # never beyond the cap
    assert POLICY.delay(10_000, 0.5) == 60.0


def test_retry_after_reads_seconds_or_a_date_and_is_bounded() -> None:
    assert retry_after("3", NOW) == 3.0
    assert retry_after(None, NOW) is None
    assert retry_after("soon", NOW) is None
    assert retry_after("Mon, 30 Nov 2026 12:00:10 GMT", NOW) == 10.0
    assert retry_after("Mon, 30 Nov 2026 11:00:00 GMT", NOW) == 0.0
    assert retry_after("99999", NOW) == 3600.0


def test_a_delivery_clears_failures() -> None:
    failing = Standing(status=EndpointStatus.ACTIVE, failures=3, reason="x", next_attempt_at=NOW)
    after = after_attempt(failing, Attempt(status=204), now=NOW, policy=POLICY, jitter=0.5)
    assert after == ACTIVE


def test_failures_back_off_then_park_with_the_reason() -> None:
    standing = ACTIVE
    waits = []
    for _ in range(3):
        standing = after_attempt(standing, Attempt(status=500), now=NOW, policy=POLICY, jitter=0.5)
        assert standing.status is EndpointStatus.ACTIVE
        assert standing.next_attempt_at is not None
        waits.append((standing.next_attempt_at - NOW).total_seconds())
    assert waits == [1.0, 2.0, 4.0]
    assert standing.reason == "attempt 3 failed: HTTP 500"
    parked = after_attempt(
        standing, Attempt(error="cannot connect to x"), now=NOW, policy=POLICY, jitter=0.5
    )
    assert parked.status is EndpointStatus.PARKED and parked.failures == 4
    assert parked.next_attempt_at is None
    assert parked.reason == "parked after 4 failed attempts in a row; the last: cannot connect to x"
    with pytest.raises(IllegalEndpointMove):
        after_attempt(parked, Attempt(status=200), now=NOW, policy=POLICY, jitter=0.5)
    assert replayed(parked) == ACTIVE


def test_retry_after_is_honoured_and_410_disables() -> None:
    limited = after_attempt(
        ACTIVE, Attempt(status=429, retry_after=7.0), now=NOW, policy=POLICY, jitter=0.5
    )
    assert limited.next_attempt_at == NOW + timedelta(seconds=7)
    assert limited.reason == "attempt 1 failed: HTTP 429 (Retry-After 7 s)"
    gone = after_attempt(ACTIVE, Attempt(status=410), now=NOW, policy=POLICY, jitter=0.5)
    assert gone.status is EndpointStatus.DISABLED
    assert "410 Gone" in (gone.reason or "")
    assert replayed(gone) == ACTIVE
    moved = after_attempt(ACTIVE, Attempt(status=301), now=NOW, policy=POLICY, jitter=0.5)
    assert "redirects are not followed" in (moved.reason or "")
