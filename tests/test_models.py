"""Unit tests of helpers.models.MLPClassifier."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from flax import nnx

from helpers.models import MLPClassifier


def test_shapes_and_parameter_names():
    model = MLPClassifier(hidden=5, rngs=nnx.Rngs(0))
    shapes = jax.tree.map(jnp.shape, nnx.to_pure_dict(nnx.state(model, nnx.Param)))
    assert shapes == {
        "hidden": {"kernel": (2, 5), "bias": (5,)},
        "output": {"kernel": (5, 1), "bias": (1,)},
    }
    assert model(jnp.ones((7, 2))).shape == (7,)


def test_matches_the_formula():
    model = MLPClassifier(rngs=nnx.Rngs(1))
    x = jnp.array([[0.5, -1.0], [1.0, 1.0]])
    hidden = jnp.tanh(x @ model.hidden.kernel[...] + model.hidden.bias[...])
    expected = (hidden @ model.output.kernel[...] + model.output.bias[...])[:, 0]
    assert jnp.allclose(model(x), expected, atol=1e-6)


def test_same_seed_same_parameters():
    first, second = MLPClassifier(rngs=nnx.Rngs(3)), MLPClassifier(rngs=nnx.Rngs(3))
    x = jnp.ones((4, 2))
    assert jnp.array_equal(first(x), second(x))


def test_rejects_an_empty_hidden_layer():
    with pytest.raises(ValueError, match="hidden must be at least 1"):
        MLPClassifier(hidden=0, rngs=nnx.Rngs(0))


def test_eight_hidden_units_by_default_and_one_is_enough():
    assert MLPClassifier(rngs=nnx.Rngs(0)).hidden.kernel[...].shape == (2, 8)
    single = MLPClassifier(hidden=1, rngs=nnx.Rngs(0))
    assert single(jnp.ones((3, 2))).shape == (3,)
