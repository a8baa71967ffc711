"""Operator tokens and the audit trail's rules (`core.model.operators`, `core.model.audit`): pure,
no database."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from core.model.audit import ACTIONS, MAX_CLIENT, Action, retention
from core.model.errors import Conflict, InvalidInput, NotFound
from core.model.operators import (
    DEFAULT_OPERATOR,
    LAST_USED_EVERY,
    OperatorToken,
    check_new_name,
    check_revocable,
    check_token_name,
    due_for_last_used,
    new_operator_token,
    token_digest,
)

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def test_a_token_is_recognisable_random_and_stored_as_its_digest() -> None:
    tokens = {new_operator_token() for _ in range(100)}
    assert len(tokens) == 100
    for token in tokens:
        assert re.fullmatch(r"rco_[A-Za-z0-9_-]{43}", token), token
        digest = token_digest(token)
        assert re.fullmatch(r"[0-9a-f]{64}", digest)
        assert token not in digest
    assert token_digest("rco_x") == token_digest("rco_x") != token_digest("rco_y")


@pytest.mark.parametrize("name", ["ci", "alice-laptop", "a", "deploy.bot_2", "x" * 64])
def test_good_names(name: str) -> None:
    assert check_token_name(name) == name


@pytest.mark.parametrize("name", ["", "CI", "-ci", "a b", "x" * 65, "ci/", "é", None, 7])
def test_bad_names_are_refused_in_one_sentence(name: object) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_token_name(name)
    assert refused.value.code == "invalid_token_name"
    assert "\n" not in refused.value.message


def _token(name: str = "ci", revoked: bool = False) -> OperatorToken:
    return OperatorToken(name=name, created_at=NOW, revoked_at=NOW if revoked else None)


def test_a_name_names_one_token_forever_and_default_is_never_made() -> None:
    check_new_name("ci", None)
    with pytest.raises(Conflict) as taken:
        check_new_name("ci", _token())
    assert taken.value.code == "token_exists"
    with pytest.raises(Conflict) as revoked:
        check_new_name("ci", _token(revoked=True))
    assert "revoked" in revoked.value.message
    with pytest.raises(Conflict) as default:
        check_new_name(DEFAULT_OPERATOR, None)
    assert "ROLECALL_API_TOKEN" in default.value.message


def test_revoking_needs_a_token_not_revoked_yet() -> None:
    assert check_revocable("ci", _token()) == _token()
    with pytest.raises(NotFound) as missing:
        check_revocable("ci", None)
    assert missing.value.code == "token_not_found"
    with pytest.raises(Conflict) as again:
        check_revocable("ci", _token(revoked=True))
    assert again.value.code == "token_revoked"


def test_last_use_is_written_about_once_a_minute() -> None:
    assert due_for_last_used(None, NOW)
    assert not due_for_last_used(NOW - LAST_USED_EVERY + timedelta(seconds=1), NOW)
    assert due_for_last_used(NOW - LAST_USED_EVERY, NOW)


def test_a_listed_token_never_shows_the_token() -> None:
    shown = OperatorToken(name=DEFAULT_OPERATOR, created_at=NOW, last_used_at=NOW).to_json()
    assert shown == {
        "name": "default",
        "configured": True,
        "created_at": "2026-12-05T12:00:00.000000Z",
        "last_used_at": "2026-12-05T12:00:00.000000Z",
        "revoked_at": None,
    }


def test_an_action_is_one_the_trail_knows_with_storable_detail() -> None:
    done = Action(actor="ci", client="203.0.113.9", action="run.cancel", detail={"run_id": "r"})
    assert done.detail == {"run_id": "r"}
    with pytest.raises(InvalidInput) as unknown:
        Action(actor="ci", client="", action="run.explode")
    assert unknown.value.code == "invalid_action"
    with pytest.raises(InvalidInput):
        Action(actor="ci", client="", action="run.cancel", detail={"bad": "nul\x00"})
    long = Action(actor="ci", client="x" * 1000, action="run.cancel")
    assert len(long.client) == MAX_CLIENT
    assert all(re.fullmatch(r"[a-z]+\.[a-z_]+", name) for name in ACTIONS)


def test_retention_is_forever_unless_set() -> None:
    assert retention(None) is None
    assert retention(30) == timedelta(days=30)
    assert retention(0.5) == timedelta(hours=12)
