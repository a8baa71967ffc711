"""Reading role manifests from a directory: one YAML file a role, `<name>.yaml`.

Any problem is a `ManifestError` whose message names the file and the field, e.g.
`manifests/roles/concierge.yaml: runtime.agent: Field required`, so that a bad manifest stops
start-up with one line that says what to fix. Every value must also be one `core.model.values`
accepts (YAML's `"\0"`, `"\ud800"` or `.inf` would reach storage, prompts and logs otherwise):
`concierge.yaml: system_prompt: holds a NUL character (U+0000)`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar, cast

import yaml
from pydantic import BaseModel, ValidationError

from core.model.errors import InvalidInput
from core.model.roles.role import Role
from core.model.values import check_value

SUFFIXES = (".yaml", ".yml")


class ManifestError(InvalidInput):
    code = "invalid_manifest"


def load_roles(directory: Path) -> dict[str, Role]:
    """Every role manifest in `directory`, by role name (files in name order)."""
    if not directory.is_dir():
        raise ManifestError(f"{directory}: not a directory of role manifests")
    roles: dict[str, Role] = {}
    for path in sorted(p for p in directory.iterdir() if p.suffix in SUFFIXES):
        role = load_role(path)
        roles[role.name] = role
    return roles


def load_role(path: Path) -> Role:
    return read_manifest(path, Role, "role", field_of=_role_field)


def _role_field(loc: list[str | int]) -> list[str | int]:
    if loc[:1] == ["runtime"] and len(loc) > 2 and loc[1] in _RUNTIME_KINDS:
        del loc[1]  # the kind pydantic chose the runtime's model by, not a field
    return loc


class _Named(Protocol):
    name: str


M = TypeVar("M", bound=BaseModel)


def read_manifest(
    path: Path,
    model: type[M],
    what: str,
    *,
    field_of: Callable[[list[str | int]], list[str | int]] = lambda loc: loc,
    message_of: Callable[[str], str] = lambda message: message,
) -> M:
    """One YAML manifest of `model` (a role, a webhook source), named after its `name`; any
    problem is a `ManifestError` naming the file and the field."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path}: cannot be read: {exc}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise ManifestError(f"{path}: not valid YAML{line}: {_first_line(exc)}") from None
    if not isinstance(raw, dict):
        raise ManifestError(f"{path}: a {what} manifest is a mapping of fields, like 'name: …'")
    for key, value in raw.items():
        try:
            check_value(value, str(key))
        except InvalidInput as refused:
            raise ManifestError(f"{path}: {_field_first(refused.message)}") from None
    try:
        manifest = model.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in field_of(list(error["loc"]))) or "(the manifest)"
        raise ManifestError(f"{path}: {field}: {message_of(error['msg'])}") from None
    name = cast(_Named, manifest).name
    if path.stem != name:
        raise ManifestError(
            f"{path}: name: is {name!r}, but the file must be named after the {what} "
            f"({name}{path.suffix})"
        )
    return manifest


_RUNTIME_KINDS = frozenset({"builtin", "acp", "a2a", "openai"})


def _field_first(message: str) -> str:
    """`core.model.values`' "runtime.agent holds a NUL …" as "runtime.agent: holds a NUL …", the way
    the other manifest errors name their field."""
    found = _REASON.search(message)
    if found is None:
        return message
    return f"{message[: found.start()]}: {message[found.start() + 1 :]}"


_REASON = re.compile(r" (?=holds a |is an integer |is not a finite |nests deeper )")


def _first_line(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    return str(problem or exc).strip().splitlines()[0]
