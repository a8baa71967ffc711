"""An OTLP/HTTP trace receiver on 127.0.0.1, in a thread of its own: what a gateway with traces on
exports to, in the tracing benchmark and the tests.

`POST /v1/traces` takes an `ExportTraceServiceRequest` in protobuf (gzip'd or not), counts its
spans and answers 200 with an empty `ExportTraceServiceResponse`, as a collector does; with
`keep` it also keeps each span's name, trace id (hex) and its resource's attributes. Anything
else is a 404. It runs its own event loop in a daemon thread, so a synchronous benchmark and an
async test use it alike:

    with Collector.running() as collector:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint}
        ...
        collector.spans   # spans received so far
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

_ANSWER = ExportTraceServiceResponse().SerializeToString()


@dataclass(frozen=True, slots=True)
class Received:
    name: str
    trace_id: str
    resource: dict[str, str]


class Collector:
    def __init__(self, *, keep: bool = False) -> None:
        self.keep = keep
        self.spans = 0
        self.requests = 0
        self.kept: list[Received] = []
        self._lock = threading.Lock()
        self._port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        """The base URL an exporter is given (`OTEL_EXPORTER_OTLP_ENDPOINT`)."""
        return f"http://127.0.0.1:{self._port}"

    @classmethod
    @contextlib.contextmanager
    def running(cls, *, keep: bool = False) -> Iterator[Collector]:
        collector = cls(keep=keep)
        collector.start()
        try:
            yield collector
        finally:
            collector.stop()

    def start(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self._port = int(probe.getsockname()[1])
        ready = threading.Event()
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._serve(ready)), name="otlp-collector", daemon=True
        )
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the OTLP collector did not start")

    def stop(self) -> None:
        if self._loop is not None and self._stopped is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
        if self._thread is not None:
            self._thread.join(10)

    def names(self) -> set[str]:
        with self._lock:
            return {span.name for span in self.kept}

    async def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_post("/v1/traces", self._traces)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", self._port).start()
        ready.set()
        try:
            await self._stopped.wait()
        finally:
            await runner.cleanup()

    async def _traces(self, request: web.Request) -> web.Response:
        body = await request.read()
        if body[:2] == b"\x1f\x8b":  # gzip (OTEL_EXPORTER_OTLP_COMPRESSION=gzip)
            body = gzip.decompress(body)
        export = ExportTraceServiceRequest()
        export.ParseFromString(body)
        count = 0
        kept: list[Received] = []
        for resource_spans in export.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                count += len(scope_spans.spans)
                if self.keep:
                    kept += [
                        Received(s.name, s.trace_id.hex(), resource) for s in scope_spans.spans
                    ]
        with self._lock:
            self.spans += count
            self.requests += 1
            self.kept += kept
        return web.Response(body=_ANSWER, content_type="application/x-protobuf")
