"""The provider the gateway builds from the `OTEL_*` variables (`gateway.tracing`): its resource
(hashed once, equal to the SDK's own) and the sampler the variables name."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.resources import Resource

from gateway.tracing import provider_from_environment


def test_the_resource_names_the_service_and_replica_and_hashes_as_the_sdk_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    provider = provider_from_environment("rep_1", {"OTEL_TRACES_EXPORTER": "none"})
    try:
        resource = provider.resource
        assert resource.attributes["service.name"] == "rolecall"
        assert resource.attributes["service.instance.id"] == "rep_1"
        plain = Resource(resource.attributes, resource.schema_url)
        assert resource == plain and hash(resource) == hash(plain)
    finally:
        provider.shutdown()


def test_the_sampler_is_the_one_the_variables_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.1")
    provider = provider_from_environment("rep_1", {"OTEL_TRACES_EXPORTER": "none"})
    try:
        assert "TraceIdRatioBased{0.1}" in provider.sampler.get_description()
    finally:
        provider.shutdown()
