"""Manifests are held to the acceptable-value rule (`core.model.values`): a YAML value storage,
prompts or logs could not carry — a NUL, a lone surrogate, `.inf`, an integer past 64 bits — stops
start-up with a `ManifestError` naming the file and the field, like any other manifest error. Role
manifests and webhook source manifests alike (both are read by `read_manifest`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from channels.webhooks.sources import configured_sources
from core.model.roles import ManifestError
from core.model.roles.manifests import load_role

RUNTIME = "runtime: {kind: builtin, agent: echo}\n"


@pytest.mark.parametrize(
    ("line", "field", "reason"),
    [
        ('display_name: "Conc\\0ierge"\n' + RUNTIME, "display_name", "NUL"),
        ('display_name: "C\\ud800"\n' + RUNTIME, "display_name", "lone surrogate"),
        ("display_name: C\nruntime: {kind: builtin, agent: echo, delay_ms: .inf}\n",
         "runtime.delay_ms", "not a finite number"),
        ("display_name: C\n" + RUNTIME + "max_tool_calls_per_turn: 99999999999999999999\n",
         "max_tool_calls_per_turn", "outside"),
    ],
)  # fmt: skip
def test_a_role_manifest_value_storage_cannot_keep_names_the_file_and_field(
    tmp_path: Path, line: str, field: str, reason: str
) -> None:
    path = tmp_path / "concierge.yaml"
    path.write_text("name: concierge\n" + line, encoding="utf-8")

    with pytest.raises(ManifestError) as refused:
        load_role(path)

    assert str(refused.value).startswith(f"{path}: {field}: "), refused.value
    assert reason in str(refused.value)


def test_a_good_manifest_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "concierge.yaml"
    path.write_text("name: concierge\ndisplay_name: Concierge \u00e9\u20ac\n" + RUNTIME)
    assert load_role(path).display_name == "Concierge \u00e9\u20ac"


def test_a_source_manifest_is_held_to_the_same_rule(tmp_path: Path) -> None:
    (tmp_path / "tracker.yaml").write_text(
        'name: tracker\nkind: standard\nsecret: "TRACKER\\0SECRET"\n', encoding="utf-8"
    )
    with pytest.raises(ManifestError, match=r"tracker\.yaml: secret: holds a NUL"):
        configured_sources(tmp_path, default=False)
