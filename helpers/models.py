"""The small classifier of Part III (chapter 9, "A Flax model").

Import it as ``from helpers.models import MLPClassifier``; it is not re-exported from
``helpers`` so that chapters which do not use Flax do not import it.
"""

from __future__ import annotations

import flax.linen as nn
import jax

__all__ = ["MLPClassifier"]


class MLPClassifier(nn.Module):
    """A one-hidden-layer MLP for 2-D inputs with one output logit per example.

    Parameters: ``{"hidden": {"kernel", "bias"}, "output": {"kernel", "bias"}}``. The output
    has shape ``(batch,)``, like the labels; a logit above 0 means class 1 is more likely.
    """

    hidden: int = 8

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        if self.hidden < 1:
            raise ValueError(f"hidden must be at least 1, got {self.hidden}")
        x = nn.Dense(self.hidden, name="hidden")(x)
        x = nn.tanh(x)
        x = nn.Dense(1, name="output")(x)
        return x[..., 0]
