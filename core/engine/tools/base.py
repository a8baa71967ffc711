"""Declaring an agent tool once: `@tool(...)` on the method that does it.

Everything a tool offers comes from that one declaration (like the MCP SDK's
`Tool.from_function`):

- its **name**: the method's;
- its **description**, for agents, in every list of tools (MCP, `GET /api/v1/tools`, the OpenAI
  runtime's function tools);
- its **JSON Schema**, generated from the method's typed signature: each argument is
  `Annotated[T, Arg(...)]`, `T` giving the type (`str`, `int`, a mapping for a JSON object) and
  `Arg` its description, the limits, the choices, whether null may be sent and, for an object
  or a list, its own schema (`properties`, `items`); an argument is required when it has no
  default. A tool that takes
  exactly one of its arguments (`exactly_one`) says so with `minProperties` and `maxProperties`
  of 1: the schema's top level holds no `oneOf`/`anyOf`/`allOf` (nor `if`/`not`), which the
  model APIs agents sit behind refuse in a tool's parameters (Anthropic's, OpenAI's) or for
  which their clients drop the tool (Claude Code);
- its **result**, described for the docs' table (`core.engine.tools.docs`), and its JSON Schema
  (`output`: the MCP `outputSchema`, `core.engine.tools.results`);
- its **effects** (`Effects`): whether it only reads, may take something away, or may be
  repeated to no further effect — hints for clients (MCP's tool annotations);
- its **call**: the method, its answer turned into JSON by `answer` (when the in-process answer
  is not JSON already).

A call by name is checked against the same declaration (`Tool.check`) before the method runs: no
argument it does not name, every required one given, every value one that storage can keep
(`core.model.values.check_value`). The types and limits of the schema are the agent's guide; the
method's own parsers enforce them, and their error codes are the API's (`invalid_limit`, …).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import NoneType, UnionType
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin, get_type_hints

from core.model.errors import InvalidInput
from core.model.values import check_value

Method = TypeVar("Method", bound=Callable[..., Awaitable[Any]])


@dataclass(frozen=True, slots=True, kw_only=True)
class Arg:
    """What the signature's type does not say about one argument."""

    doc: str = ""
    """What the argument is: its `description` in the JSON Schema (what agents read), and its
    note in the docs' table."""
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    nullable: bool = False
    """Null is a value of its own here (not the same as leaving the argument out)."""
    null: Any = None
    """What a nullable argument's explicit null is passed to the method as, when the method's
    None means "left out"."""
    schema: Mapping[str, Any] | None = None
    """More of the argument's JSON Schema: an object's own `properties`, say."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Effects:
    """What calling a tool does, as hints for the agent's client (MCP's tool annotations)."""

    read_only: bool = False
    """It changes nothing."""
    destructive: bool = False
    """It may take away or hide what was there (else it only adds or changes what stays in
    the history); meaningful when not read-only."""
    idempotent: bool = False
    """Calling it again with the same arguments changes nothing more; meaningful when not
    read-only."""


READS = Effects(read_only=True)
"""A tool that only reads."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    name: str
    description: str
    result: str
    input_schema: Mapping[str, Any]
    docs: Mapping[str, str]
    """Each argument's `Arg.doc`, in the signature's order."""
    method: Callable[..., Awaitable[Any]]
    answer: Callable[[Any], Any]
    output_schema: Mapping[str, Any] | None = None
    """The JSON Schema of what a call answers (an object), when it is declared."""
    effects: Effects = Effects()
    nulls: Mapping[str, Any] = field(default_factory=dict)
    """The nullable arguments whose explicit null the method is given as another value."""

    @property
    def required(self) -> list[str]:
        return list(self.input_schema["required"])

    @property
    def arguments(self) -> list[str]:
        return list(self.input_schema["properties"])

    def check(self, arguments: Mapping[str, object]) -> None:
        """Refuse arguments the declaration does not name, required ones missing, and values
        storage cannot keep, naming the argument."""
        for given in arguments:
            if given not in self.input_schema["properties"]:
                takes = ", ".join(self.arguments) or "no arguments"
                raise InvalidInput(
                    f"{self.name} has no argument {given!r}; it takes {takes}",
                    code="unknown_argument",
                )
        for needed in self.required:
            if needed not in arguments:
                raise InvalidInput(
                    f"{self.name} needs the argument {needed!r}", code="missing_argument"
                )
        for given, value in arguments.items():
            check_value(value, given)

    async def call(self, tools: object, arguments: Mapping[str, Any]) -> Any:
        """The method on `tools` (the run's `RunTools`) with checked arguments; JSON out."""
        given = {
            name: self.nulls[name] if value is None and name in self.nulls else value
            for name, value in arguments.items()
        }
        return self.answer(await self.method(tools, **given))


_DECLARED: dict[Callable[..., Any], Tool] = {}
"""Every declared method's tool; `offered` picks them up in the order they are offered."""


def _as_is(result: Any) -> Any:
    return result


def tool(
    *,
    description: str,
    result: str,
    output: Mapping[str, Any],
    effects: Effects,
    answer: Callable[[Any], Any] = _as_is,
    exactly_one: bool = False,
) -> Callable[[Method], Method]:
    """Declare the method as a tool (the method itself is unchanged, for in-process callers):
    `output` is the JSON Schema of its answer, `exactly_one` that it takes exactly one of its
    arguments."""

    def declare(method: Method) -> Method:
        _DECLARED[method] = declared(
            method,
            description=description,
            result=result,
            output=output,
            effects=effects,
            answer=answer,
            exactly_one=exactly_one,
        )
        return method

    return declare


def declared(
    method: Callable[..., Awaitable[Any]],
    *,
    description: str,
    result: str,
    output: Mapping[str, Any] | None = None,
    effects: Effects = Effects(),
    answer: Callable[[Any], Any] = _as_is,
    exactly_one: bool = False,
) -> Tool:
    """The tool a method's signature declares (its first parameter is the run's tools)."""
    hints = get_type_hints(method, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    docs: dict[str, str] = {}
    nulls: dict[str, Any] = {}
    for parameter in list(inspect.signature(method).parameters.values())[1:]:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{method.__name__}: a tool names each of its arguments")
        kind, arg = _unwrap(hints[parameter.name], f"{method.__name__}({parameter.name})")
        properties[parameter.name] = _property(kind, arg)
        docs[parameter.name] = arg.doc
        if arg.nullable and arg.null is not None:
            nulls[parameter.name] = arg.null
        if parameter.default is parameter.empty:
            required.append(parameter.name)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    if exactly_one:
        if required or len(properties) < 2:
            raise TypeError(f"{method.__name__}: exactly one of two or more optional arguments")
        # With no other property allowed, one property is one of these arguments.
        schema["minProperties"] = schema["maxProperties"] = 1
    return Tool(
        name=method.__name__,
        description=description,
        result=result,
        input_schema=schema,
        docs=docs,
        method=method,
        answer=answer,
        output_schema=output,
        effects=effects,
        nulls=nulls,
    )


def offered(methods: Iterable[Callable[..., Any]]) -> dict[str, Tool]:
    """The tools by name, in the order given; every declared tool must be among them."""
    tools = {found.name: found for found in (_DECLARED[method] for method in methods)}
    forgotten = {t.name for t in _DECLARED.values()} - set(tools)
    if forgotten:
        raise TypeError(f"declared but not offered: {', '.join(sorted(forgotten))}")
    return tools


_CONTAINERS: Mapping[type, str] = {dict: "object", list: "array"}
_JSON_TYPES: Mapping[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _unwrap(hint: Any, where: str) -> tuple[type, Arg]:
    """The argument's JSON-able type and its `Arg`; `T | None` is `T` (None: not given)."""
    arg = Arg()
    if get_origin(hint) is Annotated:
        hint, *extras = get_args(hint)
        arg = next((extra for extra in extras if isinstance(extra, Arg)), arg)
    if get_origin(hint) in (Union, UnionType):
        given = [member for member in get_args(hint) if member is not NoneType]
        if len(given) != 1:
            raise TypeError(f"{where}: one type, or one type or None")
        hint = given[0]
    if get_origin(hint) is not None and issubclass(get_origin(hint), Mapping):
        return dict, arg
    if get_origin(hint) is list:
        return list, arg
    if hint in _JSON_TYPES:
        return hint, arg
    raise TypeError(f"{where}: no JSON type for {hint!r}")


def _property(kind: type, arg: Arg) -> dict[str, Any]:
    json_type = _CONTAINERS.get(kind) or _JSON_TYPES[kind]
    schema: dict[str, Any] = {"type": [json_type, "null"] if arg.nullable else json_type}
    if arg.doc:
        schema["description"] = arg.doc
    if arg.minimum is not None:
        schema["minimum"] = arg.minimum
    if arg.maximum is not None:
        schema["maximum"] = arg.maximum
    if arg.choices:
        schema["enum"] = list(arg.choices)
    if arg.schema:
        schema.update(arg.schema)
    return schema
