"""Unit tests of helpers.trees.max_difference."""

import jax.numpy as jnp
import numpy as np
import pytest

from helpers import max_difference


def test_the_largest_difference_over_all_leaves():
    a = {"w": jnp.zeros((2, 3)), "b": np.array([1.0, 2.0])}
    b = {"w": jnp.zeros((2, 3)).at[1, 2].set(-0.5), "b": np.array([1.0, 2.25])}
    assert max_difference(a, b) == 0.5
    assert max_difference(b, a) == 0.5
    assert max_difference(a, a) == 0.0


def test_trees_of_different_structure_are_refused():
    with pytest.raises(ValueError):
        max_difference({"w": jnp.ones(2)}, {"v": jnp.ones(2)})
