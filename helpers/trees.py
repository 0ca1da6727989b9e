"""Comparing pytrees of arrays (chapters 12 and 13, "Vectorization and parallelism" and
"Sharded training", check sharded training against one device with it)."""

import jax
import numpy as np

__all__ = ["max_difference"]


def max_difference(tree_a, tree_b) -> float:
    """The largest absolute difference between matching leaves of two pytrees of arrays.

    The trees must have the same structure; sharded arrays are gathered to the host first.
    """
    def largest(a, b):
        return np.max(np.abs(np.asarray(a) - np.asarray(b)))

    return float(max(jax.tree.leaves(jax.tree.map(largest, tree_a, tree_b))))
