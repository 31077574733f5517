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
        return where + self.message

    def within(self, *, source: str | None = None, prefix: str | None = None) -> InputError:
        """Return a copy located in `source` and/or under the dotted `prefix`."""
        field = self.field
        if prefix:
            field = f"{prefix}.{field}" if field else prefix
        return InputError(self.message, field=field, source=source or self.source)


class InfeasibleError(HaapError):
    """No plan satisfies the instance; the message says which resource is short and by how much."""


class PlanValidationError(HaapError):
    """A plan breaks one or more rules of its instance. `violations` lists each one."""

    def __init__(self, violations: list[str], *, source: str | None = None):
        self.violations = violations
        head = f"{source}: " if source else ""
        body = "\n".join(f"  - {v}" for v in violations)
        super().__init__(f"{head}plan is invalid ({len(violations)} violation(s)):\n{body}")


def read_text(path: Path, expected: str, *, not_found: str = "file not found") -> str:
    """A file's UTF-8 text, or an InputError naming the file and what was expected there."""
    source = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(not_found, source=source) from None
    except IsADirectoryError:
        raise InputError(f"is a directory, expected {expected}", source=source) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=source) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"not a UTF-8 text file (expected {expected})", source=source) from None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ' (did you mean 'x'?)' hint, or '' when nothing is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
