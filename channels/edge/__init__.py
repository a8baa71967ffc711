"""What every HTTP edge needs, below all of them: not a channel, but the kit that the channels'
routes (the widget, Slack, webhooks) and the gateway's API and MCP endpoint share.

- `errors`: the HTTP layer's one error (`ApiError`) and the one translation of every failure into
  `{"error": {"code", "message"}}` with its status.
- `requests`: the typed app keys of what routes need (the database, the run host) and the strict
  readers of a request's body, query and path.

It points one way: it uses core, and channels and the gateway use it; it imports neither.
"""
