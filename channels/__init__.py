"""Channels: thin adapters that carry a thread's committed events to a platform and back.

Inbound, a channel turns a platform event into "this person says this in the conversation with
this role" through the one core call every channel uses. Outbound, it listens to committed
timeline events (a nudge from `core.storage.bus`, then a read after its own cursor) and delivers
them to its bindings. Slack, the web widget and webhooks arrive as subpackages here.
"""
