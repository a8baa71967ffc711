"""The approvals benchmark's section of docs/benchmarks.md, from the runs of `bench.approvals`.

`section(results)` says what was run, then its tables — the answers against their ceilings, the
turns against the gateway's own ordinary turns, the exactly-once counts, where a turn's time
went, the CPU of each pass — and what limits it, each number from the runs given (the first is
the headline: the role as it comes, on SQLite). A sentence that compares setups is left out
when a setup is missing.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence

from bench import approvals
from bench.approvals import Result
from bench.harness import Latency

HEADING = "## Approvals: 1,000 answered at once"


def section(results: Sequence[Result], *, measured: str = "") -> list[str]:
    return [
        HEADING,
        "",
        *([_paragraph(measured), ""] if measured else []),
        _paragraph(_what(results)),
        "",
        *_answers_table(results),
        "",
        *_turns_table(results),
        "",
        *_checks_table(results),
        "",
        _paragraph(_verdict(results)),
        "",
        *_stages_table(results),
        "",
        *_cpu_table(results),
        "",
        _paragraph(_limits(results)),
        "",
    ]


def _paragraph(text: str) -> str:
    """Wrap at 96 columns, never inside a `code span` (as bench.run_all does)."""
    spans = text.split("`")
    glued = "`".join(s.replace(" ", "\0") if i % 2 else s for i, s in enumerate(spans))
    wrapped = textwrap.fill(glued, width=96, break_on_hyphens=False, break_long_words=False)
    return wrapped.replace("\0", " ")


def _what(results: Sequence[Result]) -> str:
    first = results[0]
    n, checks = first.conversations, first.gateway.checks
    sent = len(first.gateway.answers.sent)
    return (
        "`python -m bench.approvals` ([approvals.md](approvals.md)): `rolecall serve` with one "
        f"role, `{approvals.ROLE}`, of runtime kind `openai` (`stream: false`), whose model is "
        "`bench/fake_model.py`, a fake OpenAI-compatible server on 127.0.0.1 in a process of "
        "its own: to a person's message it answers with one call of the `ask` tool (`Go "
        "ahead?`, Yes or No, expiring in an hour), to that call's result with a reply saying "
        f"what was answered (`Answered: Yes.`). {n:,} conversations {{person:uK, "
        f"role:{approvals.ROLE}}} get one message each; once every question is pending (seen as "
        "`approval_requested` on the committed-event stream, `GET /api/v1/events`, and listed "
        "by `GET /api/v1/threads/{id}/approvals?state=pending`), all are answered at once: "
        '`POST /api/v1/approvals/{id}` `{"option": "yes", "as": "person:uK"}` from '
        f"{approvals.CONNECTIONS} keep-alive connections opened beforehand, as fast as they "
        f"are answered; the first wave answers {checks.double_clicks} approvals twice at the "
        "same moment on two connections (a double click). Replies are read from the event "
        "stream; an approval's latency runs from its resolution's commit to its reply's commit "
        f"(the `at` of both events). Then {checks.second_answers} approvals are answered again, "
        "all at once with nothing else running, between two marker messages. Last, the "
        "gateway's own ceiling: one more message to every conversation, which the model "
        "answers at once without asking (an ordinary turn). The answers' ceiling, once the "
        f"gateway has stopped: the same {sent:,} requests from {approvals.CONNECTIONS} "
        "connections to `bench/ceiling_server.py` (one INSERT and COMMIT per request on SQLite, "
        "WAL, synchronous=FULL; and aiohttp alone). The role runs as it comes "
        f"(`max_concurrent_turns: {approvals.DEFAULT_SLOTS}`) or, where a row says so, with "
        "more slots, on a fresh SQLite file or on a PostgreSQL database made for the run and "
        "dropped after it (the machine's server); each row is a gateway of its own, one after "
        "the other."
    )


def _name(r: Result) -> str:
    return r.setup.name


def _answers_table(results: Sequence[Result]) -> list[str]:
    rows = [
        "| gateway | answers sent | 200 / 409 | first POST → last 200 s | answers/s | POST p50 ms "
        "| POST p99 ms | ceiling: commit s | ceiling: aiohttp alone s | gateway ÷ commit ceiling |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        answers, statuses = r.gateway.answers, r.gateway.answers.statuses
        seconds = answers.seconds(status=200)
        commit, bare = r.ceilings["commit"], r.ceilings["aiohttp"]
        rows.append(
            f"| {_name(r)} | {len(answers.sent):,} | {statuses.get(200, 0):,} / "
            f"{statuses.get(409, 0):,}{_other_statuses(statuses)} | {seconds:.2f} "
            f"| {statuses.get(200, 0) / max(seconds, 1e-9):,.0f} | {answers.latency.p50_ms:,.1f} "
            f"| {answers.latency.p99_ms:,.1f} | {commit.seconds():.2f} | {bare.seconds():.2f} "
            f"| {seconds / max(commit.seconds(), 1e-9):.2f} |"
        )
    return rows


def _other_statuses(statuses: dict[int, int]) -> str:
    other = {s: n for s, n in statuses.items() if s not in (200, 409)}
    return "".join(f", **{n:,} answered {s}**" for s, n in other.items())


def _turns_table(results: Sequence[Result]) -> list[str]:
    rows = [
        "| gateway | slots | all asked s | slots held while all wait | first POST → every reply "
        "s | resolution → reply p50 ms | p99 ms | ordinary: first post → every reply s "
        "| message → reply p50 ms | p99 ms | every reply ÷ ordinary |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        g = r.gateway
        rows.append(
            f"| {_name(r)} | {r.setup.slots} | {g.asking.seconds:.1f} "
            f"| {_held(r)} ({g.asking.turns_waiting:,.0f} turns waiting) "
            f"| {g.resumed.seconds:.2f} | {_cells(g.resumed.latency)} "
            f"| {g.plain.seconds:.2f} | {_cells(g.plain.latency)} "
            f"| {g.resumed.seconds / max(g.plain.seconds, 1e-9):.2f} |"
        )
    return rows


def _held(r: Result) -> str:
    """The slots held while every turn waited: in the process, and in PostgreSQL."""
    asking = r.gateway.asking
    held = f"{asking.slots_in_use:g} of {r.setup.slots}"
    if asking.database_slots is not None:
        held += f", {asking.database_slots} in the database"
    return held


def _cells(latency: Latency | None) -> str:
    return f"{latency.p50_ms:,.0f} | {latency.p99_ms:,.0f}" if latency else "n/a | n/a"


CHECKS: tuple[tuple[str, Callable[[Result], str]], ...] = (
    ("approvals resolved exactly once", lambda r: _of(r.gateway.checks.resolved_once, r)),
    ("resolved more than once", lambda r: f"{r.gateway.checks.resolved_twice:,}"),
    ("never resolved", lambda r: f"{r.gateway.checks.not_resolved:,}"),
    (
        "resolved other than `yes` by the conversation's person",
        lambda r: f"{_c(r).not_answered_yes:,}",
    ),
    (
        "double clicks: one 200 and one 409 `approval_closed`",
        lambda r: f"{_c(r).double_clicks_once:,} of {_c(r).double_clicks:,}",
    ),
    (
        "second answers: 409 `approval_closed`",
        lambda r: f"{_c(r).second_answers_closed:,} of {_c(r).second_answers:,}",
    ),
    ("events the second answers added", lambda r: f"{_c(r).events_after_second:,}"),
    ("conversations asked more than once", lambda r: f"{_c(r).asked_twice:,}"),
    ("conversations with exactly one reply after the answer", lambda r: _of(_c(r).replied_once, r)),
    ("with more than one", lambda r: f"{_c(r).replied_twice:,}"),
    (
        "replies not saying `Answered: Yes.` after the resolution",
        lambda r: f"{_c(r).replies_wrong:,}",
    ),
    ("ordinary turns replied", lambda r: _of(r.gateway.plain.replied, r)),
    (
        "turns finished (`/metrics`): replied, failed attempts",
        lambda r: (
            f"{r.gateway.turns.get('replied', 0):,.0f}, "
            f"{r.gateway.turns.get('failed attempts', 0):,.0f}"
        ),
    ),
    ("slots in use at the end (in the database)", lambda r: _held_at_end(r)),
    (
        "gateway log lines at ERROR",
        lambda r: f"{r.log.get('ERROR', 0) + r.log.get('CRITICAL', 0):,}",
    ),
)


def _held_at_end(r: Result) -> str:
    turns = r.gateway.turns
    held = f"{turns.get('slots in use', 0):g}"
    if "slots held in the database" in turns:
        held += f" ({turns['slots held in the database']:g})"
    return held


def _c(r: Result) -> approvals.Checks:
    return r.gateway.checks


def _of(found: int, r: Result) -> str:
    return f"{found:,} of {r.conversations:,}"


def _checks_table(results: Sequence[Result]) -> list[str]:
    return [
        "| check | " + " | ".join(_name(r) for r in results) + " |",
        "| --- |" + " ---: |" * len(results),
        *(f"| {what} | " + " | ".join(cell(r) for r in results) + " |" for what, cell in CHECKS),
    ]


def _verdict(results: Sequence[Result]) -> str:
    problems = [f"{_name(r)}: {p}" for r in results for p in r.problems]
    if not problems:
        return (
            "**Exactly once: met** in every setup. Every approval was resolved once, by its "
            "person's `yes`; every double click got one 200 and one 409, every second answer a "
            "409 `approval_closed` and no event; every waiting turn resumed and replied once. "
            "Problems: none."
        )
    return "**Problems** (the benchmark exits non-zero): " + "; ".join(problems) + "."


def _stages_table(results: Sequence[Result]) -> list[str]:
    rows = [
        _paragraph(
            "Where a turn's time went, p50 / p99 ms (the turns' records, `GET "
            "/api/v1/runs/{id}/turns`, and the events' `at`):"
        ),
        "",
        "| stage | " + " | ".join(_name(r) for r in results) + " |",
        "| --- |" + " ---: |" * len(results),
    ]
    for name, what in approvals.STAGES:
        cells = []
        for r in results:
            found = r.gateway.stages.get(name)
            cells.append(f"{found.p50_ms:,.0f} / {found.p99_ms:,.0f}" if found else "n/a")
        rows.append(f"| {what} | " + " | ".join(cells) + " |")
    return rows


def _cpu_table(results: Sequence[Result]) -> list[str]:
    rows = [
        _paragraph(
            "CPU in each pass: the gateway's per conversation, and the cores it and the other "
            "processes (PostgreSQL's, other sessions'; not the fake model, not this client) "
            "used on average while the pass ran:"
        ),
        "",
        "| gateway | asking: ms/question | cores: gateway, others | answered: ms/approval "
        "| cores | ordinary: ms/turn | cores |",
        "| --- | ---: | --- | ---: | --- | ---: | --- |",
    ]
    for r in results:
        g = r.gateway
        passes = ((g.asking.cpu, g.asking.seconds), (g.resumed.cpu, g.resumed.seconds))
        cells = [
            f"{cpu.gateway / max(r.conversations, 1) * 1000:,.1f} | {_cores(cpu, seconds)}"
            for cpu, seconds in (*passes, (g.plain.cpu, g.plain.seconds))
        ]
        rows.append(f"| {_name(r)} | " + " | ".join(cells) + " |")
    return rows


def _cores(cpu: approvals.Cpu, seconds: float) -> str:
    return f"{cpu.gateway / max(seconds, 1e-9):.2f}, {cpu.others / max(seconds, 1e-9):.2f}"


def _setup(results: Sequence[Result], *, postgres: bool, more_slots: bool) -> Result | None:
    for r in results:
        wider = r.setup.slots > approvals.DEFAULT_SLOTS
        if r.setup.postgres == postgres and wider == more_slots:
            return r
    return None


def _limits(results: Sequence[Result]) -> str:
    first = results[0]
    wide = _setup(results, postgres=False, more_slots=True)
    pg = _setup(results, postgres=True, more_slots=False)
    pg_wide = _setup(results, postgres=True, more_slots=True)
    parts = [
        _lent(first),
        _cpu_bound(first, wide),
        _slots_decide(first, wide),
        _answering(first),
        _asking(first, wide),
    ]
    if pg is not None:
        parts.append(_on_postgres(first, pg, pg_wide))
    parts.append(_machine(results))
    return "What limits it. " + " ".join(p for p in parts if p)


def _lent(r: Result) -> str:
    g = r.gateway
    return (
        f"All {g.asking.pending:,} turns waited at once on a role with {r.setup.slots} slots, "
        f"and `rolecall_turn_slots_in_use` read {g.asking.slots_in_use:g} while they did (on "
        "PostgreSQL, no slot's advisory lock was held either): a turn waiting for a person "
        "holds no slot."
    )


def _cpu_bound(first: Result, wide: Result | None) -> str:
    """Whether the gateway's one interpreter was busy all the while the approvals went
    through: then the total time is its CPU."""
    g = first.gateway
    cpu, seconds = g.resumed.cpu.gateway, g.resumed.seconds
    cores = cpu / max(seconds, 1e-9)
    said = (
        f"From the first POST to the last reply the gateway used {cpu:.1f} s of CPU in "
        f"{seconds:.1f} s ({cores:.2f} cores; {_per(g.resumed.cpu, first)} ms an approval: "
        "the answer, the resumed turn, its reply, the event stream read by this client"
    )
    if wide is not None:
        w = wide.gateway
        said += (
            f"; with {wide.setup.slots} slots {w.resumed.cpu.gateway:.1f} s in "
            f"{w.resumed.seconds:.1f} s"
        )
    if cores < 0.8:
        return said + "): the gateway was not busy all the time."
    return said + (
        "). The gateway is one Python process, and that is about all one interpreter gives: "
        "the total time is the gateway's CPU, however many slots the role has."
    )


def _slots_decide(first: Result, wide: Result | None) -> str:
    """What the role's slots change: who waits, the answers or the resumed turns."""
    g, slots = first.gateway, first.setup.slots
    turn, waited = g.stages.get("plain_turn"), g.resumed.latency
    if turn is None or waited is None:
        return ""
    said = (
        "The slots decide who waits. Each answered turn takes its slots back before it goes "
        f"on, so with {slots} the resumed turns pass {slots} at a time, each holding a slot "
        f"about {turn.p50_ms:,.0f} ms (an ordinary turn's start to its reply's commit, p50): "
        f"the answers were all in after {g.answers.seconds(status=200):.2f} s, and an "
        f"approval's reply came {waited.p50_ms:,.0f} ms after its resolution at p50"
    )
    shorter = wide.gateway.resumed.latency if wide is not None else None
    if wide is None or shorter is None:
        return said + "."
    return said + (
        f". With {wide.setup.slots}, the resumed turns ran beside the answers, which then took "
        f"{wide.gateway.answers.seconds(status=200):.2f} s, and a reply came "
        f"{shorter.p50_ms:,.0f} ms after its resolution."
    )


def _answering(r: Result) -> str:
    g = r.gateway
    seconds, commit = g.answers.seconds(status=200), r.ceilings["commit"].seconds()
    return (
        f"The {len(g.answers.sent):,} answers took {seconds / max(commit, 1e-9):.2f} times as "
        "long as the bare handler's one commit per request, "
        f"{seconds / max(r.ceilings['aiohttp'].seconds(), 1e-9):.1f} times as long as aiohttp "
        "alone: each is a read of the approval and one command in the group-commit writer "
        "(which commits many at once), while the resumed turns share the interpreter. An "
        f"ordinary turn (its message, the turn, its reply) cost {_per(g.plain.cpu, r)} ms of "
        f"the gateway's CPU, against {_per(g.resumed.cpu, r)} ms for an approval and its turn."
    )


def _per(cpu: approvals.Cpu, r: Result) -> str:
    return f"{cpu.gateway / max(r.conversations, 1) * 1000:.1f}"


def _asking(first: Result, wide: Result | None) -> str:
    g = first.gateway
    said = (
        f"Asking is each conversation's first turn: its run is made, its session started, "
        f"and the question committed, {_per(g.asking.cpu, first)} ms of the gateway's CPU "
        f"each; it took {g.asking.seconds:.1f} s"
    )
    if wide is None:
        return said + "."
    slower = wide.gateway.asking.seconds >= 0.8 * g.asking.seconds
    return (
        said + f" with {first.setup.slots} slots and {wide.gateway.asking.seconds:.1f} s with "
        f"{wide.setup.slots}" + (": not the slots' doing." if slower else ".")
    )


def _on_postgres(first: Result, pg: Result, pg_wide: Result | None) -> str:
    g, p = first.gateway, pg.gateway
    answers = p.answers.seconds(status=200) / max(g.answers.seconds(status=200), 1e-9)
    busy = (p.asking.cpu.gateway + p.asking.cpu.others) / max(p.asking.seconds, 1e-9)
    wide = ""
    if pg_wide is not None:
        wide = f" ({pg_wide.gateway.asking.seconds:.1f} with {pg_wide.setup.slots} slots)"
    return (
        "On PostgreSQL every step costs the gateway more CPU — "
        f"{_per(p.asking.cpu, pg)} ms a question (SQLite {_per(g.asking.cpu, first)}), "
        f"{_per(p.resumed.cpu, pg)} ms an approval ({_per(g.resumed.cpu, first)}), "
        f"{_per(p.plain.cpu, pg)} ms an ordinary turn ({_per(g.plain.cpu, first)}) — and "
        "PostgreSQL's processes share the two cores with it (the gateway and the processes "
        "other than the model and this client, PostgreSQL's and other sessions', used "
        f"{busy:.2f} cores together while asking): "
        f"asking took {p.asking.seconds:.1f} s{wide}, answering "
        f"{answers:.1f} times as long as on SQLite, and the last reply came "
        f"{p.resumed.seconds:.1f} s after the first POST. Every commit is a round trip to the "
        "server, and every slot is taken and given back there too, on one connection "
        "(`core.storage.slot_locks`: four round trips for a turn that waits); a first turn "
        "also holds its slot while its run is looked up and made and its lease claimed. The "
        "answers' commit ceiling is SQLite's in every row."
    )


def _machine(results: Sequence[Result]) -> str:
    busy = [
        (r, r.gateway.resumed.cpu.others / max(r.gateway.resumed.seconds, 1e-9))
        for r in results
        if not r.setup.postgres
    ]
    said = " and ".join(f"{cores:.2f} cores in the {_name(r)} run" for r, cores in busy)
    return (
        "The machine's two cores are shared by the gateway, the fake model, this client and "
        "whatever else runs (on SQLite, other processes used "
        f"{said} while the answered turns resumed): the more they used, the less the absolute "
        "times say and the more the ratios do."
    )
