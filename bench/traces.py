"""The round trip with traces on against off: what tracing costs per round trip.

    python -m bench.traces [--conversations 500] [--round-trips 5000] [--posters 32] [--rounds 3]

`bench.roundtrip`'s load — a person posts over HTTP, the echo role replies, the reply's commit
is seen on the committed-event stream — on a fresh `rolecall serve` (SQLite) for each setup:
first contact with every conversation, then `round_trips` warm round trips from `posters`
posters, then 1,000 from a single poster. The setups, one after the other in each round (the
rounds alternate them, so that a machine that slows down for a minute does not favour one):

- `off`: no `OTEL_*` variable, no `ROLECALL_TRACES`: tracing off, as by default;
- `on`: `OTEL_EXPORTER_OTLP_ENDPOINT` at `bench.collector`'s receiver, on 127.0.0.1 in this
  process: every trace made and exported over OTLP/HTTP (protobuf), with the SDK's defaults (the
  batch processor's queue of 2,048 spans, exports of 512);
- `sampled`: the same, one trace in ten kept (`OTEL_TRACES_SAMPLER=parentbased_traceidratio`,
  `OTEL_TRACES_SAMPLER_ARG=0.1`): the other nine are decided at their first span and cost
  little after it;
- `sampled 1%`: the same, one trace in a hundred kept (`OTEL_TRACES_SAMPLER_ARG=0.01`, what
  docs/tracing.md advises for a busy gateway); `sampled 0%`: none kept
  (`OTEL_TRACES_SAMPLER_ARG=0`), what a trace that is not kept costs;
- `on, not exported` and `sampled, not exported`: the same spans made, sent nowhere
  (`ROLECALL_TRACES=true`, `OTEL_TRACES_EXPORTER=none`): what making them costs, apart from
  exporting them.

The collector counts the spans it received by the time each gateway has stopped (a gateway that
stops flushes what it still holds); a span the batch processor dropped because its queue was
full never arrives.

A cost of a few percent is below what the rounds can tell apart on a machine whose speed drifts
from minute to minute. `--paired SETUP` runs that setup's gateway beside an `off` one and has
them take turns at short passes (`--passes` of `--round-trips` each), and gives the cost over
every pass and the median of the passes' ratios:

    python -m bench.traces --paired "sampled 1%" --conversations 200 --round-trips 1000
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import harness, roundtrip
from bench.collector import Collector

HEADING = "## Traces: the round trip with tracing on and off"
_SAMPLED = {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"}
_KEPT_HERE = {"ROLECALL_TRACES": "true", "OTEL_TRACES_EXPORTER": "none"}
SETUPS: dict[str, Mapping[str, str]] = {
    "off": {},
    "on": {},
    "sampled": _SAMPLED,
    "sampled 1%": {**_SAMPLED, "OTEL_TRACES_SAMPLER_ARG": "0.01"},
    "sampled 0%": {**_SAMPLED, "OTEL_TRACES_SAMPLER_ARG": "0"},
    "on, not exported": _KEPT_HERE,
    "sampled, not exported": {**_KEPT_HERE, **_SAMPLED},
}
EXPORTED = ("on", "sampled", "sampled 1%", "sampled 0%")
"""The setups whose spans go to the collector (the others make them and send them nowhere)."""
SINGLE = 1_000
"""Round trips from a single poster (the latency of one, with the server otherwise idle)."""
PASSES = 20
"""Passes of each gateway in a pairing (`paired`), of at most `PASS_ROUND_TRIPS`."""
PASS_ROUND_TRIPS = 1_000
PAIRED_CONVERSATIONS = 200
TARGET = 0.10
"""At most this much more server CPU per round trip with traces on (issue #22)."""


@dataclass(frozen=True, slots=True)
class Run:
    setup: str
    round: int
    warm: roundtrip.RoundTrips
    single: roundtrip.RoundTrips
    round_trips: int
    """Every round trip of the run: first contact, warm and single-poster passes."""
    spans: int
    """Spans the collector received from the run's gateway."""


def measure_one(
    workdir: Path,
    setup: str,
    number: int,
    conversations: int,
    total: int,
    posters: int,
    single: int = SINGLE,
) -> Run:
    with Collector.running() as collector:
        env = dict(SETUPS[setup])
        if setup in EXPORTED:
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.endpoint
        first, warm, [alone] = roundtrip.measure_echo(
            workdir / _slug(f"{setup}-{number}"),
            conversations,
            total,
            posters,
            sweep=(1,),
            sweep_round_trips=single,
            env=env,
        )
        count = first.latency.count + warm.latency.count + alone.latency.count
        return Run(setup, number, warm, alone, count, collector.spans)


@dataclass(frozen=True, slots=True)
class Measured:
    runs: list[Run]
    """The rounds, every setup in each."""
    passes: dict[str, list[Pass]]
    """Each exported setup against `off`, interleaved (`paired`)."""


def _slug(setup: str) -> str:
    return setup.replace(", ", "-").replace(" ", "-").replace("%", "pc")


def measure(
    workdir: Path,
    conversations: int,
    total: int,
    posters: int,
    rounds: int,
    *,
    single: int = SINGLE,
    passes: int = PASSES,
) -> Measured:
    """Every setup in each of `rounds` rounds (alternating their order), then each exported
    setup against `off` in `passes` interleaved passes; each run and pass printed."""
    runs = []
    for number in range(1, rounds + 1):
        order = list(SETUPS) if number % 2 else list(reversed(SETUPS))
        for setup in order:
            run = measure_one(workdir, setup, number, conversations, total, posters, single)
            print(_line(run), flush=True)
            runs.append(run)
    paired_passes = {
        setup: paired(
            workdir / f"paired-{_slug(setup)}",
            setup,
            passes,
            min(conversations, PAIRED_CONVERSATIONS),
            min(total, PASS_ROUND_TRIPS),
            posters,
        )
        for setup in EXPORTED
    }
    return Measured(runs, paired_passes)


def _line(run: Run) -> str:
    warm, single = run.warm, run.single
    return (
        f"round {run.round} {run.setup:8} warm {warm.latency.rate:6.0f}/s "
        f"p50 {warm.latency.p50_ms:6.2f} p99 {warm.latency.p99_ms:6.2f} ms "
        f"CPU {warm.cpu_us_per_round_trip:5.0f} us  single p50 {single.latency.p50_ms:5.2f} "
        f"p99 {single.latency.p99_ms:5.2f} ms CPU {single.cpu_us_per_round_trip:5.0f} us  "
        f"spans {run.spans:,} ({run.spans / run.round_trips:.1f}/round trip)"
    )


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _of(runs: Sequence[Run], setup: str) -> list[Run]:
    return [run for run in runs if run.setup == setup]


def _in(runs: Sequence[Run], number: int) -> list[Run]:
    return [run for run in runs if run.round == number]


def _cpu(runs: Sequence[Run]) -> float:
    return _mean([run.warm.cpu_us_per_round_trip for run in runs])


def _paragraph(text: str) -> str:
    """Wrap at 96 columns, never inside a `code span`."""
    spans = text.split("`")
    glued = "`".join(s.replace(" ", "\0") if i % 2 else s for i, s in enumerate(spans))
    wrapped = textwrap.fill(glued, width=96, break_on_hyphens=False, break_long_words=False)
    return wrapped.replace("\0", " ")


def section(
    measured_runs: Measured, *, measured: str, conversations: int, total: int, posters: int
) -> list[str]:
    runs = measured_runs.runs
    rows = [
        f"| {run.round} | {run.setup} | {run.warm.latency.rate:,.0f} "
        f"| {run.warm.latency.p50_ms:.2f} | {run.warm.latency.p99_ms:.2f} "
        f"| {run.warm.cpu_us_per_round_trip:,.0f} | {run.single.latency.p50_ms:.2f} "
        f"| {run.single.latency.p99_ms:.2f} | {run.single.cpu_us_per_round_trip:,.0f} "
        f"| {run.spans:,} | {run.spans / run.round_trips:.1f} | {run.warm.missing} |"
        for run in runs
    ]
    off = _cpu(_of(runs, "off"))
    costs = {setup: _cpu(_of(runs, setup)) / off - 1 for setup in SETUPS if setup != "off"}
    rates = {
        setup: _mean([r.warm.latency.rate for r in _of(runs, setup)])
        / _mean([r.warm.latency.rate for r in _of(runs, "off")])
        for setup in SETUPS
        if setup != "off"
    }
    single = {setup: _mean([r.single.latency.p50_ms for r in _of(runs, setup)]) for setup in SETUPS}
    per_trip = {setup: _cpu(_of(runs, setup)) - off for setup in SETUPS if setup != "off"}
    by_round = {
        setup: ", ".join(
            f"{_cpu([run]) / _cpu(_of(_in(runs, run.round), 'off')) - 1:+.0%}"
            for run in _of(runs, setup)
        )
        for setup in SETUPS
        if setup != "off"
    }
    kept = _mean([r.spans / r.round_trips for r in _of(runs, "on")])
    pairs = {setup: paired_cost(passes, setup) for setup, passes in measured_runs.passes.items()}
    verdicts = {
        setup: "met" if median < TARGET else "**not met**"
        for setup, (_, median, _, _) in pairs.items()
    }
    some = next(iter(measured_runs.passes.values()))
    paired_rows = [
        f"| `{setup}` | **{median:+.1%}** | {cost:+.1%} | {lowest:+.0%} to {highest:+.0%} "
        f"| {costs[setup]:+.0%} |"
        for setup, (cost, median, lowest, highest) in pairs.items()
    ]
    return [
        HEADING,
        "",
        _paragraph(measured),
        "",
        _paragraph(
            f"`python -m bench.traces`: the round-trip load above (`bench.roundtrip`: the echo "
            f"role, {conversations:,} conversations, first contact, then {total:,} warm round "
            f"trips from {posters} posters, then {runs[0].single.latency.count:,} from a single "
            "poster) on a fresh "
            "`rolecall serve` on SQLite for each setup, the setups one after the other in each "
            "round and in the reverse order in the next. `off`: no `OTEL_*` variable (tracing "
            "off, the default). `on`: `OTEL_EXPORTER_OTLP_ENDPOINT` at an OTLP/HTTP receiver on "
            "127.0.0.1 in the benchmark's process (`bench/collector.py`, which parses each "
            "export and counts its spans), every trace made and exported, the SDK's defaults "
            "otherwise (a batch processor with a queue of 2,048 spans). `sampled`: the same "
            "with `OTEL_TRACES_SAMPLER=parentbased_traceidratio` and "
            "`OTEL_TRACES_SAMPLER_ARG=0.1` (one trace in ten kept); `sampled 1%`: "
            "`OTEL_TRACES_SAMPLER_ARG=0.01` (one in a hundred); `sampled 0%`: `0` (none kept: "
            "what a trace that is not kept costs). `…, not exported`: the "
            "same spans made and sent nowhere (`ROLECALL_TRACES=true`, "
            "`OTEL_TRACES_EXPORTER=none`). Spans received counts "
            "everything each gateway exported, the conversations' creation included, by the "
            "time it had stopped; a span the batch processor dropped (its queue full) never "
            "arrives."
        ),
        "",
        "| round | setup | warm round trips/s | p50 ms | p99 ms | server CPU µs/round trip "
        "| 1 poster p50 ms | 1 poster p99 ms | 1 poster CPU µs/round trip | spans received "
        "| spans/round trip | replies missing |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *rows,
        "",
        _paragraph(
            "Server CPU per warm round trip against `off` (mean of the rounds): "
            + ", ".join(f"`{setup}` {cost:+.0%}" for setup, cost in costs.items())
            + "; round by round against that round's `off`: "
            + "; ".join(f"`{setup}` {ratios}" for setup, ratios in by_round.items())
            + "; warm round trips/s ÷ `off`: "
            + ", ".join(f"`{setup}` {rates[setup]:.2f}" for setup in EXPORTED)
            + "; one poster's p50: "
            + ", ".join(f"{single[setup]:.2f} ms `{setup}`" for setup in ("off", *EXPORTED))
            + ". The rounds are minutes apart, and this machine's speed drifts by a fifth or "
            "more in minutes: a cost of a few percent is lost in them, hence the pairs below."
        ),
        "",
        _paragraph(
            "Paired (`bench.traces.paired`): each exported setup's gateway beside an `off` one, "
            f"both fresh, {min(conversations, PAIRED_CONVERSATIONS):,} conversations each, "
            f"taking turns at {len(some) // 2} passes of "
            f"{some[0].round_trips:,} warm round trips (the order swapped every pass), so that "
            "both see the same machine within seconds; a pass's CPU runs until that gateway's "
            "next pass begins (what it exports meanwhile is its). Server CPU per round trip "
            "against `off`:"
        ),
        "",
        "| setup | median of the passes | over every pass | passes from | rounds above |",
        "| --- | ---: | ---: | ---: | ---: |",
        *paired_rows,
        "",
        _paragraph(
            f"Target (under {TARGET:.0%} more per round trip, the paired median): every trace "
            f"kept {verdicts['on']}; one in ten kept {verdicts['sampled']}; one in a hundred "
            f"kept {verdicts['sampled 1%']}; none kept {verdicts['sampled 0%']}."
        ),
        "",
        _paragraph(
            f"Where the time goes. Every trace kept, a round trip makes about {kept:.0f} spans "
            "(the request's, the message's commit, the nudge, the turn, its queue wait, the "
            "attempt, the agent's, the reply's commit, and a share of the write batches' and "
            "of the conversations' creation): in the rounds, "
            f"{per_trip['on']:+,.0f} µs of server CPU per round trip, of which making them "
            f"(`on, not exported`: {per_trip['on, not exported']:+,.0f} µs, as far as the "
            "rounds tell) is the SDK's Python "
            "on the event loop — ids, the sampler, each attribute checked, the span's locks and "
            "lists, and the garbage collections all those objects bring on — and the rest the "
            "export: the batch processor's thread encoding each span to protobuf and posting "
            "it, sharing the interpreter's lock with the gateway. A trace that is not kept "
            "costs its request's span, which the SDK makes to sample it out, and a few lookups "
            "after it: the spans below it are not made, its context is carried on "
            "(`core/tracing.py`). Off, the helpers the gateway calls cost about 5 µs per round "
            "trip (measured in process). On these 2 cores the benchmark's load generator and "
            "the collector share the machine with the gateway."
        ),
        "",
    ]


@dataclass(frozen=True, slots=True)
class Pass:
    setup: str
    number: int
    round_trips: int
    cpu_us_per_round_trip: float
    """The gateway's CPU from this pass's start to its next one's (its idle time while the
    other gateway's pass runs included: a batch of spans exported then is this pass's)."""


def paired(
    workdir: Path, setup: str, passes: int, conversations: int, total: int, posters: int
) -> list[Pass]:
    """`setup` against `off`, interleaved: both gateways run side by side, each with its own
    conversations, and take turns at passes of `total` warm round trips (`passes` each, the
    order swapped every time), so that both see the same machine within seconds. A cost of a
    few percent is lost in how this machine's speed drifts between the rounds of `measure`,
    minutes apart; it is not between two passes."""
    with contextlib.ExitStack() as stack:
        gateways = []
        for name in ("off", setup):
            collector = stack.enter_context(Collector.running())
            port, token = harness.free_port(), secrets.token_urlsafe(24)
            env = {
                **harness.gateway_env(
                    workdir / _slug(name),
                    port,
                    token,
                    roles_dir=harness.echo_role(workdir / "roles"),
                ),
                **SETUPS[name],
            }
            if name in EXPORTED:
                env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.endpoint
            process = stack.enter_context(
                harness.server(["-m", "gateway", "serve"], port=port, env=env)
            )
            gateways.append((name, port, token, process.pid))
        return asyncio.run(_interleave(gateways, passes, conversations, total, posters))


async def _interleave(
    gateways: list[tuple[str, int, str, int]],
    passes: int,
    conversations: int,
    total: int,
    posters: int,
) -> list[Pass]:
    async with contextlib.AsyncExitStack() as stack:
        ready = []
        for name, port, token, pid in gateways:
            ids = await roundtrip.resolve(port, token, conversations)
            replies = await stack.enter_async_context(
                (await roundtrip.Replies.open(port, token)).following()
            )
            ready.append((name, port, token, pid, ids, replies))
            await roundtrip.round_trips(  # first contact: each run made, each session started
                port, token, replies, ids, total=conversations, posters=posters, tag="hi", pid=pid
            )
        began: dict[str, tuple[float, int]] = {}
        done: list[Pass] = []
        for number in range(1, passes + 1):
            for name, port, token, pid, ids, replies in ready[:: 1 if number % 2 else -1]:
                cpu = harness.cpu_seconds(pid)
                if name in began:
                    done.append(_pass(name, number - 1, began[name], cpu))
                trips = await roundtrip.round_trips(
                    port,
                    token,
                    replies,
                    ids,
                    total=total,
                    posters=posters,
                    tag=f"p{number}",
                    pid=pid,
                )
                began[name] = (cpu, trips.latency.count)
        for name, _port, _token, pid, _ids, _replies in ready:
            done.append(_pass(name, passes, began[name], harness.cpu_seconds(pid)))
        return done


def _pass(setup: str, number: int, began: tuple[float, int], cpu: float) -> Pass:
    start, count = began
    line = Pass(setup, number, count, (cpu - start) / count * 1e6)
    print(f"pass {number:2} {setup:22} CPU {line.cpu_us_per_round_trip:5.0f} us", flush=True)
    return line


def paired_cost(passes: Sequence[Pass], setup: str) -> tuple[float, float, float, float]:
    """The setup's cost against `off`: over every pass, and the median, lowest and highest of
    the passes' ratios, number by number."""
    off = {p.number: p for p in passes if p.setup == "off"}
    mine = {p.number: p for p in passes if p.setup == setup}
    ratios = sorted(
        mine[n].cpu_us_per_round_trip / off[n].cpu_us_per_round_trip - 1 for n in sorted(mine)
    )
    middle = len(ratios) // 2
    median = ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2

    def overall(of: dict[int, Pass]) -> float:
        return sum(p.cpu_us_per_round_trip * p.round_trips for p in of.values()) / sum(
            p.round_trips for p in of.values()
        )

    return overall(mine) / overall(off) - 1, median, ratios[0], ratios[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--round-trips", type=int, default=5_000)
    parser.add_argument("--posters", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--paired",
        choices=[setup for setup in SETUPS if setup != "off"],
        help="this setup against off, interleaved: --passes of --round-trips each",
    )
    parser.add_argument("--passes", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        if args.paired is None:
            measure(Path(tmp), args.conversations, args.round_trips, args.posters, args.rounds)
            return
        passes = paired(
            Path(tmp), args.paired, args.passes, args.conversations, args.round_trips, args.posters
        )
    cost, median, lowest, highest = paired_cost(passes, args.paired)
    print(
        f"{args.paired} against off: {cost:+.1%} over every pass; median of the passes "
        f"{median:+.1%} (from {lowest:+.1%} to {highest:+.1%})"
    )


if __name__ == "__main__":
    main()
