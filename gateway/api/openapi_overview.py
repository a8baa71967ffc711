"""The schema of `GET /api/v1/overview`'s answer (`gateway.api.overview`), for the OpenAPI
document (`gateway.api.openapi_paths`). Every object in it is closed: a field the handler writes
and this does not name fails tests/api/test_openapi.py."""

from __future__ import annotations

from collections.abc import Mapping

from gateway.api.openapi_schemas import NUMBER, STRING, TIME, Schema, array, described, nullable

COUNT: Schema = {"type": "integer", "minimum": 0}


def _closed(properties: Mapping[str, Schema], description: str | None = None) -> Schema:
    schema: Schema = {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties),
        "additionalProperties": False,
    }
    return {**schema, "description": description} if description else schema


def _counts(*named: tuple[str, str]) -> dict[str, Schema]:
    return {name: described(COUNT, what) for name, what in named}


_RUNS = _closed(
    _counts(
        ("total", "every run"),
        ("failed", "runs whose status is failed (overlaps the four below)"),
        ("running", "a turn of it runs here now"),
        ("awake", "its session is held here, no turn runs"),
        ("asleep", "its session was opened once and is not held here"),
        ("not_opened", "its current session has not been opened yet"),
    )
)
_MILLIS: Schema = {"type": "number", "minimum": 0}
_LAST_HOUR = _closed(
    {
        "since": described(TIME, "the start of the hour: 59 whole minutes before this one"),
        **_counts(("turns", "turns that finished in the hour"), ("failed", "of them, failed")),
        "per_minute": described({**NUMBER, "minimum": 0}, "turns / 60"),
        "latency_ms": nullable(
            _closed(
                {"p50": _MILLIS, "p95": _MILLIS},
                "the turns' durations (finished minus started), nearest rank; null: no turn",
            )
        ),
        "failures": described(
            array(
                _closed(
                    {
                        "role": STRING,
                        **_counts(("turns", "its failed turns"), ("runs", "the runs they were in")),
                    }
                )
            ),
            "per role with a failed turn in the hour, in name order",
        ),
        "minutes": described(
            array(
                _closed(
                    {
                        "at": described(TIME, "the minute's start"),
                        **_counts(("turns", "finished in it"), ("failed", "of them, failed")),
                    }
                )
            ),
            "the hour minute by minute, oldest first: always 60",
        ),
    }
)
_DELIVERIES = _closed(
    {
        "slack": described(
            array(
                _closed(
                    {
                        "role": STRING,
                        **_counts(
                            ("behind", "committed events past the role's Slack cursor"),
                            ("intents", "posts meant and not recorded yet"),
                        ),
                    }
                )
            ),
            "each role whose Slack delivery has started, in name order",
        ),
        "endpoints": _closed(
            _counts(
                ("active", "endpoints delivering"),
                ("parked", "endpoints parked after failing"),
                ("disabled", "endpoints disabled"),
                ("behind", "committed events past the cursors of those not disabled"),
                ("behind_parked", "of them, waiting on parked endpoints"),
            )
        ),
        "widget": _closed(
            _counts(
                ("streams", "widget streams open on this replica"),
                ("queued", "items queued for them, not yet sent"),
            )
        ),
    }
)


def overview_schema() -> Schema:
    return _closed(
        {
            "at": TIME,
            "replica": described(STRING, "the replica that answered (its run host's figures)"),
            "threads": described(COUNT, "every thread"),
            "runs": _RUNS,
            "failures_last_hour": described(COUNT, "turns that ended failed in the last hour"),
            "last_hour": _LAST_HOUR,
            "deliveries": _DELIVERIES,
            "replicas": _closed(
                _counts(("total", "replicas not stopped cleanly"), ("live", "of them, live"))
            ),
        }
    )
