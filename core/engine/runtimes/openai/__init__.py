"""The `openai` runtime: a role backed by a model behind any OpenAI-compatible chat-completions
endpoint — hosted (OpenAI and the many services speaking its API) or local (vLLM, llama.cpp's
server, Ollama). The manifest gives the base URL, the model, the NAME of the setting holding the
API key, the temperature, the tool calls a turn may make, and whether to stream:

    runtime:
      kind: openai
      base_url: http://127.0.0.1:11434/v1
      model: llama3.1
      api_key: OLLAMA_KEY        # optional: local servers need none
      temperature: 0.2
      max_tool_calls: 8
      stream: true

The gateway keeps the session's history in its database and runs the model's tool calls itself
(`session.py`); what the model is told is in `history.py`, the HTTP in `wire.py`.
"""

from core.engine.runtimes.openai.history import HistoryLimits
from core.engine.runtimes.openai.session import ChatCompletionsRuntime, ChatSession

__all__ = ["ChatCompletionsRuntime", "ChatSession", "HistoryLimits"]
