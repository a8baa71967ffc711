"""How a turn that was cancelled, or a task run's turn, ends (`core.model.runs`): pure rules."""

from __future__ import annotations

from core.model.runs.conversation import cancelled_turn
from core.model.runs.run import TurnCause, TurnOutcome
from core.model.runs.task import end_of_task_turn, stopped_task_turn


def test_a_cancelled_turn_a_person_waited_for_tells_them_why_no_answer_comes() -> None:
    end = cancelled_turn(TurnCause.MESSAGE, display_name="Concierge")
    assert end.outcome is TurnOutcome.CANCELLED
    assert end.messages == ()
    assert end.notice == "Concierge's turn was stopped by an operator before it answered."


def test_a_cancelled_turn_woken_by_task_news_says_nothing() -> None:
    end = cancelled_turn(TurnCause.NEWS, display_name="Concierge")
    assert (end.outcome, end.messages, end.notice) == (TurnOutcome.CANCELLED, (), None)


def test_a_task_turn_answer_becomes_the_runs_comments_without_blank_ones() -> None:
    end = end_of_task_turn(["On it.", "  ", "Done by Friday."])
    assert end.comments == ["On it.", "Done by Friday."]
    assert end.outcome is TurnOutcome.REPLIED


def test_a_task_turn_that_answers_nothing_leaves_no_trace() -> None:
    end = end_of_task_turn(["", " \n"])
    assert (list(end.comments), end.outcome) == ([], TurnOutcome.SILENT)


def test_a_stopped_task_turn_records_nothing_on_the_task() -> None:
    for outcome in (TurnOutcome.CANCELLED, TurnOutcome.FAILED):
        end = stopped_task_turn(outcome)
        assert (list(end.comments), end.outcome) == ([], outcome)
