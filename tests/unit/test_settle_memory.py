"""`rolecall serve` takes what start-up made out of the garbage collector's sight, so that a full
collection under load walks only what was made since (bench/roundtrip.py shows the pauses)."""

from __future__ import annotations

import gc

from gateway.cli.commands.serve import settle_memory


def test_what_start_up_made_is_frozen_out_of_later_collections() -> None:
    made = [[index] for index in range(10_000)]  # containers the collector tracks
    gc.unfreeze()
    try:
        settle_memory()
        assert gc.get_freeze_count() > len(made)
        tracked = {id(o) for o in gc.get_objects()}
        assert not any(id(box) in tracked for box in made)
    finally:
        gc.unfreeze()
