"""The gateway: settings, the aiohttp app (HTTP API, metrics), the CLI, wiring and lifecycle."""
