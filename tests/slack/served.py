"""A real `rolecall serve` process, started and killed from an async test while the fake Slack
(or any other loopback server) keeps answering in the test's own event loop.

`tests/cli/conftest.py`'s `running_gateway` waits with blocking sleeps, which would stop an
in-process fake from answering; this one waits with `await`. Each start writes its own log
files (`serve-<n>.stderr`), so what every run logged can be read after it was killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from tests.cli.conftest import REPO, ROLECALL, START_TIMEOUT, STOP_TIMEOUT, clean_env
from tests.serving import free_port
from tests.waiting import eventually


@dataclass
class Served:
    url: str
    process: asyncio.subprocess.Process
    stderr_file: Path

    @property
    def stderr(self) -> str:
        return self.stderr_file.read_text()

    async def kill(self) -> None:
        """SIGKILL: no chance to finish anything, as in a crash."""
        self.process.kill()
        await self.process.wait()


async def _healthy(http: aiohttp.ClientSession, url: str) -> bool:
    try:
        async with http.get(url + "/healthz", timeout=aiohttp.ClientTimeout(total=2)) as answer:
            return answer.status == 200
    except (aiohttp.ClientError, TimeoutError):
        return False


def _log_files(var_dir: Path, run: int) -> tuple[Path, Path]:
    var_dir.mkdir(parents=True, exist_ok=True)
    return var_dir / f"serve-{run}.stdout", var_dir / f"serve-{run}.stderr"


@asynccontextmanager
async def served(
    var_dir: Path, settings: Mapping[str, str], *, run: int = 0
) -> AsyncIterator[Served]:
    """`rolecall serve` on a free port with these environment variables, healthy when this
    yields; stopped with SIGINT afterwards unless it was killed."""
    port = free_port()
    env = clean_env(
        ROLECALL_VAR_DIR=str(var_dir), ROLECALL_HOST="127.0.0.1", ROLECALL_PORT=str(port)
    )
    env.update(settings)
    out, err = _log_files(var_dir, run)
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            str(ROLECALL), "serve", env=env, cwd=REPO, stdout=stdout, stderr=stderr
        )
    gateway = Served(f"http://127.0.0.1:{port}", process, err)
    try:
        async with aiohttp.ClientSession() as http:

            async def healthy() -> bool:
                if process.returncode is not None:
                    pytest.fail(
                        f"rolecall serve exited with {process.returncode}:\n{gateway.stderr}"
                    )
                return await _healthy(http, gateway.url)

            try:
                await eventually(healthy, what="rolecall serve healthy", within=START_TIMEOUT)
            except AssertionError:
                pytest.fail(f"rolecall serve did not become healthy:\n{gateway.stderr}")
        yield gateway
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(process.wait(), STOP_TIMEOUT)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
