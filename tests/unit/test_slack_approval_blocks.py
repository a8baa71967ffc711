"""The Block Kit of an approval (`channels/slack/approvals.py`), a pure function of the request:
within Slack's limits for the largest request an agent may make, nothing of the details lost,
text escaped, a button's action id naming what it answers, and the sentences people read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from channels.slack.approvals import (
    BUTTON_TEXT,
    CONTEXT_TEXT,
    Click,
    action_id,
    read_click,
    refusal,
    request_message,
    resolved_message,
    too_late,
)
from core.model.approvals import (
    MAX_DESCRIPTION_LENGTH,
    MAX_OPTION_LABEL,
    MAX_OPTIONS,
    MAX_TITLE_LENGTH,
    ApprovalOption,
    OptionKind,
    Outcome,
    Resolution,
    ToolCallAsked,
)
from core.model.participants import Address
from core.model.timeline import ApprovalRequested, EventId, ThreadId
from tests.approvals import ALLOW, REJECT, RESTART

SECTION_TEXT = 3_000
"""Slack's limit on a section's text (a context element's is `CONTEXT_TEXT`)."""
AT = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)


def _asked(**fields: Any) -> ApprovalRequested:
    given: dict[str, Any] = {
        "id": EventId("0" * 31 + "1"),
        "thread_id": ThreadId("t" * 32),
        "seq": 3,
        "position": 9,
        "at": AT,
        "author": Address("role:ops"),
        "run_id": "run1",
        "title": "Restart the web service?",
        "description": None,
        "options": (ALLOW, REJECT),
        "tool": None,
        "approvers": (),
        "expires_at": AT + timedelta(minutes=10),
    }
    return ApprovalRequested(**(given | fields))


def _texts(blocks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(block type, text) of every text a block shows."""
    found = []
    for block in blocks:
        if "text" in block:
            found.append((block["type"], block["text"]["text"]))
        for element in block.get("elements", []):
            text = element["text"]
            found.append((block["type"], text if isinstance(text, str) else text["text"]))
    return found


def test_the_largest_request_stays_within_slack_s_limits() -> None:
    labels = [f"{n}" * MAX_OPTION_LABEL for n in range(MAX_OPTIONS)]
    asked = _asked(
        title="<&>" * (MAX_TITLE_LENGTH // 3),
        description=("a&b <c> " * MAX_DESCRIPTION_LENGTH)[:MAX_DESCRIPTION_LENGTH],
        options=tuple(ApprovalOption(id=f"o{n}", label=label) for n, label in enumerate(labels)),
        tool=ToolCallAsked(name="execute", arguments={"command": "<x>" * 5_000}),
        approvers=tuple(Address(f"person:p{n}") for n in range(20)),
    )
    shown = request_message(asked, approvers=[f"Person {n}" for n in range(20)])
    for kind, text in _texts(shown.blocks):
        limit = {"section": SECTION_TEXT, "context": CONTEXT_TEXT, "actions": BUTTON_TEXT}[kind]
        assert 0 < len(text) <= limit, (kind, len(text))
    assert all(len(b["elements"]) <= 10 for b in shown.blocks if b["type"] == "context")
    [actions] = [b for b in shown.blocks if b["type"] == "actions"]
    assert len(actions["elements"]) == MAX_OPTIONS
    assert all(len(b["action_id"]) <= 255 for b in actions["elements"])
    assert "<" not in shown.blocks[0]["text"]["text"] and "<" not in shown.text


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from("ab &<\n"), max_size=MAX_DESCRIPTION_LENGTH))
def test_the_details_are_all_shown_within_the_limits(description: str) -> None:
    blocks = request_message(_asked(description=description), approvers=()).blocks
    details = [text for _, text in _texts(blocks[1:-2])]  # after the title, before the footer
    assert all(0 < len(text) <= CONTEXT_TEXT for text in details)
    escaped = description.replace("&", "&amp;").replace("<", "&lt;")
    assert "".join("".join(details).split()) == "".join(escaped.split())  # nothing lost or added


def test_a_request_shows_the_call_who_may_answer_and_buttons_by_kind() -> None:
    asked = _asked(
        description="It answers **502**.",
        tool=RESTART,
        options=(ALLOW, REJECT, ApprovalOption(id="later", label="Later")),
        approvers=(Address("person:ann"), Address("person:bo")),
    )
    shown = request_message(asked, approvers=["Ann", "Bo"])
    assert shown.text == "Restart the web service? (Allow once / Reject / Later)"
    assert [text for _, text in _texts(shown.blocks)] == [
        "*Restart the web service?*",
        "It answers *502*.",
        '```execute {"command": "systemctl restart web"}```',
        "Ann or Bo may answer · expires <!date^1777630200^{date_short_pretty} at {time}"
        "|2026-05-01 10:10 UTC>",
        "Allow once",
        "Reject",
        "Later",
    ]
    buttons = shown.blocks[-1]["elements"]
    assert [(b.get("style"), b["value"]) for b in buttons] == [
        ("primary", "allow"),
        ("danger", "reject"),
        (None, "later"),
    ]
    assert [read_click(b["action_id"]) for b in buttons] == [
        Click(asked.id, "allow"),
        Click(asked.id, "reject"),
        Click(asked.id, "later"),
    ]
    assert read_click(action_id("abc", "x:y")) == Click("abc", "x:y")
    assert [read_click(a) for a in ("approval:", "approval:abc", "other:a:b", None)] == [None] * 4


def test_the_outcome_replaces_the_buttons() -> None:
    asked = _asked(description="It answers 502s.")
    answered = Resolution(
        outcome=Outcome.ANSWERED, option=ALLOW, by=Address("person:ann"), channel="web"
    )
    shown = resolved_message(asked, answered, by_name="Ann <3")
    assert [b["type"] for b in shown.blocks] == ["section", "section", "section"]
    assert shown.blocks[-1]["text"]["text"] == "Answered *Allow once* by Ann &lt;3 (widget)"
    assert shown.text == "Restart the web service? (Answered Allow once by Ann &lt;3 (widget))"
    for outcome, said in [
        (Outcome.EXPIRED, "Expired unanswered"),
        (Outcome.CANCELLED, "Cancelled"),
    ]:
        shown = resolved_message(asked, Resolution(outcome=outcome), by_name=None)
        assert shown.blocks[-1]["text"]["text"] == said


def test_what_a_clicker_is_told() -> None:
    by_api = Resolution(
        outcome=Outcome.ANSWERED, option=REJECT, by=Address("person:ann"), channel="api"
    )
    assert too_late(by_api, mine=False, by_name="Ann") == (
        "Already answered by Ann through the API: “Reject”."
    )
    assert too_late(by_api, mine=True, by_name="Ann") == (
        "Already answered by you through the API: “Reject”."
    )
    assert too_late(Resolution(outcome=Outcome.EXPIRED), mine=False, by_name=None) == (
        "This request expired before anyone answered it."
    )
    assert too_late(None, mine=False, by_name=None) == (
        "This request is closed: it can no longer be answered."
    )
    assert refusal("not_an_approver", "…", approvers=["Ann", "Bo", "Cy"]) == (
        "Only Ann, Bo or Cy may answer this request."
    )
    assert (
        refusal("rate_limited", "slow <down>") == "That answer was not recorded: slow &lt;down&gt;"
    )
    assert OptionKind.CHOICE.allows is False
