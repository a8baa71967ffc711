"""Control of a run whose turn runs on another replica: cancel and start fresh, wherever it runs.

A request to cancel a run's turn, or to start its conversation fresh, may land on any replica;
the turn runs on the one that holds the run's lease. The replica that got the request asks the
holder over the `rolecall_control` channel (PostgreSQL NOTIFY, `core.storage.notify`), and the
holder answers once it has done it:

    {"op": "cancel" | "fresh" | "retry", "run": id, "to": holder, "from": asker, "ask": n}
    {"op": "done", "to": asker, "ask": n, "did": true | false}

Every replica hears every notification and acts only on those addressed to it. An ask that gets
no answer within its wait (the holder died meanwhile) is answered None: a dead holder runs no
turn, and the run's next owner reads the run as the database has it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from core.model.runs.run import RunId

log = logging.getLogger("rolecall.host")

CONTROL_CHANNEL = "rolecall_control"


class Messenger(Protocol):
    async def listen(
        self, channel: str, callback: Callable[[str], None]
    ) -> Callable[[], Awaitable[None]]: ...

    async def notify(self, channel: str, payload: str) -> None: ...


Act = Callable[[str, RunId], Awaitable[bool]]
"""Carry out `op` ("cancel", "fresh", "retry") on a run held here: whether there was something
to do."""


class RemoteControl:
    def __init__(self, messenger: Messenger, replica: str, act: Act) -> None:
        self._messenger = messenger
        self._replica = replica
        self._act = act
        self._asks = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[bool]] = {}
        self._doing: set[asyncio.Task[None]] = set()
        self._stop: Callable[[], Awaitable[None]] | None = None

    async def start(self) -> None:
        self._stop = await self._messenger.listen(CONTROL_CHANNEL, self._heard)

    async def stop(self) -> None:
        if self._stop is not None:
            await self._stop()
            self._stop = None
        for task in list(self._doing):
            task.cancel()

    async def ask(self, holder: str, op: str, run_id: RunId, *, wait: float) -> bool | None:
        """Ask `holder` to carry out `op` on the run: what it answered, or None without an
        answer in `wait` seconds (or when the ask could not be sent)."""
        number = next(self._asks)
        answered: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting[number] = answered
        payload = {"op": op, "run": run_id, "to": holder, "from": self._replica, "ask": number}
        try:
            await self._messenger.notify(CONTROL_CHANNEL, json.dumps(payload))
            async with asyncio.timeout(wait):
                return await answered
        except TimeoutError:
            log.warning(
                "replica %s did not answer %s of run %s in %.0f s", holder, op, run_id, wait
            )
            return None
        except Exception as error:
            log.warning("could not ask replica %s to %s run %s: %s", holder, op, run_id, error)
            return None
        finally:
            self._waiting.pop(number, None)

    def _heard(self, payload: str) -> None:
        try:
            message: Any = json.loads(payload)
            if not isinstance(message, dict) or message.get("to") != self._replica:
                return
            op = message.get("op")
            if op == "done":
                answered = self._waiting.get(int(message["ask"]))
                if answered is not None and not answered.done():
                    answered.set_result(bool(message.get("did")))
            elif op in ("cancel", "fresh", "retry"):
                task = asyncio.create_task(self._do(op, message))
                self._doing.add(task)
                task.add_done_callback(self._doing.discard)
        except (ValueError, KeyError, TypeError):
            log.warning("a control notification was not understood: %.200s", payload)

    async def _do(self, op: str, message: dict[str, Any]) -> None:
        did = False
        try:
            did = await self._act(op, RunId(str(message["run"])))
        except Exception:
            log.exception(
                "%s of run %s asked by replica %s failed", op, message["run"], message["from"]
            )
        answer = {"op": "done", "to": message["from"], "ask": message["ask"], "did": did}
        with contextlib.suppress(Exception):  # the asker times out instead
            await self._messenger.notify(CONTROL_CHANNEL, json.dumps(answer))
