"""Acceptable text and numbers: the one rule every edge applies before anything reaches storage.

Whatever the gateway accepts, both backends must store, index and read back, and JSON must carry
to every channel. So a value that comes from outside (an HTTP body, a query string, a path, a
Slack event, a webhook payload, a tool's arguments, a manifest) is acceptable iff:

- every string, object keys included, holds Unicode scalar values only: no lone surrogate
  (U+D800 to U+DFFF, which JSON's `\\ud800` escapes can name but no UTF-8 encoder writes), and no
  NUL (U+0000, which PostgreSQL's text and jsonb refuse);
- every number is finite (no NaN, no ±Infinity, no `1e999` that a parser rounds to infinity),
  and every integer lies within signed 64 bits, what SQLite and PostgreSQL both hold;
- containers nest at most `MAX_DEPTH` deep.

`check_value` refuses what breaks the rule with `InvalidInput`, its code saying why
(`invalid_unicode`, `nul_character`, `invalid_number`, `too_deeply_nested`) and its message the
path of the field (`payload.items[2]`). Agent output is not refused but mended: `clean_value`
replaces lone surrogates with U+FFFD, drops NULs, turns a number storage cannot hold into null,
cuts nesting at `MAX_DEPTH`, and says whether it changed anything.

Pure: no I/O, nothing but values in and out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from core.model.errors import InvalidInput

MAX_DEPTH = 32
"""Containers within containers: far beyond what any field of ours needs."""
MIN_INT = -(2**63)
MAX_INT = 2**63 - 1

_SURROGATE = re.compile("[\ud800-\udfff]")


def text_problem(text: str) -> tuple[str, str] | None:
    """Why `text` is not acceptable, as (code, reason), or None when it is."""
    if text.isascii():
        if "\x00" in text:
            return "nul_character", "holds a NUL character (U+0000)"
        return None
    found = _SURROGATE.search(text)
    if found is not None:
        return (
            "invalid_unicode",
            f"holds a lone surrogate (U+{ord(found.group()):04X}) at character {found.start()}, "
            "which is not a Unicode character",
        )
    if "\x00" in text:
        return "nul_character", "holds a NUL character (U+0000)"
    return None


def number_problem(number: int | float) -> str | None:
    """Why `number` cannot be stored, or None when it can (booleans are not numbers here)."""
    if isinstance(number, bool):
        return None
    if isinstance(number, int):
        if MIN_INT <= number <= MAX_INT:
            return None
        return f"is an integer outside -2^63 … 2^63-1 ({_digits(number)})"
    if math.isfinite(number):
        return None
    return f"is not a finite number ({number!r})"


def check_text(text: str, field: str) -> str:
    """`text`, when acceptable; else `InvalidInput` naming `field`."""
    problem = text_problem(text)
    if problem is not None:
        code, reason = problem
        raise InvalidInput(f"{field} {reason}", code=code)
    return text


def check_value(value: Any, field: str = "the value") -> Any:
    """`value` (a decoded JSON value), when every string and number in it is acceptable and it
    nests at most `MAX_DEPTH` deep; else `InvalidInput` naming the path of the first offence."""
    _check(value, field, 0)
    return value


def _check(value: Any, path: str, depth: int) -> None:
    if isinstance(value, str):
        check_text(value, path)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        reason = number_problem(value)
        if reason is not None:
            raise InvalidInput(f"{path} {reason}", code="invalid_number")
    elif isinstance(value, Mapping | list | tuple):
        if depth >= MAX_DEPTH:
            raise InvalidInput(
                f"{path} nests deeper than {MAX_DEPTH} levels", code="too_deeply_nested"
            )
        if isinstance(value, Mapping):
            for key, inner in value.items():
                if isinstance(key, str):
                    check_text(key, f"a key of {path}")
                _check(inner, f"{path}.{key}" if _plain_key(key) else f"{path}[{key!r}]", depth + 1)
        else:
            for index, inner in enumerate(value):
                _check(inner, f"{path}[{index}]", depth + 1)


def clean_text(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD and NULs dropped."""
    if text_problem(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", text).replace("\x00", "")


def clean_value(value: Any) -> tuple[Any, bool]:
    """`value` made acceptable, and whether anything had to change: strings as `clean_text`,
    numbers storage cannot hold become None, containers past `MAX_DEPTH` become None."""
    changed = False

    def walk(inner: Any, depth: int) -> Any:
        nonlocal changed
        if isinstance(inner, str):
            mended = clean_text(inner)
            changed = changed or mended is not inner
            return mended
        if isinstance(inner, bool) or inner is None:
            return inner
        if isinstance(inner, int | float):
            if number_problem(inner) is None:
                return inner
            changed = True
            return None
        if isinstance(inner, Mapping | list | tuple):
            if depth >= MAX_DEPTH:
                changed = True
                return None
            if isinstance(inner, Mapping):
                return {walk(str(k), depth): walk(v, depth + 1) for k, v in inner.items()}
            return [walk(v, depth + 1) for v in inner]
        return inner

    mended = walk(value, 0)
    return mended, changed


def _plain_key(key: object) -> bool:
    return isinstance(key, str) and key.isidentifier()


def _digits(number: int) -> str:
    # str() of a huge integer is slow, and refused past 4,300 digits: say its size instead.
    return str(number) if abs(number) < 10**30 else f"an integer of {number.bit_length()} bits"
