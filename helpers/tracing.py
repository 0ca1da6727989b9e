"""Counting how often JAX traces a function.

Defined in ``book/07_jit_control_flow.ipynb``, section "What the cache is keyed on". Python
code inside a jitted function runs only while JAX traces it, so a counter incremented there
counts traces, and with them compilations. Jit the wrapper, not ``fn``; each wrapper is a new
function object with a cache of its own, so its count starts at 0. The code is the chapter's,
unchanged (``tests/test_helpers_are_the_chapters_code.py`` checks it).
"""

import functools

__all__ = ["count_traces"]


def count_traces(fn):
    """Wrap fn so that each trace of it increments `wrapper.traces` (a trace-time effect)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        wrapper.traces += 1
        return fn(*args, **kwargs)

    wrapper.traces = 0
    return wrapper
