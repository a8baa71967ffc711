"""Agent memory recall: one role's 100,000 entries over 1,000 threads, full-text queries.

Stores the entries through the repository (`db.memory.store`, group commit) in a fresh SQLite
file: notes whose text is a few words drawn from a made-up vocabulary with Zipf-like
frequencies; a few threads' memory policy is `thread_only: false` (their entries are shared) and
a few entries have no thread. Then each query, one or two words of an entry of a random thread
(so it always finds at least that entry), asks for the newest 10 matches:

- through the repository (`db.memory.recall`, the visibility filter on), in process;
- as the same SQL with stdlib sqlite3, the visibility filter on: the filter's cost in SQLite;
- the ceiling: the same full-text query without the visibility filter, stdlib sqlite3.

    python -m bench.recall [--entries 100000] [--threads 1000] [--reads 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

from bench.harness import Latency
from core.model.memory import parse_recall
from core.model.memory_policy import MemoryPolicy
from core.model.participants import ParticipantSet
from core.model.timeline import ThreadId
from core.storage.database import open_database, upgrade_schema

ROLE = "concierge"
VOCABULARY = 4_000
ZIPF_EXPONENT = 1.0
WORDS_PER_NOTE = (4, 12)
SHARED_THREADS = 0.02
"""The share of threads whose memory policy is `thread_only: false`: their entries are shared."""
NO_THREAD = 0.01
"""The share of entries stored outside any thread."""
LIMIT = 10
CHUNK = 512
SEED = 4

REPOSITORY, FILTERED, CEILING = "repository", "filtered", "ceiling"

_ONSETS = ["", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w"]
_ONSETS += ["br", "ch", "cl", "dr", "fl", "gr", "pl", "sh", "st", "th", "tr"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ou"]
_CODAS = ["", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck"]

# The repository's statement on SQLite, written out. Visible inside a thread: its own entries,
# entries of no thread, shared entries.
_RECALL = """
    SELECT memory_entries.* FROM memory_entries
    JOIN memory_search ON memory_search.entry_id = memory_entries.id
    WHERE memory_entries.role = ? AND memory_search MATCH ?{visible}
    ORDER BY memory_search.rowid DESC LIMIT {limit}
"""
RECALL_VISIBLE = _RECALL.format(
    visible=" AND (memory_entries.thread_id IS NULL OR memory_entries.thread_only IS 0"
    " OR memory_entries.thread_id = ?)",
    limit=LIMIT,
)
RECALL_ALL = _RECALL.format(visible="", limit=LIMIT)

Query = tuple[ThreadId, str]


def vocabulary(size: int, rng: random.Random) -> list[str]:
    """`size` distinct made-up words of two or three syllables, in rank order."""
    words: dict[str, None] = {}
    while len(words) < size:
        syllables = rng.choice((2, 2, 3))
        word = "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)
        )
        if len(word) >= 4:
            words[word] = None
    return list(words)


@dataclass(frozen=True, slots=True)
class Corpus:
    """What was stored: each thread's texts (key None: the entries of no thread)."""

    texts: dict[ThreadId | None, list[str]]
    shared_threads: int
    top_word_share: float
    """The share of entries whose text holds the vocabulary's most frequent word."""
    store_seconds: float


async def load(url: str, entries: int, threads: int, rng: random.Random) -> Corpus:
    words = vocabulary(VOCABULARY, rng)
    weights = list(accumulate(1 / rank**ZIPF_EXPONENT for rank in range(1, len(words) + 1)))
    db = await open_database(url)
    try:
        resolved = await asyncio.gather(
            *(
                db.threads.resolve(ParticipantSet.of([f"person:u{n}", f"role:{ROLE}"]))
                for n in range(threads)
            )
        )
        thread_ids = [thread.id for thread, _ in resolved]
        shared = max(1, round(threads * SHARED_THREADS))
        await asyncio.gather(
            *(
                db.threads.set_memory_policy(thread_id, MemoryPolicy(thread_only=False))
                for thread_id in thread_ids[:shared]
            )
        )
        texts: dict[ThreadId | None, list[str]] = {thread_id: [] for thread_id in thread_ids}
        texts[None] = []
        with_top = 0
        started = time.perf_counter()
        for start in range(0, entries, CHUNK):
            stores = []
            for _ in range(min(CHUNK, entries - start)):
                where = None if rng.random() < NO_THREAD else rng.choice(thread_ids)
                chosen = rng.choices(words, cum_weights=weights, k=rng.randint(*WORDS_PER_NOTE))
                with_top += words[0] in chosen
                text = " ".join(chosen)
                texts[where].append(text)
                payload = {"kind": "note", "text": text}
                stores.append(db.memory.store(ROLE, payload, thread_id=where))
            await asyncio.gather(*stores)
        seconds = time.perf_counter() - started
        return Corpus(texts, shared, with_top / max(entries, 1), seconds)
    finally:
        await db.close()


def queries(corpus: Corpus, count: int, rng: random.Random) -> list[Query]:
    """`count` queries inside random threads: one or two words of one of the thread's entries."""
    threads = [t for t, texts in corpus.texts.items() if t is not None and texts]
    asked = []
    for _ in range(count):
        thread = rng.choice(threads)
        words = list(dict.fromkeys(rng.choice(corpus.texts[thread]).split()))
        asked.append((thread, " ".join(rng.sample(words, min(len(words), rng.choice((1, 2)))))))
    return asked


def fts_match(query: str) -> str:
    """The FTS5 query the repository makes of a recall query: every word, each quoted."""
    return " ".join(f'"{word}"' for word in parse_recall(query).words)


@dataclass(frozen=True, slots=True)
class Pass:
    """One pass over the queries: each query's time, and the ids it found."""

    samples: list[float]
    seconds: float
    found: list[list[str]]

    @property
    def latency(self) -> Latency:
        return Latency.of(self.samples, self.seconds)


async def read_repository(url: str, asked: Sequence[Query]) -> Pass:
    db = await open_database(url)
    try:
        thread, query = asked[0]
        await db.memory.recall(ROLE, parse_recall(query, limit=LIMIT), thread_id=thread)
        samples, found = [], []
        started = time.perf_counter()
        for thread, query in asked:
            recall = parse_recall(query, limit=LIMIT)
            t0 = time.perf_counter()
            entries = await db.memory.recall(ROLE, recall, thread_id=thread)
            samples.append(time.perf_counter() - t0)
            found.append([str(entry.id) for entry in entries])
        return Pass(samples, time.perf_counter() - started, found)
    finally:
        await db.close()


def read_sql(path: Path, asked: Sequence[Query], *, visible_only: bool) -> Pass:
    db = sqlite3.connect(path)
    try:

        def parameters(thread: ThreadId, query: str) -> tuple[str, ...]:
            match = fts_match(query)
            return (ROLE, match, thread) if visible_only else (ROLE, match)

        statement = RECALL_VISIBLE if visible_only else RECALL_ALL
        db.execute(statement, parameters(*asked[0])).fetchall()
        samples, found = [], []
        started = time.perf_counter()
        for thread, query in asked:
            bound = parameters(thread, query)
            t0 = time.perf_counter()
            rows = db.execute(statement, bound).fetchall()
            samples.append(time.perf_counter() - t0)
            found.append([row[0] for row in rows])
        return Pass(samples, time.perf_counter() - started, found)
    finally:
        db.close()


def count_matches(path: Path, asked: Sequence[Query]) -> list[int]:
    """How many entries each query's words match, visible in its thread or not."""
    db = sqlite3.connect(path)
    try:
        statement = "SELECT count(*) FROM memory_search WHERE memory_search MATCH ?"
        return [db.execute(statement, (fts_match(query),)).fetchone()[0] for _, query in asked]
    finally:
        db.close()


@dataclass(frozen=True, slots=True)
class Result:
    entries: int
    threads: int
    shared_threads: int
    no_thread: int
    top_word_share: float
    store_seconds: float
    database_bytes: int
    passes: dict[str, Pass]
    matched: list[int]
    """Per query: how many of the role's entries its words match (visible or not)."""
    wrong: int
    """Queries the repository answered with nothing (each query's words come from an entry of
    its thread) or differently from the SQL with the visibility filter."""

    @property
    def store_rate(self) -> float:
        return self.entries / self.store_seconds

    def latency(self, name: str, low: float = 0, high: float = float("inf")) -> Latency | None:
        """`name`'s pass over the queries matching from `low` up to (not including) `high`
        entries; None if there are none."""
        chosen = self.passes[name]
        samples = [s for s, m in zip(chosen.samples, self.matched, strict=True) if low <= m < high]
        share = len(samples) / len(chosen.samples)
        return Latency.of(samples, chosen.seconds * share) if samples else None


def measure(entries: int, threads: int, reads: int) -> Result:
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        path = Path(tmp) / "recall.db"
        url = f"sqlite+aiosqlite:///{path}"
        asyncio.run(upgrade_schema(url))
        corpus = asyncio.run(load(url, entries, threads, rng))
        size = sum(p.stat().st_size for p in Path(tmp).glob(f"{path.name}*"))
        asked = queries(corpus, reads, rng)
        passes = {
            CEILING: read_sql(path, asked, visible_only=False),
            FILTERED: read_sql(path, asked, visible_only=True),
            REPOSITORY: asyncio.run(read_repository(url, asked)),
        }
        wrong = sum(
            not got or got != expected
            for got, expected in zip(passes[REPOSITORY].found, passes[FILTERED].found, strict=True)
        )
        return Result(
            entries=entries,
            threads=threads,
            shared_threads=corpus.shared_threads,
            no_thread=len(corpus.texts[None]),
            top_word_share=corpus.top_word_share,
            store_seconds=corpus.store_seconds,
            database_bytes=size,
            passes=passes,
            matched=count_matches(path, asked),
            wrong=wrong,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=1_000)
    parser.add_argument("--reads", type=int, default=1_000)
    args = parser.parse_args()
    result = measure(args.entries, args.threads, args.reads)
    print(
        f"stored {result.entries:,} entries in {result.store_seconds:.1f} s "
        f"({result.store_rate:,.0f}/s); database {result.database_bytes / 2**20:.1f} MiB; "
        f"wrong answers {result.wrong}"
    )
    for name in (CEILING, FILTERED, REPOSITORY):
        latency = result.passes[name].latency
        print(f"{name:10} p50 {latency.p50_ms:7.3f} ms  p99 {latency.p99_ms:7.3f} ms")


if __name__ == "__main__":
    main()
