"""Error types. Each user-facing error names its origin (file, dotted field) and what is allowed."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path


class HaapError(Exception):
    """Base class of every error haap_solver raises on purpose."""


class InputError(HaapError, ValueError):
    """Bad input: names the file (when there is one), the dotted field and what is allowed.

    Subclasses ``ValueError`` so that library users can catch it the conventional way.
    """

    def __init__(self, message: str, *, field: str | None = None, source: str | None = None):
        self.message = message
        self.field = field
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.source:
            where += f"{self.source}: "
        if self.field:
            where += f"{self.field}: "
        return one_line(where + self.message)

    def within(self, *, source: str | None = None, prefix: str | None = None) -> InputError:
        """Return a copy located in `source` and/or under the dotted `prefix`."""
        field = self.field
        if prefix:
            field = f"{prefix}.{field}" if field else prefix
        return InputError(self.message, field=field, source=source or self.source)


class InfeasibleError(HaapError):
    """No plan satisfies the instance; the message says which resource is short and by how much."""


# An error message lists at most this many items (violations, names) and counts the rest.
MAX_LISTED = 20


def listing(items: Iterable[str], *, limit: int = MAX_LISTED) -> str:
    """'a, b, c', or the first `limit` items and '... and 1,234 more'."""
    items = list(items)
    shown = ", ".join(items[:limit])
    if len(items) > limit:
        shown += f", ... and {len(items) - limit:,} more"
    return shown


class PlanValidationError(HaapError):
    """A plan breaks one or more rules of its instance. `violations` lists each one.

    The message shows the first MAX_LISTED, one a line, and counts the rest.
    """

    def __init__(self, violations: list[str], *, source: str | None = None):
        self.violations = violations
        head = f"{source}: " if source else ""
        lines = [f"  - {v}" for v in violations[:MAX_LISTED]]
        if len(violations) > MAX_LISTED:
            lines.append(f"  ... and {len(violations) - MAX_LISTED:,} more")
        super().__init__(f"{head}plan is invalid ({len(violations):,} violation(s)):\n"
                         + "\n".join(lines))


# Input files (instances, plans, profiles, config.json) are at most this large: a plan for a
# 100,000-GPU cluster takes a few MB. Reading stops here, so /dev/zero is an error, not a hang.
MAX_FILE_BYTES = 64 * 2**20


def read_text(path: Path, expected: str, *, not_found: str = "file not found") -> str:
    """A file's UTF-8 text, or an InputError naming the file and what was expected there."""
    source = str(path)
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise InputError(not_found, source=source) from None
    except IsADirectoryError:
        raise InputError(f"is a directory, expected {expected}", source=source) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=source) from None
    if len(raw) > MAX_FILE_BYTES:
        raise InputError(f"is larger than {MAX_FILE_BYTES // 2**20} MiB, too large for "
                         f"{expected}", source=source)
    try:
        # (a leading byte-order mark, which some Windows editors write, is dropped: TOML and
        # JSON parsers refuse it, and the user meant none)
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"not a UTF-8 text file (expected {expected})", source=source) from None


def one_line(text: str) -> str:
    """`text` with every unprintable character (newline, tab, bidi control, lone surrogate)
    escaped: a file name or key can hold any of them, and an error stays one readable line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ' (did you mean 'x'?)' hint, or '' when nothing is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def write_text(path: Path, text: str) -> None:
    """Write an output file; an OSError names the file (a full disk raises ENOSPC without a
    file name)."""
    try:
        path.write_text(text)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", source=str(path)) from None
