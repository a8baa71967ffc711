"""Fixtures of the run host's tests (the helpers are in `tests/host/scene.py`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import pytest

from core.engine.host import HostLimits, RunHost
from core.engine.runtimes.builtin import AGENTS, BuiltinAgent
from core.engine.runtimes.registry import Runtimes
from core.model.roles import Role
from core.storage.database import open_database
from tests.host.scene import FAST, MakeScene, Scene


@pytest.fixture
def make_scene(
    database_url: str,
) -> MakeScene:
    """`async with make_scene(roles, agents=…, limits=…) as scene:` — host started and stopped."""

    @asynccontextmanager
    async def scene(
        roles: list[Role],
        *,
        agents: Mapping[str, type[BuiltinAgent]] | None = None,
        limits: HostLimits = FAST,
        start: bool = True,
    ) -> AsyncIterator[Scene]:
        database = await open_database(database_url)
        host = RunHost(
            database,
            {r.name: r for r in roles},
            Runtimes({**AGENTS, **(agents or {})}),
            limits=limits,
        )
        if start:
            await host.start()
        try:
            yield Scene(database, host)
        finally:
            await host.stop()
            await database.close()

    return scene
