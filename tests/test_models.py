"""Unit tests of helpers.models.MLPClassifier."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from helpers.models import MLPClassifier


def test_shapes_and_parameter_names():
    model = MLPClassifier(hidden=5)
    params = model.init(jax.random.key(0), jnp.ones((3, 2)))["params"]
    assert jax.tree.map(jnp.shape, params) == {
        "hidden": {"kernel": (2, 5), "bias": (5,)},
        "output": {"kernel": (5, 1), "bias": (1,)},
    }
    logits = model.apply({"params": params}, jnp.ones((7, 2)))
    assert logits.shape == (7,)


def test_matches_the_formula():
    model = MLPClassifier()
    params = model.init(jax.random.key(1), jnp.ones((1, 2)))["params"]
    x = jnp.array([[0.5, -1.0], [1.0, 1.0]])
    hidden = jnp.tanh(x @ params["hidden"]["kernel"] + params["hidden"]["bias"])
    expected = (hidden @ params["output"]["kernel"] + params["output"]["bias"])[:, 0]
    assert jnp.allclose(model.apply({"params": params}, x), expected, atol=1e-6)


def test_rejects_an_empty_hidden_layer():
    with pytest.raises(ValueError, match="hidden must be at least 1"):
        MLPClassifier(hidden=0).init(jax.random.key(0), jnp.ones((1, 2)))
