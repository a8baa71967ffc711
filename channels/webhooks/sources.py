"""The webhook sources the operator configured: `ROLECALL_SOURCES_DIR` (default
`manifests/sources`), one YAML manifest a source, `<name>.yaml` (the model:
`core.model.webhooks.Source`).

Read once at start. Anything wrong stops start-up with one line naming the file and the field, as
for role manifests: a manifest that does not parse or validate, a file not named after its
source, a secret setting that is not set (or cannot be a secret of the source's kind), an
assignee role this gateway does not serve. The default directory may be missing (no sources); a
directory the operator set must exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from channels.webhooks.signatures import BadSecret, Verifier, verifier
from core.model.roles import ManifestError
from core.model.roles.manifests import read_manifest
from core.model.webhooks import Source

SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True, slots=True)
class InboundSource:
    """A source ready to receive: its manifest and how its deliveries are verified."""

    source: Source
    verifier: Verifier


def configured_sources(directory: Path, *, default: bool) -> dict[str, Source]:
    """The sources in `directory` by name; `default`: the directory is the default one, which
    may be missing."""
    if not directory.exists() and default:
        return {}
    if not directory.is_dir():
        raise ManifestError(f"ROLECALL_SOURCES_DIR: {directory} is not a directory")
    sources: dict[str, Source] = {}
    for path in sorted(p for p in directory.iterdir() if p.suffix in SUFFIXES):
        source = load_source(path)
        sources[source.name] = source
    return sources


def load_source(path: Path) -> Source:
    return read_manifest(
        path, Source, "source", message_of=lambda message: message.removeprefix("Value error, ")
    )


def secret_names(sources: Mapping[str, Source]) -> set[str]:
    """The settings the sources' manifests name."""
    return {source.secret for source in sources.values()}


def ready(
    sources: Mapping[str, Source],
    secrets: Mapping[str, str],
    roles: Mapping[str, object],
    *,
    directory: Path,
) -> dict[str, InboundSource]:
    """Each source with its verifier, from the secret its setting holds."""
    out: dict[str, InboundSource] = {}
    for name, source in sources.items():
        where = next(
            (p for p in (directory / f"{name}{s}" for s in SUFFIXES) if p.exists()),
            directory / f"{name}.yaml",
        )
        value = secrets.get(source.secret, "").strip()
        if not value:
            raise ManifestError(f"{where}: secret: the setting {source.secret} is not set")
        try:
            check = verifier(source.kind, value)
        except BadSecret as exc:
            raise ManifestError(f"{where}: secret: the setting {source.secret}: {exc}") from None
        for login, role in source.assignees.items():
            if role not in roles:
                raise ManifestError(
                    f"{where}: assignees.{login}: no role named {role!r} is served here"
                )
        out[name] = InboundSource(source, check)
    return out
