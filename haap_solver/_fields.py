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

# Integers read from files have at most this many digits; a longer literal is read as an
# OversizedInt (Python refuses to convert more than 4,300 digits, and the conversion is
# quadratic in the length). No field of any schema needs more than 20 digits.
MAX_INT_DIGITS = 100
# An integer beyond this in a float field is refused: float() of it overflows above ~1.8e308.
FLOAT_INT_MAX = 10**300


class OversizedInt(int):
    """Stands for an integer literal of more than MAX_INT_DIGITS digits, which no field allows.

    Its value is +-10**MAX_INT_DIGITS (above every range, so every range check rejects it) and it
    prints as what it was ("an integer of 5,000 digits"), so that no message quotes a value that
    was never read.
    """

    digits: int

    def __new__(cls, literal: str) -> OversizedInt:
        negative = literal.startswith("-")
        self = super().__new__(cls, -10**MAX_INT_DIGITS if negative else 10**MAX_INT_DIGITS)
        self.digits = len(literal) - negative
        return self

    def __repr__(self) -> str:
        sign = "a negative" if self < 0 else "an"
        return f"{sign} integer of {self.digits:,} digits"

    __str__ = __repr__


@dataclasses.dataclass(frozen=True)
class Range:
    """The values a numeric field allows (in its annotation: ``Annotated[int, Range(1, 4096)]``).

    Checked where files are read (`convert`, before any arithmetic on the value) and by
    `check_ranges` in the ``__post_init__`` of the classes users build in code (not the plan's:
    the search builds those by the thousand, and the validator checks every plan).
    """

    min: float | None = None
    """Smallest allowed value (None: no lower bound)."""
    max: float | None = None
    """Largest allowed value."""
    min_exclusive: bool = False
    """True when `min` itself is not allowed (``> 0`` rather than ``>= 0``)."""

    def error(self, value: float, *, upper: bool = True) -> str | None:
        """Why `value` is out of range (NaN and infinities are), or None when it is allowed;
        `upper=False` checks the lower end only."""
        if isinstance(value, float) and not math.isfinite(value):
            return f"must be a finite number, got {show(value)}"
        if self.min is not None and (value <= self.min if self.min_exclusive
                                     else value < self.min):
            return f"must be {'>' if self.min_exclusive else '>='} {number(self.min)}, " \
                   f"got {show(value)}"
        if upper and self.max is not None and value > self.max:
            return f"must be <= {number(self.max)}, got {show(value)}"
        return None


@dataclasses.dataclass(frozen=True)
class Length:
    """How many items a list field may hold; checked before any item is read."""

    min: int = 0
    """Fewest items."""
    max: int | None = None
    """Most items (None: no limit)."""
    what: str = "items"
    """What the items are, for messages ("stages")."""

    def error(self, count: int, *, upper: bool = True) -> str | None:
        if count < self.min:
            return f"needs at least {self.min:,} {self.what}, got {count:,}"
        if upper and self.max is not None and count > self.max:
            return f"holds at most {self.max:,} {self.what}, got {count:,}"
        return None


@dataclasses.dataclass(frozen=True)
class Unique:
    """A list field that is a set of values (``recompute``, ``schedules``): each value at most
    once. Checked on the items once they are read (an item that is not allowed at all gets that
    error first); the error names the repeated item's index."""

    def error(self, items: list[Any] | tuple[Any, ...]) -> tuple[int, str] | None:
        """(index, message) of the first item that repeats an earlier one, or None."""
        first: dict[Any, int] = {}
        for i, item in enumerate(items):
            try:
                earlier = first.setdefault(item, i)
            except TypeError:  # an unhashable item (a table): not a set-like list
                return None
            if earlier != i:
                what = repr(item) if isinstance(item, str) else show(item)
                return i, f"{what} is listed twice (also item {earlier}); give each value once"
        return None


def number(value: float) -> str:
    """A limit as it reads best: 4,096 or 0.5 or 1e+20."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:g}"


def require(condition: bool, field: str, message: str) -> None:
    """Raise an InputError on `field` unless `condition` holds (used in ``__post_init__``)."""
    if not condition:
        raise InputError(message, field=field)


def require_name(value: str, field: str) -> None:
    """A name other files carry (tables, plans, exported launch flags): not blank, and
    printable: no newline, tab or other control or separator character. A newline in a node
    group's name ended the comment line it was written on in `haap export --to megatron` and
    began a line of its own, a shell command where the flags go into a launch script."""
    require(bool(value.strip()) and value.isprintable(), field,
            f"must be a non-empty, printable name (not blank; no newline, tab or other "
            f"control character), got {value!r}")


_SPECS: dict[type, dict[str, tuple[Any, ...]]] = {}


def _specs(cls: type) -> dict[str, tuple[Any, ...]]:
    """Each field's Range/Length annotations, by field name (read once per class)."""
    specs = _SPECS.get(cls)
    if specs is None:
        hints, _ = _schema(cls)
        specs = _SPECS[cls] = {name: tp.__metadata__ for name, tp in hints.items()
                               if typing.get_origin(tp) is typing.Annotated}
    return specs


def check_ranges(obj: Any, *, upper: bool = True) -> None:
    """Raise an InputError on the first field of `obj` outside its Range or Length (below it
    only, with `upper=False`, for objects the code derives beyond what a file may hold)."""
    for name, specs in _specs(type(obj)).items():
        value = getattr(obj, name)
        if value is not None:
            _check(value, specs, name, upper=upper)


def _check(value: Any, specs: tuple[Any, ...], field: str, *, upper: bool = True,
           items_read: bool = True) -> None:
    """Raise an InputError on `field` where `value` breaks one of `specs`; `items_read=False`
    for a list whose items are not converted yet (its Unique waits for them)."""
    for spec in specs:
        if isinstance(spec, Range) and isinstance(value, (int, float)):
            message = spec.error(value, upper=upper)
        elif isinstance(spec, Length) and isinstance(value, (list, tuple)):
            message = spec.error(len(value), upper=upper)
        elif isinstance(spec, Unique) and isinstance(value, (list, tuple)) and items_read:
            repeated = spec.error(value)
            if repeated:
                raise InputError(repeated[1], field=f"{field}[{repeated[0]}]")
            continue
        else:
            continue
        if message:
            raise InputError(message, field=field)


def describe_type(tp: Any) -> str:
    """Plain-words description of an annotated type, for error messages (never a Python repr)."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return describe_type(typing.get_args(tp)[0])
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
    if isinstance(value, OversizedInt):
        return repr(value)
    if isinstance(value, int):
        return _show_int(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} item(s)"
    if isinstance(value, (datetime.date, datetime.time)):
        return f"the date/time {value.isoformat()}"
    return "a value of an unsupported kind"


def _show_int(value: int) -> str:
    """An integer in full up to 30 digits, else its length (Python prints at most 4,300 digits)."""
    if abs(value) < 10**30:
        return repr(value)
    sign = "a negative" if value < 0 else "an"
    if value.bit_length() < 13_000:  # under 3,900 digits: count them exactly
        return f"{sign} integer of {len(str(abs(value))):,} digits"
    return f"{sign} integer of about {int(math.log10(abs(value))) + 1:,} digits"


def convert(value: Any, tp: Any, field: str) -> Any:
    """Convert a parsed TOML/JSON value to the annotated type, or raise an InputError on `field`."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin is typing.Annotated:
        # A Length is checked before the items are read, a Range before the value is used.
        specs = tp.__metadata__
        if isinstance(value, (list, tuple)):
            _check(value, specs, field, items_read=False)
        result = convert(value, typing.get_args(tp)[0], field)
        _check(value if isinstance(value, (int, float)) else result, specs, field)
        return result
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        kinds = [a for a in args if a is not type(None)]
        if len(kinds) == 1:  # an optional field: its own type's message (a NaN is "not finite")
            return convert(value, kinds[0], field)
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
            text = value if isinstance(value, str) else ""
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
            scalar = isinstance(value, str) or (isinstance(value, (int, float))
                                                and not isinstance(value, bool)
                                                and abs(value) < 10**30)
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
            # A float is refused even when whole (2.0): TOML and JSON both write integers
            # without a decimal point, so 2.0 is a typo or a value computed elsewhere, never
            # silently truncated or rounded here.
            hint = ""
            if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
                hint = f" (write {int(value)}, without a decimal point)"
            raise InputError(f"expected an integer, got {show(value)}{hint}", field=field)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"expected a number, got {show(value)}", field=field)
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"expected a finite number, got {show(value)}", field=field)
        if isinstance(value, int) and not -FLOAT_INT_MAX <= value <= FLOAT_INT_MAX:
            raise InputError(f"expected a number from -1e300 to 1e300, got {show(value)}",
                             field=field)
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
    hints, fields = _schema(cls)

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


_SCHEMAS: dict[type, tuple[dict[str, Any], dict[str, dataclasses.Field[Any]]]] = {}


def _schema(cls: type) -> tuple[dict[str, Any], dict[str, dataclasses.Field[Any]]]:
    """A dataclass's annotations (with their Range/Length) and init fields, read once per class:
    resolving the annotations costs more than building a small object, once per plan stage."""
    schema = _SCHEMAS.get(cls)
    if schema is None:
        hints = typing.get_type_hints(cls, include_extras=True)
        fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
        schema = _SCHEMAS[cls] = (hints, fields)
    return schema


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
