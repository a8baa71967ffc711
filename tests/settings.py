"""The gateway's settings as the tests build them: the one settings factory.

`make_settings(tmp_path, **overrides)` keeps everything a test's gateway writes under its own
`tmp_path` (the var directory and a SQLite file, `t.db`), so tests never share state; each test
names only the settings it is about. The rest are the product's defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.settings import Settings


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Settings whose state lives under `tmp_path`, with `overrides` on top. Conversations
    with roles this gateway does not serve are accepted (`allow_unserved_roles`): the thread
    model's tests talk to roles nobody answers for, so that their timelines hold only what they
    post; tests of the refusal turn it off."""
    values: dict[str, Any] = {
        "var_dir": tmp_path,
        "database_url": f"sqlite+aiosqlite:///{tmp_path}/t.db",
        "allow_unserved_roles": True,
    }
    return Settings(**(values | overrides))
