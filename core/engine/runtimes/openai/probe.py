"""Whether an OpenAI-compatible endpoint answers, as `rolecall doctor` asks: `GET /models` with
the role's key, and the role's model among those it lists."""

from __future__ import annotations

import aiohttp

from core.engine.runtimes.base import AgentError
from core.engine.runtimes.openai.wire import Endpoint

PROBE_TIMEOUT = 10.0
SHOWN = 10
"""Model names said, at most, when the role's is not among them."""


async def list_models(endpoint: Endpoint) -> str:
    """What answered: the endpoint and that it serves the role's model."""
    url = f"{endpoint.base_url}/models"
    timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as http,
            http.get(url, headers=endpoint.headers(stream=False)) as answer,
        ):
            if answer.status in (401, 403):
                key = endpoint.key_setting or "runtime.api_key"
                raise AgentError(
                    f"{endpoint.where} refused the key (HTTP {answer.status}): check {key}"
                )
            if answer.status != 200:
                raise AgentError(f"{endpoint.where}/models answered HTTP {answer.status}")
            body = await answer.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError) as failure:
        said = endpoint.scrub(str(failure) or type(failure).__name__)
        raise AgentError(f"{endpoint.where} did not answer: {said}") from None
    listed = body.get("data") if isinstance(body, dict) else None
    if not isinstance(listed, list):
        raise AgentError(f"{endpoint.where}/models did not answer an OpenAI model list")
    models = [str(m.get("id")) for m in listed if isinstance(m, dict)]
    if endpoint.model not in models:
        shown = ", ".join(models[:SHOWN]) + (", …" if len(models) > SHOWN else "")
        raise AgentError(
            f"{endpoint.where} does not serve the model {endpoint.model!r} "
            f"(it lists: {shown or 'none'})"
        )
    return f"{endpoint.where} serves the model {endpoint.model!r}"
