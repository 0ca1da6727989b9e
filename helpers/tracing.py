"""Counting how often JAX traces a function (chapter 7, "Just-in-time compilation...").

Python code inside a jitted function runs only while JAX traces it, so a counter incremented
there counts traces, and with them compilations.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["count_traces"]


def count_traces(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``fn`` so that each trace of it adds one to ``wrapper.traces``.

    Jit the wrapper, not ``fn``: ``jax.jit(count_traces(f))``, or stack the decorators
    ``@jax.jit`` above ``@count_traces``. Each wrapper is a new function object with a
    cache of its own, so its count starts at 0.
    """
    if not callable(fn):
        raise TypeError(f"count_traces needs a function, got {type(fn).__name__}")

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        wrapper.traces += 1  # type: ignore[attr-defined]
        return fn(*args, **kwargs)

    wrapper.traces = 0  # type: ignore[attr-defined]
    return wrapper
