"""The book's toy dataset and a NumPy collate function.

Defined in ``book/10_data_loading.ipynb``: ``XORDataset`` in section "A map-style dataset",
``numpy_collate`` in section "A collate function that returns NumPy". The code is the
chapter's, unchanged (``tests/test_helpers_are_the_chapters_code.py`` checks it).
"""

import numpy as np

__all__ = ["XORDataset", "numpy_collate"]


class XORDataset:
    """Corners of the unit square plus Gaussian noise; the label is the corner's XOR."""

    def __init__(self, size, seed, noise=0.1):
        rng = np.random.default_rng(seed)
        corners = rng.integers(0, 2, size=(size, 2))  # each coordinate 0 or 1
        self.labels = (corners[:, 0] ^ corners[:, 1]).astype(np.int32)
        noisy = corners + rng.normal(scale=noise, size=(size, 2))
        self.data = noisy.astype(np.float32)  # JAX's default float

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.data[index], self.labels[index]


def numpy_collate(batch):
    """Stack samples into NumPy arrays; a list of (x, y) pairs becomes (xs, ys)."""
    if isinstance(batch[0], tuple):
        return tuple(numpy_collate(list(field)) for field in zip(*batch, strict=True))
    return np.stack([np.asarray(sample) for sample in batch])
