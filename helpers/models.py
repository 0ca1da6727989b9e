"""The small classifier of Part III.

Defined in ``book/09_flax_model.ipynb``, section "The model for Part III", and imported by the
chapters after it as ``from helpers.models import MLPClassifier``. It is not re-exported from
``helpers`` so that chapters which do not use Flax do not import it.
"""

import jax
import jax.numpy as jnp
from flax import nnx

__all__ = ["MLPClassifier"]


class MLPClassifier(nnx.Module):
    """A one-hidden-layer MLP with one output logit per example.

    Parameters: ``hidden.kernel`` ``(in_features, hidden)``, ``hidden.bias``,
    ``output.kernel`` ``(hidden, 1)`` and ``output.bias``. The output has shape
    ``(batch,)``, like the labels; a logit above 0 means class 1 is more likely.
    """

    def __init__(self, hidden: int = 8, *, in_features: int = 2, rngs: nnx.Rngs):
        if hidden < 1:
            raise ValueError(f"hidden must be at least 1, got {hidden}")
        self.hidden = nnx.Linear(in_features, hidden, rngs=rngs)
        self.output = nnx.Linear(hidden, 1, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        x = jnp.tanh(self.hidden(x))
        return self.output(x)[..., 0]
