"""The HTTP API under `/api/v1`: one module of routes per resource.

Routes are thin: read the request with `channels.edge.requests` (strict: a typo is an error, not
a silently ignored field), call the repository, serialize (`core.model.serialize`). Failures are
translated in one place, `channels.edge.errors`.
"""
