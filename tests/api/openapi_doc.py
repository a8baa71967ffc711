"""The gateway's OpenAPI document as the tests hold the gateway to it.

`Document` is `gateway.api.openapi.document()` made into a checker:

- `operation(method, path)`: the documented operation a request goes to — a concrete documented
  path first (`/api/v1/tools/store`), then a templated one (`/api/v1/threads/{id}`);
- `check_request(method, path, body)`: a body the gateway takes is one the document allows;
- `check(method, path, reply)`: the reply is what the document says that operation answers —
  its status documented (a success explicitly, a failure at least by `default`), its body valid
  against the documented schema, a 201 with its `Location` — and returns the operation's key
  (`"POST /api/v1/threads"`), so that a test can tell which operations it exercised.

The schemas are checked closed: every object schema of the document's components that lists
its properties is taken with `additionalProperties: false`, so a field the gateway writes that
the document does not describe fails the check. (The document itself leaves answers open to
fields added later; the agent tools' result schemas are their declarations', checked as they
are.)
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

from openapi_schema_validator import OAS31Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from gateway.api.openapi import document
from tests.api.conftest import Reply

_URI = "urn:rolecall:openapi"
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def closed(schema: Any) -> Any:
    """`schema` with every object schema that lists its properties closed to others."""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: closed(value) for key, value in schema.items()}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def _pointer(*parts: str) -> str:
    return "/".join(part.replace("~", "~0").replace("/", "~1") for part in parts)


class Document:
    def __init__(self) -> None:
        self.raw = document()
        checked = copy.deepcopy(self.raw)
        checked["components"]["schemas"] = closed(checked["components"]["schemas"])
        self._registry: Registry[Any] = Registry().with_resource(
            _URI, Resource.from_contents(checked, default_specification=DRAFT202012)
        )
        self._concrete: dict[str, str] = {}
        self._templated: list[tuple[re.Pattern[str], str]] = []
        for template in self.raw["paths"]:
            if "{" in template:
                pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
                self._templated.append((re.compile(pattern), template))
            else:
                self._concrete[template] = template

    def operations(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """(METHOD, path template, operation) of every documented operation."""
        for template, item in self.raw["paths"].items():
            for method in METHODS:
                if method in item:
                    yield method.upper(), template, item[method]

    def template(self, path: str) -> str:
        bare = path.partition("?")[0]
        if bare in self._concrete:
            return bare
        for pattern, template in self._templated:
            if pattern.fullmatch(bare):
                return template
        raise AssertionError(f"no documented path matches {bare}")

    def operation(self, method: str, path: str) -> tuple[str, dict[str, Any]]:
        template = self.template(path)
        item = self.raw["paths"][template]
        assert method.lower() in item, f"{method} {template} is not documented"
        op: dict[str, Any] = item[method.lower()]
        return template, op

    def resolve(self, value: dict[str, Any]) -> dict[str, Any]:
        """A `$ref` to the document's components, followed."""
        ref = value.get("$ref")
        if ref is None:
            return value
        found: Any = self.raw
        for part in ref.removeprefix("#/").split("/"):
            found = found[part.replace("~1", "/").replace("~0", "~")]
        assert isinstance(found, dict)
        return found

    def validate(self, instance: Any, *parts: str) -> None:
        """`instance` against the schema at these keys of the document (closed components)."""
        schema = {"$ref": f"{_URI}#/{_pointer(*parts)}"}
        validator = OAS31Validator(
            schema, registry=self._registry, format_checker=OAS31Validator.FORMAT_CHECKER
        )
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
        assert not errors, "\n".join(
            f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors[:5]
        )

    def check_request(self, method: str, path: str, body: Any) -> None:
        """A JSON body the gateway takes is one the document allows."""
        template, op = self.operation(method, path)
        assert "requestBody" in op, f"{method} {template} documents no body"
        parts = ["paths", template, method.lower(), "requestBody", "content"]
        try:
            self.validate(body, *parts, "application/json", "schema")
        except AssertionError as error:
            raise AssertionError(
                f"{method} {path}: the document refuses {body}:\n{error}"
            ) from None

    def check(self, method: str, path: str, reply: Reply) -> str:
        """Assert `reply` is what the document says `method path` answers; its operation's
        key, `"METHOD /template"`."""
        template, op = self.operation(method, path)
        where = f"{method} {path} answered {reply.status}"
        responses = op["responses"]
        status = str(reply.status)
        if reply.status < 400:
            assert status in responses, f"{where}, which is not documented: {reply.text[:300]}"
        key = status if status in responses else "default"
        response = self.resolve(responses[key])
        if reply.status == 201:
            assert "Location" in response.get("headers", {}), f"{where} without Location in docs"
            assert reply.headers.get("Location", "").startswith("/"), f"{where} without Location"
        content = response.get("content")
        if content is None:
            return f"{method} {template}"
        media = reply.headers.get("Content-Type", "").partition(";")[0].strip()
        assert media in content, f"{where} as {media!r}; documented: {sorted(content)}"
        if media == "application/json":
            parts = ["paths", template, method.lower(), "responses", key]
            if "$ref" in responses[key]:
                parts = responses[key]["$ref"].removeprefix("#/").split("/")
            try:
                self.validate(reply.body, *parts, "content", media, "schema")
            except AssertionError as error:
                raise AssertionError(f"{where}, not as documented:\n{error}") from None
        return f"{method} {template}"
