"""The scale-out manifests (manifests/deploy) say what docs/scale.md says, read as data.

Nothing here runs Docker, HAProxy or Kubernetes (none of them is on the test machines): the
files are parsed and their promises checked against the code —

- every YAML file parses;
- Compose: one PostgreSQL 16, at least two replicas of the same image and one load balancer,
  the only service with a published port; every replica takes the database URL, the operator
  token and the widget key from the same env file (never its own), and has its own
  `ROLECALL_REPLICA_ID`; the env file's example secrets are refused by the settings, so nobody
  runs on them;
- HAProxy: round robin, no cookie or stick directive, every server checked on `/readyz` (or
  tracking a checked one), the servers are the Compose replicas, and the widget's stream (the
  real route) has a long server timeout and no compression, and HAProxy's own 503 (no replica
  ready) is the gateway's JSON error body with `Retry-After`;
- Kubernetes: the kustomization lists every manifest; the Deployment's probes ask `/healthz` and
  `/readyz` on the container's port, the replica id comes from the pod's name, the secrets from
  the Secret, and the grace period outlasts a clean stop; the Service has no affinity;
- every `ROLECALL_*` name in these files (and in docs/scale.md) is a setting of
  `gateway.settings.Settings`;
- the paths the probes and the load balancer name are routes of the gateway.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from aiohttp import web

from channels.web.routes import PING_SECONDS, PREFIX
from gateway.app import build_app
from gateway.settings import ENV_PREFIX, Settings, SettingsError, load_settings
from tests.settings import make_settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "manifests" / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
SCALE_DOC = ROOT / "docs" / "scale.md"
YAML_FILES = sorted([*DEPLOY.rglob("*.yaml"), *DEPLOY.rglob("*.yml")])

SETTING_NAMES = frozenset(ENV_PREFIX + name.upper() for name in Settings.model_fields)
COMING = frozenset({"ROLECALL_REPLICA_ID", "ROLECALL_REPLICA_TIMEOUT"})
"""Issue #18 adds these two settings; allowed while they are not yet fields."""
CLI_ONLY = frozenset({"ROLECALL_URL"})
"""Not a setting: the gateway the CLI talks to (README, "CLI"); docs may name it."""
SHARED = ("ROLECALL_DATABASE_URL", "ROLECALL_API_TOKEN", "ROLECALL_WIDGET_KEY")
"""What every replica must have the same of."""
STREAM_PATH = PREFIX + "/stream"
SHUTDOWN_TIMEOUT = float(inspect.signature(web.run_app).parameters["shutdown_timeout"].default)
"""How long aiohttp's clean stop waits for requests in flight before the cleanups run."""
_NAME = re.compile(r"\bROLECALL_[A-Z0-9_]*[A-Z0-9]")
_DURATION = re.compile(r"^(\d+)(ms|s|m|h)?$")


def _yaml(path: Path) -> list[Any]:
    return list(yaml.safe_load_all(path.read_text(encoding="utf-8")))


def _seconds(value: object) -> float:
    """A duration as Compose and HAProxy write it (`90s`, `10m`, `500ms`; bare: the unit's)."""
    match = _DURATION.match(str(value).strip())
    assert match, f"not a duration: {value!r}"
    number, unit = int(match.group(1)), match.group(2) or "s"
    return number * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


# --- every file ------------------------------------------------------------------------------


def test_the_manifests_are_there() -> None:
    names = {str(p.relative_to(DEPLOY)) for p in DEPLOY.rglob("*") if p.is_file()}
    assert names >= {
        "Dockerfile",
        "docker-compose.yml",
        "haproxy.cfg",
        "rolecall.env.example",
        "README.md",
        "kubernetes/kustomization.yaml",
        "kubernetes/secret.yaml",
        "kubernetes/deployment.yaml",
        "kubernetes/service.yaml",
    }


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_yaml_file_parses_into_mappings(path: Path) -> None:
    documents = _yaml(path)
    assert documents
    assert all(isinstance(document, dict) for document in documents)


def _named_in(path: Path) -> set[str]:
    return set(_NAME.findall(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    "path",
    sorted(p for p in DEPLOY.rglob("*") if p.is_file() and p.name != "README.md"),
    ids=lambda p: str(p.relative_to(DEPLOY)),
)
def test_every_rolecall_name_in_a_manifest_is_a_setting(path: Path) -> None:
    assert _named_in(path) - SETTING_NAMES - COMING == set()


@pytest.mark.parametrize("path", [DEPLOY / "README.md", SCALE_DOC], ids=lambda p: p.name)
def test_every_rolecall_name_in_the_deploy_docs_is_a_setting_or_the_clis(path: Path) -> None:
    assert _named_in(path) - SETTING_NAMES - COMING - CLI_ONLY == set()


# --- the image -------------------------------------------------------------------------------


def _dockerfile() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments left out."""
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = "\n".join(lines).replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip()]


def _final_stage() -> list[str]:
    instructions = _dockerfile()
    last_from = max(i for i, line in enumerate(instructions) if line.startswith("FROM "))
    return instructions[last_from:]


def test_the_image_is_python_3_11_slim_and_serves_as_a_non_root_user() -> None:
    stages = [line.split()[1] for line in _dockerfile() if line.startswith("FROM ")]
    assert stages and all(image == "python:3.11-slim" for image in stages)
    final = _final_stage()
    users = [line.split()[1] for line in final if line.startswith("USER ")]
    assert users, "the final stage names a user"
    assert users[-1].split(":")[0] not in ("root", "0")
    assert final[-1] == 'CMD ["rolecall", "serve"]'


def test_the_image_installs_from_the_build_context_only() -> None:
    installs = [line for line in _final_stage() if "pip install" in line]
    assert installs and all("--no-index" in line for line in installs)
    assert "pip wheel --wheel-dir /wheels ." in " ".join(_dockerfile())


def _image_uid() -> int:
    users = [line.split()[1] for line in _final_stage() if line.startswith("USER ")]
    return int(users[-1].split(":")[0])


# --- Compose ---------------------------------------------------------------------------------


def _compose() -> dict[str, Any]:
    (compose,) = _yaml(DEPLOY / "docker-compose.yml")
    assert isinstance(compose, dict)
    return compose


def _services() -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = _compose()["services"]
    return services


def _replicas() -> dict[str, dict[str, Any]]:
    """The services built from the Dockerfile: the replicas."""
    return {
        name: service
        for name, service in _services().items()
        if isinstance(service.get("build"), dict)
        and service["build"].get("dockerfile") == "manifests/deploy/Dockerfile"
    }


def _by_image(prefix: str) -> list[str]:
    return [n for n, s in _services().items() if str(s.get("image", "")).startswith(prefix)]


def _environment(service: dict[str, Any]) -> dict[str, str]:
    environment = service.get("environment") or {}
    if isinstance(environment, list):  # `- NAME=value`
        environment = dict(item.split("=", 1) for item in environment)
    return {str(k): str(v) for k, v in environment.items()}


def _env_files(service: dict[str, Any]) -> list[str]:
    files = service.get("env_file") or []
    return [files] if isinstance(files, str) else [str(f) for f in files]


def _env_example() -> dict[str, str]:
    values: dict[str, str] = {}
    for line in (DEPLOY / "rolecall.env.example").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value
    return values


def test_compose_has_one_postgresql_16_several_replicas_and_a_load_balancer() -> None:
    postgres = _by_image("postgres:16")
    balancers = _by_image("haproxy")
    replicas = _replicas()
    assert len(postgres) == 1
    assert len(replicas) >= 2
    assert len(balancers) == 1
    assert len({str(s["image"]) for s in replicas.values()}) == 1, "one image for all"
    (balancer,) = balancers
    assert set(replicas) <= set(_services()[balancer]["depends_on"])
    published = [name for name, service in _services().items() if service.get("ports")]
    assert published == [balancer], "clients reach the replicas through the load balancer"
    for service in replicas.values():
        assert service["depends_on"][postgres[0]] == {"condition": "service_healthy"}


def test_compose_replicas_share_the_database_and_secrets_from_one_env_file() -> None:
    replicas = _replicas()
    env_files = {tuple(_env_files(service)) for service in replicas.values()}
    assert env_files == {("rolecall.env",)}
    for service in replicas.values():
        assert set(_environment(service)).isdisjoint(SHARED), "shared: never set per replica"
    example = _env_example()
    assert set(SHARED) <= set(example)


def test_compose_replicas_each_have_their_own_replica_id() -> None:
    ids = [_environment(service).get("ROLECALL_REPLICA_ID") for service in _replicas().values()]
    assert all(ids)
    assert len(set(ids)) == len(ids)


def test_compose_database_url_is_the_compose_postgresql() -> None:
    example = _env_example()
    url = urlsplit(example["ROLECALL_DATABASE_URL"])
    assert url.scheme == "postgresql+asyncpg"
    assert url.hostname in _by_image("postgres:16")
    assert url.username == example["POSTGRES_USER"]
    assert url.password == example["POSTGRES_PASSWORD"]
    assert url.path == "/" + example["POSTGRES_DB"]


@pytest.mark.parametrize("field", ["api_token", "widget_key"])
def test_the_example_secrets_are_refused_so_nobody_runs_on_them(field: str) -> None:
    placeholder = _env_example()[ENV_PREFIX + field.upper()]
    with pytest.raises(SettingsError, match=ENV_PREFIX + field.upper()):
        load_settings(**{field: placeholder})


def test_compose_gives_a_replica_longer_than_a_clean_stop() -> None:
    for service in _replicas().values():
        assert _seconds(service["stop_grace_period"]) > SHUTDOWN_TIMEOUT


# --- HAProxy ---------------------------------------------------------------------------------


def _haproxy() -> dict[str, list[list[str]]]:
    """haproxy.cfg's sections (`backend replicas`, …), each its lines split into words."""
    sections: dict[str, list[list[str]]] = {}
    current: list[list[str]] = []
    for raw in (DEPLOY / "haproxy.cfg").read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        if not line[0].isspace():
            current = sections.setdefault(line.strip(), [])
        else:
            current.append(line.split())
    return sections


def _backends() -> dict[str, list[list[str]]]:
    return {
        header.split()[1]: lines
        for header, lines in _haproxy().items()
        if header.startswith("backend ")
    }


def _checks_readyz(lines: list[list[str]]) -> bool:
    words = [" ".join(line) for line in lines]
    return "option httpchk" in words and any(
        w.startswith("http-check send meth GET uri /readyz") for w in words
    )


def test_haproxy_sends_traffic_only_to_ready_replicas() -> None:
    backends = _backends()
    checked = {name for name, lines in backends.items() if _checks_readyz(lines)}
    assert checked
    for name, lines in backends.items():
        for line in (line for line in lines if line[0] == "server"):
            if "track" in line:
                assert line[line.index("track") + 1].split("/")[0] in checked
            else:
                assert name in checked and "check" in line
    for name in checked:
        assert ["http-check", "expect", "status", "200"] in backends[name]


def test_haproxy_balances_round_robin_with_no_affinity() -> None:
    words = [line for lines in _haproxy().values() for line in lines]
    assert not [w for w in words if w[0] in ("cookie", "stick", "stick-table", "hash-type")]
    assert not [w for w in words if w[0] == "server" and "cookie" in w]
    balances = [w for w in words if w[0] == "balance"]
    assert len(balances) == len(_backends())
    assert all(w == ["balance", "roundrobin"] for w in balances)
    assert not [w for w in words if w[0] == "compression"], "compression holds back streams"


def test_haproxy_servers_are_the_compose_replicas_on_their_port() -> None:
    port = _dockerfile_env()["ROLECALL_PORT"]
    for lines in _backends().values():
        servers = {line[2] for line in lines if line[0] == "server"}
        assert servers == {f"{name}:{port}" for name in _replicas()}


def test_haproxy_gives_the_widget_stream_a_long_server_timeout() -> None:
    frontends = [lines for header, lines in _haproxy().items() if header.startswith("frontend")]
    (frontend,) = frontends
    acls = {line[1]: line[2:] for line in frontend if line[0] == "acl"}
    stream_acls = [name for name, rule in acls.items() if rule == ["path", STREAM_PATH]]
    assert stream_acls, f"an acl matching exactly {STREAM_PATH}"
    (backend,) = [
        line[1] for line in frontend if line[0] == "use_backend" and line[-1] in stream_acls
    ]
    defaults = _haproxy()["defaults"]
    timeouts = {line[1]: _seconds(line[2]) for line in _backends()[backend] if line[0] == "timeout"}
    client = {line[1]: _seconds(line[2]) for line in defaults if line[0] == "timeout"}
    assert timeouts["server"] >= 300 > PING_SECONDS
    assert client["client"] >= 300


def test_haproxy_answers_its_own_503_as_the_gateway_would() -> None:
    # When no replica is ready (all of them cut off from the database, say), HAProxy answers.
    line = next(
        raw.strip()
        for raw in (DEPLOY / "haproxy.cfg").read_text(encoding="utf-8").splitlines()
        if raw.strip().startswith("http-error status 503 ")
    )
    assert "content-type application/json" in line
    body = json.loads(line.split(" string '", 1)[1].split("'", 1)[0])
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert line.split("hdr Retry-After ", 1)[1].split()[0].isdigit()


def _dockerfile_env() -> dict[str, str]:
    values: dict[str, str] = {}
    for line in _final_stage():
        if line.startswith("ENV "):
            values |= dict(re.findall(r"(\w+)=(\S+)", line))
    return values


# --- Kubernetes ------------------------------------------------------------------------------


def _kubernetes() -> dict[str, dict[str, Any]]:
    """The manifests the kustomization lists, by kind."""
    (kustomization,) = _yaml(KUBERNETES / "kustomization.yaml")
    kinds: dict[str, dict[str, Any]] = {}
    for resource in kustomization["resources"]:
        for document in _yaml(KUBERNETES / resource):
            kinds[document["kind"]] = document
    return kinds


def test_the_kustomization_lists_every_manifest_beside_it() -> None:
    (kustomization,) = _yaml(KUBERNETES / "kustomization.yaml")
    beside = {p.name for p in KUBERNETES.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(kustomization["resources"]) == sorted(beside)
    assert set(_kubernetes()) == {"Secret", "Deployment", "Service"}


def _container() -> dict[str, Any]:
    (container,) = _kubernetes()["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert isinstance(container, dict)
    return container


def _env(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in container["env"]}


def _probe_target(probe: dict[str, Any]) -> tuple[str, int]:
    """The path and the container port number an HTTP probe asks."""
    get = probe["httpGet"]
    ports = {p["name"]: p["containerPort"] for p in _container()["ports"]}
    port = get["port"]
    return get["path"], ports[port] if isinstance(port, str) else int(port)


def test_the_deployment_probes_healthz_and_readyz_on_the_container_port() -> None:
    container = _container()
    (port,) = [p["containerPort"] for p in container["ports"]]
    assert _probe_target(container["livenessProbe"]) == ("/healthz", port)
    assert _probe_target(container["readinessProbe"]) == ("/readyz", port)
    assert _probe_target(container["startupProbe"]) == ("/healthz", port)
    env = _env(container)
    assert env["ROLECALL_PORT"]["value"] == str(port)
    assert env["ROLECALL_HOST"]["value"] == "0.0.0.0"


def test_the_deployment_runs_three_replicas_each_named_by_its_pod() -> None:
    deployment = _kubernetes()["Deployment"]
    assert deployment["spec"]["replicas"] == 3
    replica_id = _env(_container())["ROLECALL_REPLICA_ID"]
    assert replica_id["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}


def test_the_deployment_takes_every_shared_setting_from_the_secret() -> None:
    secret = _kubernetes()["Secret"]
    env = _env(_container())
    for name in SHARED:
        reference = env[name]["valueFrom"]["secretKeyRef"]
        assert reference["name"] == secret["metadata"]["name"]
        assert reference["key"] in secret["stringData"]


@pytest.mark.parametrize("field", ["api_token", "widget_key"])
def test_the_secrets_placeholders_are_refused_so_nobody_runs_on_them(field: str) -> None:
    placeholder = _kubernetes()["Secret"]["stringData"][ENV_PREFIX + field.upper()]
    with pytest.raises(SettingsError, match=ENV_PREFIX + field.upper()):
        load_settings(**{field: placeholder})


def test_the_deployment_stops_a_pod_cleanly_before_killing_it() -> None:
    spec = _kubernetes()["Deployment"]["spec"]["template"]["spec"]
    pause = _container().get("lifecycle", {}).get("preStop", {}).get("exec", {})
    paused = float(pause["command"][1]) if pause.get("command", [""])[0] == "sleep" else 0.0
    assert spec["terminationGracePeriodSeconds"] > paused + SHUTDOWN_TIMEOUT


def test_the_deployment_runs_as_the_images_user_with_resources() -> None:
    spec = _kubernetes()["Deployment"]["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] == _image_uid()
    resources = _container()["resources"]
    assert resources["requests"]["cpu"] and resources["requests"]["memory"]
    assert resources["limits"]["memory"]


def test_the_service_reaches_every_replica_with_no_affinity() -> None:
    service = _kubernetes()["Service"]
    pods = _kubernetes()["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pods.items()
    assert service["spec"].get("sessionAffinity", "None") == "None"
    (port,) = service["spec"]["ports"]
    assert port["targetPort"] in {p["name"] for p in _container()["ports"]}


# --- the paths they name are the gateway's ---------------------------------------------------


def _probed_paths() -> Iterator[str]:
    container = _container()
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        yield container[probe]["httpGet"]["path"]
    for lines in _backends().values():
        for line in lines:
            if line[:2] == ["http-check", "send"]:
                yield line[line.index("uri") + 1]
    yield STREAM_PATH


@pytest.mark.parametrize("path", sorted(set(_probed_paths())))
def test_a_path_the_manifests_name_is_a_get_route_of_the_gateway(path: str, tmp_path: Path) -> None:
    app = build_app(make_settings(tmp_path), api_token="t" * 32, roles={})
    routes = {
        route.resource.canonical
        for route in app.router.routes()
        if route.method == "GET" and route.resource is not None
    }
    assert path in routes
