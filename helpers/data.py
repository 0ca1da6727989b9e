"""The book's toy dataset and a NumPy collate function (chapter 10, "Data loading with PyTorch").

``XORDataset`` is a map-style dataset (``len`` and indexing), so PyTorch's ``DataLoader``
accepts it without this module importing torch; ``numpy_collate`` makes the loader hand over
NumPy arrays, which JAX takes directly, instead of torch tensors.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["XORDataset", "numpy_collate"]


def _int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


class XORDataset:
    """Continuous XOR: points near the corners of the unit square, labelled 1 where x != y.

    Each point starts at a corner, (0, 0), (0, 1), (1, 0) or (1, 1), chosen uniformly, and
    gets Gaussian noise of standard deviation ``noise`` added; its label is 1 for the corners
    (0, 1) and (1, 0), else 0. No line separates the classes, so a model needs a hidden layer.
    Generated with ``np.random.default_rng(seed)``: the same seed gives the same data.

    ``dataset[i]`` is ``(point, label)``: a float32 array of shape (2,) and an int32 scalar.
    The whole set is in ``dataset.data`` (float32, shape (size, 2)) and ``dataset.labels``
    (int32, shape (size,)).
    """

    def __init__(self, size: int, seed: int, noise: float = 0.1) -> None:
        self.size = _int("size", size, 1)
        self.seed = _int("seed", seed, 0)
        if isinstance(noise, bool) or not isinstance(noise, numbers.Real):
            raise TypeError(f"noise must be a real number, got {noise!r}")
        if not 0 <= noise < float("inf"):  # also rejects NaN
            raise ValueError(f"noise must be non-negative and finite, got {noise}")
        self.noise = float(noise)
        rng = np.random.default_rng(self.seed)
        corners = rng.integers(0, 2, size=(self.size, 2))
        self.labels = (corners.sum(axis=1) == 1).astype(np.int32)
        self.data = (corners + rng.normal(scale=self.noise, size=(self.size, 2))).astype(np.float32)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.int32]:
        return self.data[index], self.labels[index]

    def __repr__(self) -> str:
        return f"XORDataset(size={self.size}, seed={self.seed}, noise={self.noise})"


def numpy_collate(batch: Sequence[Any]) -> Any:
    """Stack a list of samples into NumPy arrays, keeping the samples' structure.

    Pass it as ``DataLoader(..., collate_fn=numpy_collate)``. A list of ``(x, y)`` pairs
    becomes a pair ``(xs, ys)`` of stacked arrays; dicts and nested tuples or lists are
    handled the same way, field by field.
    """
    if isinstance(batch, np.ndarray) or not isinstance(batch, Sequence) or isinstance(batch, str):
        raise TypeError(f"batch must be a list of samples, got {type(batch).__name__}")
    if len(batch) == 0:
        raise ValueError("cannot collate an empty batch")
    first = batch[0]
    if isinstance(first, Mapping):
        keys = set(first)
        if any(not isinstance(s, Mapping) or set(s) != keys for s in batch):
            raise ValueError("every sample in the batch must be a dict with the same keys")
        return {k: numpy_collate([s[k] for s in batch]) for k in first}
    if isinstance(first, tuple | list):
        if any(not isinstance(s, tuple | list) or len(s) != len(first) for s in batch):
            raise ValueError("every sample in the batch must have the same number of fields")
        fields = [numpy_collate([s[i] for s in batch]) for i in range(len(first))]
        if hasattr(first, "_fields"):  # a namedtuple takes its fields as arguments
            return type(first)(*fields)
        return type(first)(fields) if isinstance(first, tuple) else fields
    shapes = {np.shape(s) for s in batch}
    if len(shapes) > 1:
        raise ValueError(f"samples have different shapes {sorted(shapes)}: cannot stack them")
    return np.stack([np.asarray(s) for s in batch])
