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
- `on, not exported` and `sampled, not exported`: the same spans made, sent nowhere
  (`ROLECALL_TRACES=true`, `OTEL_TRACES_EXPORTER=none`): what making them costs, apart from
  exporting them.

The collector counts the spans it received by the time each gateway has stopped (a gateway that
stops flushes what it still holds); a span the batch processor dropped because its queue was
full never arrives.
"""

from __future__ import annotations

import argparse
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import roundtrip
from bench.collector import Collector

HEADING = "## Traces: the round trip with tracing on and off"
_SAMPLED = {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"}
_KEPT_HERE = {"ROLECALL_TRACES": "true", "OTEL_TRACES_EXPORTER": "none"}
SETUPS: dict[str, Mapping[str, str]] = {
    "off": {},
    "on": {},
    "sampled": _SAMPLED,
    "on, not exported": _KEPT_HERE,
    "sampled, not exported": {**_KEPT_HERE, **_SAMPLED},
}
EXPORTED = ("on", "sampled")
"""The setups whose spans go to the collector (the others make them and send them nowhere)."""
SINGLE = 1_000
"""Round trips from a single poster (the latency of one, with the server otherwise idle)."""
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
            workdir / f"{setup}-{number}".replace(", ", "-").replace(" ", "-"),
            conversations,
            total,
            posters,
            sweep=(1,),
            sweep_round_trips=single,
            env=env,
        )
        count = first.latency.count + warm.latency.count + alone.latency.count
        return Run(setup, number, warm, alone, count, collector.spans)


def measure(
    workdir: Path,
    conversations: int,
    total: int,
    posters: int,
    rounds: int,
    *,
    single: int = SINGLE,
) -> list[Run]:
    """Every setup in each of `rounds` rounds (alternating their order), each run printed."""
    runs = []
    for number in range(1, rounds + 1):
        order = list(SETUPS) if number % 2 else list(reversed(SETUPS))
        for setup in order:
            run = measure_one(workdir, setup, number, conversations, total, posters, single)
            print(_line(run), flush=True)
            runs.append(run)
    return runs


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
    runs: Sequence[Run], *, measured: str, conversations: int, total: int, posters: int
) -> list[str]:
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
    verdict = "met" if costs["on"] < TARGET else "**not met**"
    sampled_verdict = "met" if costs["sampled"] < TARGET else "**not met**"
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
            "`OTEL_TRACES_SAMPLER_ARG=0.1` (one trace in ten kept). `…, not exported`: the "
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
            f"Server CPU per warm round trip against `off` (mean of the rounds): `on` "
            f"**{costs['on']:+.0%}**, `sampled` **{costs['sampled']:+.0%}**, `on, not "
            f"exported` {costs['on, not exported']:+.0%}, `sampled, not exported` "
            f"{costs['sampled, not exported']:+.0%}; round by round against that round's `off`: "
            + "; ".join(f"`{setup}` {ratios}" for setup, ratios in by_round.items())
            + "; warm round trips/s "
            f"÷ `off`: `on` **{rates['on']:.2f}**, `sampled` **{rates['sampled']:.2f}**; one "
            f"poster's p50: {single['off']:.2f} ms off, {single['on']:.2f} ms on, "
            f"{single['sampled']:.2f} ms sampled. Target (under {TARGET:.0%} more per round "
            f"trip): every trace kept {verdict}; one in ten kept {sampled_verdict}."
        ),
        "",
        _paragraph(
            f"Where the time goes. Every trace kept, a round trip makes about {kept:.0f} spans "
            "(the request's, the message's commit, the nudge, the turn, its queue wait, the "
            "attempt, the agent's, the reply's commit, and a share of the write batches' and "
            "of the conversations' creation): "
            f"{per_trip['on']:,.0f} µs more server CPU per round trip, of which making them "
            f"(`on, not exported`: {per_trip['on, not exported']:+,.0f} µs) is the SDK's Python "
            "on the event loop — ids, the sampler, attributes, the context switched in and out, "
            "the span handed to the batch processor — and the rest the export, the batch "
            "processor's thread encoding each span to protobuf and posting it, sharing the "
            "interpreter's lock with the gateway. One trace in ten kept: "
            f"{per_trip['sampled']:+,.0f} µs ({per_trip['sampled, not exported']:+,.0f} µs "
            "without the export): the request's span is still made and sampled out by the SDK, "
            "the spans below a trace that is not kept are not made at all (their context is "
            "carried on instead, `core/tracing.py`), and a tenth of the spans are made and "
            "exported. Off, the helpers the gateway calls cost about 5 µs per round trip "
            "(measured in process), within the noise of the `off` rows. On these 2 cores the "
            "benchmark's load generator and the collector share the machine with the gateway, "
            "and its speed varies by a fifth or more between runs minutes apart: compare the "
            "rows of one round."
        ),
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--round-trips", type=int, default=5_000)
    parser.add_argument("--posters", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        measure(Path(tmp), args.conversations, args.round_trips, args.posters, args.rounds)


if __name__ == "__main__":
    main()
