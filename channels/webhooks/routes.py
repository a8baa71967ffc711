"""Wiring the webhooks channel into the application: the operator's sources, each with its
verifier, and `POST /hooks/{source}` (`inbound.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from aiohttp import web

from channels.webhooks import inbound
from channels.webhooks.sources import configured_sources, ready, secret_names
from core.model.webhooks import Source

__all__ = ["add_routes", "configured_sources", "secret_names"]


def add_routes(
    app: web.Application,
    sources: Mapping[str, Source],
    roles: Mapping[str, object],
    secrets: Mapping[str, str],
    *,
    directory: Path,
) -> None:
    """Mount `POST /hooks/{source}` for the sources. A secret setting that is not set (or is no
    secret of the source's kind) stops start-up with the manifest, the field and the setting
    (`ManifestError`)."""
    app[inbound.SOURCES_KEY] = ready(sources, secrets, roles, directory=directory)
    app.router.add_post(inbound.PATH, inbound.receive)
