"""The gateway: settings, the aiohttp application (HTTP API, metrics), the CLI, wiring, lifecycle."""
