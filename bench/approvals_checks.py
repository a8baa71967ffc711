"""The approvals benchmark's exactly-once checks (`bench.approvals`, step 3), counted from what
the committed-event stream showed and what the answers got back; nothing here asks the gateway.

Exactly once means: every approval resolved once, answered `yes` by its conversation's person;
every conversation asked once and replied to once, `Answered: Yes.`, after the resolution; every
double click one 200 and one 409 `approval_closed`, every other first answer a 200, none a 5xx;
every second answer a 409 `approval_closed`, and no event committed between the markers around
them. `check` gives the counts (`Checks`) and says each that is not that in a line
(`wrong_counts`), with what the statuses and the events past the second answers show.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.approvals_client import Burst, Committed, Event, Sent


@dataclass(frozen=True, slots=True)
class Checks:
    """The exactly-once counts."""

    approvals: int
    resolved_once: int
    resolved_twice: int
    not_resolved: int
    not_answered_yes: int
    asked_twice: int
    replied_once: int
    replied_twice: int
    replies_wrong: int
    """Replies that do not say `Answered: Yes.` or come before their approval's resolution."""
    double_clicks: int
    double_clicks_once: int
    """Double clicks answered with one 200 and one 409 `approval_closed`."""
    second_answers: int
    second_answers_closed: int
    """Second answers refused with 409 `approval_closed`."""
    events_after_second: int
    """Events committed between the two markers around the second answers (0: none added)."""


def check(
    stream: Committed,
    approvals: Mapping[str, str],
    people: Mapping[str, str],
    *,
    answers: Burst,
    double_clicks: int,
    again: Burst,
    between: Sequence[Event],
) -> tuple[Checks, list[str]]:
    """The exactly-once counts of the conversations whose questions are `approvals`
    (conversation → approval), each answered by its person in `people` (approval → person, in
    the conversations' order), from the stream and the answers; and each wrong one, said in a
    line."""
    resolved = {a: stream.resolved.get(a, []) for a in people}
    wrong_answers = sum(
        1
        for a, events in resolved.items()
        for e in events
        if (e["outcome"], (e["option"] or {}).get("id"), e["by"]) != ("answered", "yes", people[a])
    )
    replies_wrong = sum(
        1
        for thread, approval in approvals.items()
        for reply in stream.replies.get(thread, [])[:1]
        if reply["text"] != "Answered: Yes."
        or not resolved[approval]
        or reply["position"] < resolved[approval][0]["position"]
    )
    clicked = list(people)[:double_clicks]
    by_key: dict[str, list[Sent]] = defaultdict(list)
    for sent in answers.sent:
        by_key[sent.key].append(sent)
    checks = Checks(
        approvals=len(people),
        resolved_once=sum(1 for e in resolved.values() if len(e) == 1),
        resolved_twice=sum(1 for e in resolved.values() if len(e) > 1),
        not_resolved=sum(1 for e in resolved.values() if not e),
        not_answered_yes=wrong_answers,
        asked_twice=sum(1 for e in stream.requested.values() if len(e) > 1),
        replied_once=sum(1 for r in stream.replies.values() if len(r) == 1),
        replied_twice=sum(1 for r in stream.replies.values() if len(r) > 1),
        replies_wrong=replies_wrong,
        double_clicks=len(clicked),
        double_clicks_once=sum(1 for a in clicked if _one_won(by_key[a])),
        second_answers=len(again.sent),
        second_answers_closed=sum(1 for s in again.sent if _closed(s)),
        events_after_second=len(between),
    )
    wrong = wrong_counts(checks) + _wrong_answers(answers, by_key, set(clicked), between)
    return checks, wrong


def _closed(sent: Sent) -> bool:
    return sent.status == 409 and sent.code == "approval_closed"


def _one_won(answers: list[Sent]) -> bool:
    """A double click: one answer won, the other was refused as closed."""
    return (
        len(answers) == 2
        and sorted(s.status for s in answers) == [200, 409]
        and any(_closed(s) for s in answers)
    )


def wrong_counts(checks: Checks) -> list[str]:
    """Each count that is not what exactly-once means, said in a line."""
    n = checks.approvals
    expected = (
        ("approvals resolved exactly once", checks.resolved_once, n),
        ("approvals resolved more than once", checks.resolved_twice, 0),
        ("approvals never resolved", checks.not_resolved, 0),
        ("resolutions other than `yes` by the conversation's person", checks.not_answered_yes, 0),
        ("conversations asked more than once", checks.asked_twice, 0),
        ("conversations with exactly one reply", checks.replied_once, n),
        ("conversations with more than one reply", checks.replied_twice, 0),
        ("replies not saying the answer after it", checks.replies_wrong, 0),
        ("double clicks with one 200 and one 409", checks.double_clicks_once, checks.double_clicks),
        ("second answers refused as closed", checks.second_answers_closed, checks.second_answers),
        ("events added by the second answers", checks.events_after_second, 0),
    )
    return [
        f"{what}: {found:,}, expected {want:,}" for what, found, want in expected if found != want
    ]


def _wrong_answers(
    answers: Burst, by_key: dict[str, list[Sent]], clicked: set[str], between: Sequence[Event]
) -> list[str]:
    """What the answers' statuses and the events past the second answers say is wrong."""
    said = []
    once = [s for key, sent in by_key.items() if key not in clicked for s in sent]
    if any(s.status != 200 for s in once):
        statuses = dict(Counter(s.status for s in once))
        said.append(f"answers given once: {statuses}, all 200 expected")
    errors = [s for s in answers.sent if s.status >= 500]
    if errors:
        said.append(f"{len(errors)} answers got a 5xx: {dict(Counter(s.status for s in errors))}")
    if between:
        said.append(f"events after the second answers: {dict(Counter(e['kind'] for e in between))}")
    return said
