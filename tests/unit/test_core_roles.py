"""Role manifests: what a valid one gives, and how each mistake is named (file and field)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.model.roles import BuiltinRuntime, ManifestError, Role, load_roles
from core.model.roles.manifests import load_role

REPO = Path(__file__).resolve().parents[2]

MINIMAL = """\
name: helper
display_name: Helper
runtime:
  kind: builtin
  agent: echo
"""


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def test_the_shipped_concierge_manifest_is_valid() -> None:
    roles = load_roles(REPO / "manifests" / "roles")
    assert roles["concierge"].runtime == BuiltinRuntime(kind="builtin", agent="concierge")
    assert roles["concierge"].address == "role:concierge"


def test_a_minimal_manifest_gets_the_defaults(tmp_path: Path) -> None:
    role = load_role(write(tmp_path, "helper.yaml", MINIMAL))
    assert role == Role(
        name="helper",
        display_name="Helper",
        runtime=BuiltinRuntime(kind="builtin", agent="echo"),
    )
    assert (role.concurrent_threads, role.max_concurrent_turns) == (True, 8)
    assert isinstance(role.runtime, BuiltinRuntime)
    assert (role.idle_sleep_after, role.turn_timeout, role.runtime.delay_ms) == (300, 120, 0)


def test_every_manifest_in_the_directory_is_loaded_by_name(tmp_path: Path) -> None:
    write(tmp_path, "helper.yaml", MINIMAL)
    write(tmp_path, "ops.yml", MINIMAL.replace("helper", "ops"))
    write(tmp_path, "notes.txt", "not a manifest")
    assert sorted(load_roles(tmp_path)) == ["helper", "ops"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (MINIMAL + "colour: blue\n", "colour: Extra inputs are not permitted"),
        (MINIMAL.replace("  agent: echo\n", ""), "runtime.agent: Field required"),
        (MINIMAL.replace("kind: builtin", "kind: telepathy"), "runtime: Input tag 'telepathy'"),
        (MINIMAL.replace("kind: builtin", "kind: acp"), "runtime.command: Field required"),
        (MINIMAL + "turn_timeout: 0\n", "turn_timeout: Input should be greater than 0"),
        (MINIMAL + "max_concurrent_turns: many\n", "max_concurrent_turns: Input should be"),
        (MINIMAL.replace("display_name: Helper\n", ""), "display_name: Field required"),
        (MINIMAL + "concurrent_threads: sometimes\n", "concurrent_threads: Input should be"),
    ],
)
def test_a_bad_field_is_named_with_its_file(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, "helper.yaml", text)
    with pytest.raises(ManifestError) as caught:
        load_role(path)
    assert caught.value.message.startswith(f"{path}: {expected}")
    assert caught.value.code == "invalid_manifest"


def test_a_bad_role_name_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "Helper.yaml", MINIMAL.replace("name: helper", "name: Helper"))
    with pytest.raises(ManifestError, match=r"Helper.yaml: name: Value error, must be lower"):
        load_role(path)


def test_the_file_must_be_named_after_the_role(tmp_path: Path) -> None:
    path = write(tmp_path, "assistant.yaml", MINIMAL)
    with pytest.raises(ManifestError, match=r"assistant.yaml: name: is 'helper'.*helper.yaml"):
        load_role(path)


def test_yaml_that_does_not_parse_says_where(tmp_path: Path) -> None:
    path = write(tmp_path, "helper.yaml", "name: helper\ndisplay_name: [unclosed\n")
    with pytest.raises(ManifestError, match=r"helper.yaml: not valid YAML \(line \d+\)"):
        load_role(path)


def test_a_manifest_that_is_not_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "helper.yaml", "- just\n- a list\n")
    with pytest.raises(ManifestError, match="a role manifest is a mapping of fields"):
        load_role(path)


def test_a_directory_that_is_not_there(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="not a directory of role manifests"):
        load_roles(tmp_path / "missing")
