"""Replies shown in the DM as the agent writes them, with Slack's chat streaming.

The run host tells its draft listeners the pieces of a reply as the agent writes it
(`core.engine.host.drafts`). For a DM whose person last wrote in Slack, the first piece of a reply
to them starts a stream in the thread of their message (`chat.startStream`), the next ones are
appended (`chat.appendStream`); a message on the role's initiative is not streamed (it is posted at
the top level once committed). The stream is not the reply: the reply is the message the turn
commits. When the delivery worker comes to that message it claims the stream (`claim`), stops it
(`chat.stopStream`, its text made exactly the message's if they differ) and records the stream's
`ts` as the message's — so there is exactly one final message, streamed or not. The stream is
stopped with the message's metadata, so that after a crash between the stop and the record of its ts
the delivery finds it in the DM's history like any post of the message. A draft whose attempt failed
is stopped and deleted (the retry drafts again); a stream that could not be started leaves the
message to be posted the ordinary way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError

from channels.slack.apps import Clients, NotInstalled
from core.engine.host.drafts import Draft, DraftKind
from core.model.timeline import ThreadId
from core.storage.slack_store import SlackBinding

log = logging.getLogger("rolecall.slack")

_FAILURES = (SlackApiError, aiohttp.ClientError, TimeoutError, NotInstalled)


@dataclass
class _Stream:
    binding: SlackBinding
    thread_ts: str
    ts: str | None = None
    text: str = ""
    ended: bool = False


class Streams:
    def __init__(
        self,
        role: str,
        clients: Clients,
        *,
        binding: Callable[[ThreadId], SlackBinding | None],
        heard: Callable[[ThreadId], str | None],
    ) -> None:
        self._role = role
        self._clients = clients
        self._binding = binding
        self._heard = heard
        self._drafts: dict[ThreadId, asyncio.Queue[Draft]] = {}
        self._workers: dict[ThreadId, asyncio.Task[None]] = {}
        self._streams: dict[ThreadId, deque[_Stream]] = {}

    def on_draft(self, draft: Draft) -> None:
        """The host's draft listener: queue it for the conversation's stream (in order)."""
        if draft.role != self._role or draft.initiative:
            return  # another role's, or posted at the top level once committed
        queue = self._drafts.get(draft.thread_id)
        if queue is None:
            binding, heard = self._binding(draft.thread_id), self._heard(draft.thread_id)
            if binding is None or heard is None or draft.kind is not DraftKind.CHUNK:
                return  # not a DM, or its person has not written in Slack: nothing to thread
            queue = self._drafts[draft.thread_id] = asyncio.Queue()
            self._workers[draft.thread_id] = asyncio.get_running_loop().create_task(
                self._stream(draft.thread_id, binding, heard, queue)
            )
        queue.put_nowait(draft)

    async def claim(
        self, thread_id: ThreadId, text: str, metadata: dict[str, Any] | None = None
    ) -> str | None:
        """The `ts` of the stream that showed this reply, now stopped (with `metadata`) and
        holding exactly `text`; None when no stream did (the reply is to be posted)."""
        queue = self._drafts.get(thread_id)
        if queue is not None:
            await queue.join()  # what was drafted before the reply is in Slack
        streams = self._streams.get(thread_id)
        if not streams or not streams[0].ended:
            return None
        stream = streams.popleft()
        assert stream.ts is not None
        try:
            client = await self._clients.for_team(stream.binding.team_id)
            await client.chat_stopStream(
                channel=stream.binding.channel_id, ts=stream.ts, metadata=metadata
            )
            if stream.text.strip() != text.strip():
                await client.chat_update(channel=stream.binding.channel_id, ts=stream.ts, text=text)
        except _FAILURES as error:
            log.info("slack stream not closed (%s): posting the reply instead", error)
            await self._drop(stream)
            return None
        return stream.ts

    async def close(self) -> None:
        for worker in self._workers.values():
            worker.cancel()
        for worker in self._workers.values():
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        self._workers.clear()

    # --- one conversation's drafts, in order ------------------------------------------------

    async def _stream(
        self,
        thread_id: ThreadId,
        binding: SlackBinding,
        thread_ts: str,
        queue: asyncio.Queue[Draft],
    ) -> None:
        current: _Stream | None = None
        streams = self._streams.setdefault(thread_id, deque())
        while True:
            draft = await queue.get()
            try:
                if draft.kind is DraftKind.CHUNK:
                    if current is None:
                        current = _Stream(binding, self._heard(thread_id) or thread_ts)
                        streams.append(current)
                        await self._start(current, draft.text)
                    elif current.ts is not None:
                        client = await self._clients.for_team(binding.team_id)
                        await client.chat_appendStream(
                            channel=binding.channel_id, ts=current.ts, markdown_text=draft.text
                        )
                        current.text += draft.text
                elif draft.kind is DraftKind.END and current is not None:
                    current.ended = current.ts is not None
                    if current.ts is None:
                        streams.remove(current)
                    current = None
                elif draft.kind is DraftKind.ABANDONED and current is not None:
                    streams.remove(current)
                    await self._drop(current)
                    current = None
            except _FAILURES as error:
                log.info("slack stream broke off (%s): the reply will be posted whole", error)
                if current is not None and current in streams:
                    streams.remove(current)
                    await self._drop(current)
                current = None
            finally:
                queue.task_done()

    async def _start(self, stream: _Stream, text: str) -> None:
        client = await self._clients.for_team(stream.binding.team_id)
        answer = await client.chat_startStream(
            channel=stream.binding.channel_id, thread_ts=stream.thread_ts, markdown_text=text
        )
        stream.ts = str(answer["ts"])
        stream.text = text

    async def _drop(self, stream: _Stream) -> None:
        """A stream that will not be the reply: stopped and deleted."""
        if stream.ts is None:
            return
        with contextlib.suppress(*_FAILURES):
            client = await self._clients.for_team(stream.binding.team_id)
            await client.chat_stopStream(channel=stream.binding.channel_id, ts=stream.ts)
            await client.chat_delete(channel=stream.binding.channel_id, ts=stream.ts)
