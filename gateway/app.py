"""The aiohttp application: wiring, lifecycle, and what wraps every request.

`build_app(settings, api_token=…)` returns an application that, on startup, upgrades the schema
and opens the database (closed again on cleanup), and serves:

    GET /healthz    open; `{"status": "ok"}` once the database answers, 503 while it does not
    GET /metrics    open; Prometheus text format
    GET /api/v1/openapi.json   open; the OpenAPI document of all of it (gateway.api.openapi)
    /api/v1/…       the HTTP API (threads, events, roles, runs, tasks, approvals); operator token
    /api/v1/tools…  the agent tools; a run token as bearer instead
    /hooks/{source} inbound webhooks, signed with the source's secret (channels/webhooks)

After the database, the run host starts (`core.engine.host`): it nudges runs with news left from
before a restart, then answers every committed person message in a thread with a role. On cleanup it
stops first (running turns are redone on the next start), then the database closes. Housekeeping
(`gateway.housekeeping`) deletes delivery receipts and OAuth states once their time has passed.

Every request passes through one middleware, `request_edge`, which in order: gives the request an
id (taken from a well-formed `X-Request-Id` or made up, echoed on the response and stamped on
every log line written while the request is handled); checks the operator token on `/api/v1`
and hands its name and the client's address to the handler (`request[OPERATOR_KEY]`,
`gateway.operators`: named, revocable tokens; the configured one is `default`);
refuses what no route may take — a `Content-Encoding` other than gzip or deflate (415), a query
parameter or path parameter that `core.model.values` refuses (422); runs the handler; turns any
failure into the JSON error body (`channels.edge.errors.translate`, the one translation); counts and
times the answer with the status the client actually gets; and writes one access line — method, path
without the query, status, duration, remote address, request id. Headers are never logged, so
neither is the token. The runner's own access log is not needed (`web.run_app(app,
access_log=None)`).

Bodies are read undecoded (`auto_decompress=False`): `channels.edge.requests.read_body` decodes
them, so a body that is not the coding it claims is our 400 rather than aiohttp's 500. Requests
aiohttp's parser cannot read at all (a bad request line, an oversized header, bad chunked
framing) never reach the middleware; `gateway.malformed` answers them in the same JSON shape.

Logging itself (`configure_logging`, the JSON formatter, the request id on every line) is in
`gateway.logs`.
"""

from __future__ import annotations

import itertools
import logging
import re
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from time import perf_counter

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from aiohttp.web_urldispatcher import AbstractResource
from opentelemetry.trace import TracerProvider

from channels.edge.errors import ApiError, translate
from channels.edge.requests import (
    DATABASE_KEY,
    HOST_KEY,
    ROLES_KEY,
    ROSTER_KEY,
    Proxies,
    check_encoding,
    check_request_values,
    client_address,
    read_query,
)
from channels.slack import routes as slack_channel
from channels.web import routes as web_channel
from channels.webhooks import routes as webhook_channel
from core.engine.host import HostLimits, RunHost
from core.engine.host.ownership import LeasedRuns, Ownership
from core.engine.host.slots import ClusterSlots
from core.engine.runtimes.registry import Runtimes
from core.engine.tools.budget import SharedBudgets
from core.model.roles import ManifestError, Role
from core.model.roles.roster import Roster
from core.storage import open_database
from core.storage.bus import CommittedEvents
from core.storage.database import upgrade_schema
from core.storage.engine import is_sqlite
from core.storage.errors import RETRY_AFTER_SECONDS, StorageUnavailable
from core.storage.slot_locks import PgTurnSlots
from gateway import console, malformed, tracing
from gateway.api import approvals as approval_routes
from gateway.api import audit as audit_routes
from gateway.api import endpoints as endpoint_routes
from gateway.api import events as event_routes
from gateway.api import memory as memory_routes
from gateway.api import openapi as openapi_routes
from gateway.api import overview as overview_routes
from gateway.api import persons as person_routes
from gateway.api import replicas as replica_routes
from gateway.api import runs as run_routes
from gateway.api import search as search_routes
from gateway.api import slack as slack_api_routes
from gateway.api import subscriptions as subscription_routes
from gateway.api import tasks as task_routes
from gateway.api import thread_channels as thread_channels_routes
from gateway.api import threads as thread_routes
from gateway.api import tokens as token_routes
from gateway.api import tools as tool_routes
from gateway.housekeeping import add_housekeeping
from gateway.logs import current_request_id
from gateway.mcp import routes as mcp_endpoint
from gateway.metrics import METRICS_KEY, UNMATCHED_ROUTE, Metrics, serve_metrics
from gateway.operators import OPERATOR_KEY, OPERATORS_KEY, Operator, OperatorTokens
from gateway.replica import (
    REPLICA_KEY,
    ThisReplica,
    fingerprint,
    new_replica_id,
    own_address,
    replica_lifecycle,
)
from gateway.roles import configured_roles
from gateway.roles import routes as role_routes
from gateway.runtimes import runtime_kinds
from gateway.settings import (
    Settings,
    ensure_widget_key,
    lease_terms,
    named_secrets,
    slack_config,
    webhook_sources,
    widget_config,
)

API_PREFIX = "/api/v1"
REQUEST_ID_HEADER = "X-Request-Id"

SETTINGS_KEY = web.AppKey("settings", Settings)
RUNTIMES_KEY = web.AppKey("runtimes", Runtimes)

log = logging.getLogger("rolecall.gateway")
access_log = logging.getLogger("rolecall.access")

_WELL_FORMED_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def build_app(
    settings: Settings,
    *,
    api_token: str,
    roles: Mapping[str, Role] | None = None,
    runtimes: Runtimes | None = None,
    secrets: Mapping[str, str] | None = None,
    tracer_provider: TracerProvider | None = None,
) -> web.Application:
    """The gateway's application; the database is opened when it starts, not here.

    `roles` defaults to the manifests in `settings.roles_dir` (a bad one raises `ManifestError`,
    as does a role no runtime here can back, or a Slack app whose secrets are not set);
    `runtimes` to the built-in agents; `secrets` (the settings manifests name) to the
    environment's. Webhook sources are read from `settings.sources_dir` (a bad manifest, or a
    secret that is not set, raises `ManifestError` too). Traces are made when the settings and
    the `OTEL_*` variables say (`gateway.tracing`), or with `tracer_provider` when given.
    """
    known = dict(roles) if roles is not None else configured_roles(settings)
    sources = webhook_sources(settings)
    if secrets is None:
        names = _secret_names(known.values()) | webhook_channel.secret_names(sources)
        secrets = named_secrets(names)
    named = {role.runtime.kind for role in known.values()}
    runtimes = runtimes or Runtimes(kinds=runtime_kinds(settings, secrets, named=named))
    for role in known.values():
        if problem := runtimes.problem(role):
            field, what = problem
            raise ManifestError(f"{settings.roles_dir / (role.name + '.yaml')}: {field}: {what}")
    operators = OperatorTokens(api_token)
    traced = tracer_provider is not None or tracing.wanted(settings)
    if traced and tracer_provider is None:
        tracing.check_environment()
    app = web.Application(
        client_max_size=settings.max_body_bytes,
        middlewares=[
            *tracing.request_spans(traced),
            request_edge(operators, trusted_proxies=settings.trusted_proxies),
        ],
        handler_args={"auto_decompress": False},
    )
    malformed.answer_in_json(app)
    app[SETTINGS_KEY] = settings
    app[ROLES_KEY] = known
    app[ROSTER_KEY] = Roster.of(known, others=settings.allow_unserved_roles)
    app[RUNTIMES_KEY] = runtimes
    app[METRICS_KEY] = Metrics()
    if traced:  # first in, last out: every span of the gateway's life is made
        app.cleanup_ctx.append(tracing.lifecycle(tracer_provider, lambda: app[REPLICA_KEY].id))
    app.cleanup_ctx.append(database_lifecycle)
    app[REPLICA_KEY] = me = ThisReplica(
        id=settings.replica_id or new_replica_id(),
        address=own_address(settings.host, settings.port),
        timeout=settings.replica_timeout,
    )
    app.cleanup_ctx.append(replica_lifecycle(me, *_cluster_facts(settings, api_token)))
    # After the replica agreed with the cluster on the operator token, never before: a replica
    # refused for another token must not have registered it as `default`.
    app[OPERATORS_KEY] = operators
    app.cleanup_ctx.append(operators.lifecycle)
    _replica_metrics(app, me)
    app.cleanup_ctx.append(host_lifecycle)
    app[tool_routes.WAITING_KEY] = set()
    app.on_shutdown.append(tool_routes.cut_waits_short)
    add_housekeeping(app, settings, sources)
    app.router.add_get("/healthz", healthz)
    app.add_routes(replica_routes.routes)
    app.router.add_get("/metrics", metrics)
    app.add_routes(thread_routes.routes)
    app.add_routes(role_routes)
    app.add_routes(run_routes.routes)
    app.add_routes(subscription_routes.routes)
    app.add_routes(event_routes.routes)
    app.add_routes(tool_routes.routes)
    app.add_routes(task_routes.routes)
    app.add_routes(approval_routes.routes)
    app.add_routes(person_routes.routes)
    app.add_routes(memory_routes.routes)
    app.add_routes(token_routes.routes)
    app.add_routes(audit_routes.routes)
    app.add_routes(openapi_routes.routes)
    app.add_routes(overview_routes.routes)
    app.add_routes(search_routes.routes)
    app.add_routes(thread_channels_routes.routes)
    app.add_routes(slack_api_routes.routes)
    console.add_routes(app, settings)  # /console: pages over this API (gateway.console)
    endpoint_routes.add_routes(app, settings)  # and the outbound delivery workers
    mcp_endpoint.add_routes(
        app, at_start=any(runtimes.for_role(r).wants_tools for r in known.values())
    )
    web_channel.add_routes(app, widget_config(settings))
    app[METRICS_KEY].widget_streams.set_function(lambda: web_channel.open_streams(app))
    slack_channel.add_routes(app, slack_config(settings, lease_terms(settings, me)), known, secrets)
    webhook_channel.add_routes(app, sources, known, secrets, directory=settings.sources_dir)
    return app


def _replica_metrics(app: web.Application, me: ThisReplica) -> None:
    metrics = app[METRICS_KEY]

    def owned() -> float:
        host = app.get(HOST_KEY)
        return host.owned() if host is not None else 0

    metrics.replica_runs_owned.set_function(owned)
    metrics.replica_delivery_leases.set_function(lambda: me.delivery_leases)
    me.on_beat.append(metrics.replica_takeovers.inc)


def _cluster_facts(settings: Settings, api_token: str) -> tuple[dict[str, str], dict[str, str]]:
    """What every replica of one database must share (fingerprints), and how to name each;
    nothing on SQLite, which one process serves."""
    if is_sqlite(settings.database):
        return {}, {}
    facts = {
        "operator_token": fingerprint("operator token", api_token),
        "widget_key": fingerprint("widget key", ensure_widget_key(settings)),
    }
    what = {
        "operator_token": "this replica's operator token (ROLECALL_API_TOKEN)",
        "widget_key": "this replica's widget key (ROLECALL_WIDGET_KEY)",
    }
    return facts, what


def _secret_names(roles: Iterable[Role]) -> set[str]:
    """The settings the roles' manifests name (their runtimes' and Slack apps' secrets)."""
    return {name for role in roles for name in role.setting_names}


async def database_lifecycle(app: web.Application) -> AsyncIterator[None]:
    url = app[SETTINGS_KEY].database
    await upgrade_schema(url)
    metrics = app[METRICS_KEY]
    database = await open_database(
        url,
        bus=CommittedEvents(),
        on_appended=metrics.count_appended,
        on_notify_lag=metrics.notify_lag.observe,
    )
    app[DATABASE_KEY] = database
    try:
        yield
    finally:
        await database.close()


async def host_lifecycle(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS_KEY]
    turn_slots = None if is_sqlite(settings.database) else PgTurnSlots(settings.database)
    cluster_slots = ClusterSlots(turn_slots) if turn_slots is not None else None
    host = RunHost(
        app[DATABASE_KEY],
        app[ROLES_KEY],
        app[RUNTIMES_KEY],
        roster=app[ROSTER_KEY],
        limits=HostLimits(
            slots=settings.max_turns,
            attempts=settings.turn_attempts,
            backoff=settings.retry_backoff,
        ),
        observer=app[METRICS_KEY].host,
        tools_url=settings.base_url,
        ownership=_ownership(app),
        tool_budgets=None if is_sqlite(settings.database) else SharedBudgets(app[DATABASE_KEY]),
        slots=cluster_slots,
    )
    await host.start()
    app[HOST_KEY] = host
    try:
        yield
    finally:
        await host.stop()
        if cluster_slots is not None:
            await cluster_slots.close()
        if turn_slots is not None:
            await turn_slots.close()


def _ownership(app: web.Application) -> Ownership | None:
    """Runs under leases when replicas may share the database (PostgreSQL); on SQLite, one
    process serves it and runs every run."""
    if is_sqlite(app[SETTINGS_KEY].database):
        return None
    me = app[REPLICA_KEY]
    return LeasedRuns(app[DATABASE_KEY].leases, me.id, ttl=me.ttl)


async def metrics(request: web.Request) -> web.Response:
    read_query(request, [])
    return await serve_metrics(request)


async def healthz(request: web.Request) -> web.Response:
    read_query(request, [])
    """200 once the database answers; 503 `database_unavailable` with `Retry-After` while it is
    unreachable (`channels.edge.errors`), and 200 again once it is back."""
    try:
        await request.app[DATABASE_KEY].threads.head()
    except StorageUnavailable:
        raise
    except Exception:
        log.exception("health check: the database does not answer")
        raise ApiError(
            503,
            "unavailable",
            "the database does not answer",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        ) from None
    return web.json_response({"status": "ok"})


# --- what wraps every request ---------------------------------------------------------------


def request_edge(operators: OperatorTokens, *, trusted_proxies: Proxies = ()) -> Middleware:
    """The one middleware every request passes through. In order: give the request an id; check
    the operator token on `/api/v1` (its name, with the client's address, is
    `request[OPERATOR_KEY]`); refuse an unsupported `Content-Encoding` and query or path
    parameters `core.model.values` refuses; run the handler; turn any failure into the JSON error
    body (`channels.edge.errors.translate`); count and time the answer as the client gets it; write
    the access line. One layer instead of four: each aiohttp middleware costs a wrapper per request.
    """

    @web.middleware
    async def edge(request: web.Request, handler: Handler) -> web.StreamResponse:
        offered = request.headers.get(REQUEST_ID_HEADER, "")
        well_formed = offered and _WELL_FORMED_REQUEST_ID.fullmatch(offered)
        request_id = offered if well_formed else _new_id()
        token = current_request_id.set(request_id)
        started = perf_counter()
        resource = request.match_info.route.resource
        try:
            try:
                if _needs_operator_token(request.path, resource):
                    name = await operators.identify(_bearer(request))
                    client = client_address(request, trusted_proxies)
                    request[OPERATOR_KEY] = Operator(name=name, client=client)
                check_encoding(request)
                check_request_values(request)
                response = await handler(request)
            except Exception as error:
                response = translate(request, error)
        finally:
            current_request_id.reset(token)
        seconds = perf_counter() - started
        route = resource.canonical if resource is not None else UNMATCHED_ROUTE
        request.app[METRICS_KEY].observe(request.method, route, response.status, seconds)
        if not response.prepared:  # a streamed response has sent its headers already
            response.headers[REQUEST_ID_HEADER] = request_id
        if access_log.isEnabledFor(logging.INFO):
            remote = client_address(request, trusted_proxies)
            _log_access(request, response, seconds, request_id, remote)
        return response

    return edge


_ids = itertools.count(1)
_process_tag = uuid.uuid4().hex[:8]


def _new_id() -> str:
    """Unique across processes (a random per-process tag) and cheap (a counter)."""
    return f"{_process_tag}-{next(_ids):x}"


def _log_access(
    request: web.Request,
    response: web.StreamResponse,
    seconds: float,
    request_id: str,
    remote: str,
) -> None:
    # Headers are deliberately absent: the token must never reach a log.
    fields = {
        "method": request.method,
        "path": request.path,
        "status": response.status,
        "duration_ms": round(seconds * 1000, 3),
        "remote": remote,
        "request_id": request_id,
    }
    access_log.info(
        "%s %s %s %s %.1fms",
        remote,
        request.method,
        request.path,
        response.status,
        seconds * 1000,
        extra={"fields": fields, "request_id": request_id},
    )


def _needs_operator_token(path: str, resource: AbstractResource | None) -> bool:
    """Routes under `/api/v1` (by the path asked for, or by the route it matched) need the
    operator token; but for the agent tools, which take a run token instead
    (`gateway.api.tools`), and the OpenAPI document, which is open."""
    if _under(path, tool_routes.TOOLS_PREFIX) or path == openapi_routes.OPENAPI_PATH:
        return False
    return _under(path, API_PREFIX) or (
        resource is not None and _under(resource.canonical, API_PREFIX)
    )


def _under(path: str, prefix: str) -> bool:
    """`path` is `prefix` itself or below it (`/api/v1x` is not below `/api/v1`)."""
    return path.startswith(prefix) and (len(path) == len(prefix) or path[len(prefix)] == "/")


def _bearer(request: web.Request) -> str | None:
    """The bearer token the request carries, or None."""
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return credentials.strip() or None
