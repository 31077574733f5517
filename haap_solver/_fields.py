"""Strict construction of frozen dataclasses from parsed TOML/JSON mappings.

Unknown keys are errors with a did-you-mean hint, types are checked, and every error carries the
dotted field path. Value rules live in each dataclass's ``__post_init__`` as ``InputError``s
naming the field; this module prefixes them with the path of the enclosing table.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, Union

from haap_solver.errors import InputError, did_you_mean

T = TypeVar("T")


def require(condition: bool, field: str, message: str) -> None:
    """Raise an InputError on `field` unless `condition` holds (used in ``__post_init__``)."""
    if not condition:
        raise InputError(message, field=field)


def describe_type(tp: Any) -> str:
    """Plain-words description of an annotated type, for error messages (never a Python repr)."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        # TOML has no null: an optional field is simply left out, so do not mention None.
        return " or ".join(describe_type(a) for a in typing.get_args(tp) if a is not type(None))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (tuple, list):
        args = typing.get_args(tp)
        inner = args[0] if args else Any
        if typing.get_origin(inner) is typing.Literal:
            return "a list of values from " + ", ".join(repr(a) for a in typing.get_args(inner))
        if dataclasses.is_dataclass(inner):
            return "a list of tables"
        names = {int: "integers", float: "numbers", bool: "booleans", str: "strings"}
        return "a list of " + names.get(inner, "values")
    if origin is dict or tp is dict:
        return "a table"
    names = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
    if tp in names:
        return names[tp]
    if tp is type(None):
        return "nothing"
    if dataclasses.is_dataclass(tp):
        return "a table"
    return "a value"


def show(value: Any) -> str:
    """A short, TOML/JSON-flavoured rendering of a parsed value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {text!r}"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} item(s)"
    if isinstance(value, (datetime.date, datetime.time)):
        return f"the date/time {value.isoformat()}"
    return "a value of an unsupported kind"


def convert(value: Any, tp: Any, field: str) -> Any:
    """Convert a parsed TOML/JSON value to the annotated type, or raise an InputError on `field`."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return convert(value, arg, field)
            except InputError:
                continue
        raise InputError(f"expected {describe_type(tp)}, got {show(value)}", field=field)
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        if isinstance(value, (Mapping, list, tuple)) or value not in allowed:
            text = str(value) if isinstance(value, (str, int, float)) else ""
            hint = did_you_mean(text.lower(), [str(a) for a in allowed]) if text else ""
            raise InputError(
                f"{show(value)} is not allowed; expected one of "
                + ", ".join(repr(a) for a in allowed) + hint,
                field=field,
            )
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            args = typing.get_args(tp)
            scalar_items = not (args and dataclasses.is_dataclass(args[0]))
            hint = ""
            scalar = isinstance(value, (str, int, float)) and not isinstance(value, bool)
            if scalar_items and scalar:
                hint = f" (write [{value!r}] for a single item)"
            raise InputError(f"expected {describe_type(tp)}, got {show(value)}{hint}",
                             field=field)
        args = typing.get_args(tp)
        inner = args[0] if args else Any
        return tuple(convert(v, inner, f"{field}[{i}]") for i, v in enumerate(value))
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if isinstance(value, tp):
            return value
        if not isinstance(value, Mapping):
            raise InputError(f"expected a table, got {show(value)}", field=field)
        return build(tp, value, prefix=field)  # type: ignore[arg-type]
    if tp is bool:
        if not isinstance(value, bool):
            raise InputError(f"expected true or false, got {show(value)}", field=field)
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            # JSON does not tell 2 from 2.0, so a whole float is accepted as an integer.
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise InputError(f"expected an integer, got {show(value)}", field=field)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"expected a number, got {show(value)}", field=field)
        if not math.isfinite(value):
            raise InputError(f"expected a finite number, got {show(value)}", field=field)
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise InputError(f"expected a string, got {show(value)}", field=field)
        return value
    return value


def build(cls: type[T], data: Mapping[str, Any], *, prefix: str = "") -> T:
    """Build dataclass `cls` from `data` strictly: unknown and missing required keys are errors."""
    if not isinstance(data, Mapping):
        raise InputError(f"expected a table, got {show(data)}", field=prefix or None)
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]

    def dotted(name: str) -> str:
        return f"{prefix}.{name}" if prefix else name

    for key in data:
        if not isinstance(key, str) or key not in fields:
            key = str(key)
            raise InputError(
                f"unknown key{did_you_mean(key, fields)}; allowed keys: "
                + ", ".join(sorted(fields)),
                field=dotted(key),
            )
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        if name in data:
            kwargs[name] = convert(data[name], hints[name], dotted(name))
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise InputError(f"required key is missing ({describe_type(hints[name])})",
                             field=dotted(name))
    try:
        return cls(**kwargs)
    except InputError as exc:
        raise exc.within(prefix=prefix or None) from None


def to_mapping(obj: Any) -> Any:
    """The inverse of `build`: a JSON/TOML-ready structure of plain values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: to_mapping(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if f.init and getattr(obj, f.name) is not None
        }
    if isinstance(obj, (list, tuple)):
        return [to_mapping(v) for v in obj]
    if isinstance(obj, Mapping):
        return {k: to_mapping(v) for k, v in obj.items()}
    return obj
