"""Unit tests of helpers.tracing.count_traces."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from helpers import count_traces


def test_counts_one_trace_per_new_shape_or_dtype():
    double = jax.jit(count_traces(lambda x: 2 * x))
    double(jnp.ones(3))
    double(jnp.arange(3.0))  # same shape and dtype: cached
    assert double.__wrapped__.traces == 1
    double(jnp.ones(4))
    double(jnp.ones(4, dtype=jnp.int32))
    assert double.__wrapped__.traces == 3


def test_decorator_form_keeps_the_name_and_counts_eager_calls():
    @count_traces
    def square(x):
        """Square x."""
        return x * x

    assert square.__name__ == "square" and square.__doc__ == "Square x."
    assert square(3) == 9 and square(4) == 16
    assert square.traces == 2  # without jit every call runs the Python body
