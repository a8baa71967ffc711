"""Roles: the agents people talk to, each defined by a manifest (`manifests/roles/<name>.yaml`).

`role.py` is the model and its validation (pure); `manifests.py` reads a directory of manifests
and names the file and the field of anything wrong.
"""

from core.model.roles.manifests import ManifestError, load_roles
from core.model.roles.role import BuiltinRuntime, Role

__all__ = ["BuiltinRuntime", "ManifestError", "Role", "load_roles"]
