"""Reference runtime and measured profiles with PyTorch (optional extra: ``.[run]``/``.[profile]``).

Nothing here imports torch at module level except ``gpt``, ``profiler`` and ``pipeline``, which
are imported only by the commands that need them (`require_torch` says which extra is missing).
"""

from __future__ import annotations

from haap_solver.errors import HaapError


def require_torch(extra: str) -> None:
    """Raise a clear error naming the extra to install when PyTorch is missing."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise HaapError(f"this command needs PyTorch: pip install -e '.[{extra}]' (it pins "
                        "torch==2.13.0)") from None
