"""TOML and JSON text to plain values, every failure an InputError naming the file.

One place for what the parsers themselves can raise on hostile text: syntax errors, nesting too
deep for the recursion limit, and integer literals too long to convert (Python refuses more than
4,300 digits, with a plain ValueError, because the conversion is quadratic in the length).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from haap_solver._fields import MAX_INT_DIGITS, OversizedInt
from haap_solver.errors import InputError

# Python's own limit on decimal digits in int(str) (0 means none; 4,300 is the default).
_INT_DIGITS_LIMIT = getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 4300
# A run of digits (TOML allows underscores between them) longer than the limit, matched only from
# the start of a run so that the search stays linear in the text.
_LONG_DIGITS = re.compile(r"(?<![0-9_])[0-9](?:_?[0-9]){" + str(_INT_DIGITS_LIMIT) + ",}")
_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]#]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-.\"' ]+?)\s*=\s*[+-]?$")


def _looks_like(text: str, kind: str) -> str:
    """A hint where a file that failed to parse as `kind` parses as the other kind: a plan
    (JSON) given where an instance (TOML) goes, or the reverse, as when arguments are swapped."""
    try:
        if kind == "TOML":
            json.loads(text)
        else:
            tomllib.loads(text)
    except (ValueError, RecursionError):  # (TOMLDecodeError and JSONDecodeError among them)
        return ""
    other = "a JSON file, such as a plan" if kind == "TOML" else "a TOML file, such as an instance"
    return f" (it is {other}: is the order of the arguments right?)"


def loads_toml(text: str, source: str) -> dict[str, Any]:
    """Parse TOML `text` read from `source`."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}{_looks_like(text, 'TOML')}",
                         source=source) from None
    except RecursionError:
        raise InputError("not valid TOML: nested too deeply", source=source) from None
    except ValueError as exc:  # int() of an integer literal longer than Python converts
        long = _LONG_DIGITS.search(text)
        if long is None:  # pragma: no cover - no other ValueError is known to escape tomllib
            raise InputError(f"not valid TOML: {exc}", source=source) from None
        raise _too_long(text, long, source) from None


def _too_long(text: str, match: re.Match[str], source: str) -> InputError:
    """The error for an over-long integer literal: its line, column and (dotted) key."""
    line_no = text.count("\n", 0, match.start()) + 1
    line_start = text.rfind("\n", 0, match.start()) + 1
    column = match.start() - line_start + 1
    digits = sum(c.isdigit() for c in match.group())
    key = _KEY.match(text[line_start:match.start()])
    field = None
    if key is not None:
        field = key.group(1).replace('"', "").replace("'", "").replace(" ", "")
        table = _table_at(text[:line_start])
        field = f"{table}.{field}" if table else field
    return InputError(f"an integer of {digits:,} digits (line {line_no}, column {column}) is too "
                      f"long to read (no field needs more than 20)", field=field, source=source)


def _table_at(before: str) -> str:
    """The dotted name of the table a TOML line belongs to, from the headers above it."""
    name, counts = "", dict[str, int]()
    for line in before.splitlines():
        header = _HEADER.match(line)
        if header is None:
            continue
        table = header.group(2).replace('"', "").replace("'", "").replace(" ", "")
        if header.group(1) == "[[":
            counts[table] = counts.get(table, 0) + 1
            name = f"{table}[{counts[table] - 1}]"
        else:
            name = table
    return name


def _json_int(literal: str) -> int:
    """An integer literal of a JSON file: an OversizedInt when too long to be any field's value."""
    if len(literal) - literal.startswith("-") > MAX_INT_DIGITS:
        return OversizedInt(literal)
    return int(literal)


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of a JSON file, refused where a key repeats: a JSON reader keeps only the last
    value, so ``{"micro_batch_size": 8, "micro_batch_size": 16}`` was read as 16, silently (TOML
    refuses such a file itself)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def loads_json(text: str, source: str) -> Any:
    """Parse JSON `text` read from `source`; over-long integers become OversizedInt, a key
    given twice in one object is an error.

    The first attempt reads integers with the parser's own fast path (a hook for each integer
    makes a large file three times slower to read); only a file with an integer too long for it
    is read again with the hook, so that the error can name the field holding that integer.
    """
    try:
        try:
            return json.loads(text, object_pairs_hook=_unique_keys)
        except ValueError as exc:
            if isinstance(exc, (json.JSONDecodeError, _DuplicateKey)):
                raise
            return json.loads(text, parse_int=_json_int, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise InputError(f"not valid JSON: the key {exc.key!r} is given twice in one object "
                         "(only one value can count)", source=source) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
                         f"{_looks_like(text, 'JSON')}", source=source) from None
    except RecursionError:
        raise InputError("not valid JSON: nested too deeply", source=source) from None
