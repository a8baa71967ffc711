"""The ceiling for message ingest: a bare aiohttp handler that inserts one row with stdlib sqlite3.

No validation, no auth, no membership check, no timeline rules — one INSERT and one COMMIT per
request, on the same durability as the gateway (WAL, synchronous=FULL). Whatever the gateway
does on top of this costs throughput; the ratio says how much.

    python -m bench.ceiling_server PORT DB_PATH     one INSERT and COMMIT per request
    python -m bench.ceiling_server PORT -            no database at all: aiohttp alone
"""

from __future__ import annotations

import json
import sqlite3
import sys

from aiohttp import web
from aiohttp.typedefs import Handler


def main() -> None:
    port, path = int(sys.argv[1]), sys.argv[2]
    app = web.Application()
    app.router.add_post("/api/v1/threads/{id}/messages", _store(path) if path != "-" else _bare)
    app.router.add_get("/healthz", _healthz)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


async def _healthz(_request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def _bare(request: web.Request) -> web.Response:
    await request.read()
    return web.json_response({"id": 0}, status=201)


def _store(path: str) -> Handler:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute(
        "CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, thread TEXT, body TEXT)"
    )

    async def post(request: web.Request) -> web.Response:
        body = await request.read()
        db.execute("BEGIN")
        cursor = db.execute(
            "INSERT INTO messages (thread, body) VALUES (?, ?)",
            (request.match_info["id"], body.decode()),
        )
        db.execute("COMMIT")
        return web.json_response({"id": cursor.lastrowid}, status=201, dumps=json.dumps)

    return post


if __name__ == "__main__":
    main()
