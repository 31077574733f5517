"""The search's deadline inside its long steps.

The branch-and-bound checks its deadline between steps, but some single steps take seconds on
large clusters: one bound strengthening (its walk of Sec. 4.5 asks hundreds of capacity LPs, 3 s
on gpt3-175b-4types-x1024), an integer capacity program of a seed, one micro-batch size's
set-up. A step started just before the deadline ran to its end, and `haap solve` returned up to
4 s after its time limit there. Such a step runs inside `until(deadline)`; the LPs, integer
programs and set-up loops it runs call `check_deadline()`, which raises `DeadlineReached` once the
innermost deadline has passed. The caller catches it and keeps nothing the step computed: a bound
cut short is not a bound. Outside any `until` there is no deadline, so code that runs without
one (tests, the tools) behaves as before, and a step the deadline does not reach gives the same
answer as before.

The deadline is a context variable (not a parameter of every table and LP): the steps reach the
LPs through cached tables (`SearchState`, `PositionalBound`) shared by callers with and without
a deadline, so the deadline belongs to the call, not to the table.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_DEADLINE: ContextVar[float] = ContextVar("haap_deadline", default=math.inf)


class DeadlineReached(Exception):
    """The deadline of the innermost `until` passed inside a step; what the step computed so far
    is no answer (its caller keeps what it had before the step)."""


@contextmanager
def until(deadline: float) -> Iterator[None]:
    """Run the block under `deadline` (time.perf_counter() seconds; inf: none). Nested blocks
    keep the earlier deadline of the two."""
    token = _DEADLINE.set(min(deadline, _DEADLINE.get()))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def time_left() -> float:
    """Seconds left before the innermost deadline (inf outside any `until`)."""
    return _DEADLINE.get() - time.perf_counter()


def check_deadline() -> None:
    """Raise DeadlineReached where the innermost deadline has passed."""
    if time.perf_counter() >= _DEADLINE.get():
        raise DeadlineReached
