"""Unit tests of helpers.data: the XOR dataset and the NumPy collate function."""

from __future__ import annotations

import numpy as np
import pytest
import torch.utils.data

from helpers import XORDataset, numpy_collate


def test_xor_dataset_shapes_dtypes_and_labels():
    ds = XORDataset(size=500, seed=0, noise=0.0)
    assert len(ds) == 500
    assert ds.data.shape == (500, 2) and ds.data.dtype == np.float32
    assert ds.labels.shape == (500,) and ds.labels.dtype == np.int32
    # Without noise every point is a corner, and the label is the XOR of its coordinates.
    assert set(np.unique(ds.data)) <= {0.0, 1.0}
    np.testing.assert_array_equal(ds.labels, np.logical_xor(ds.data[:, 0], ds.data[:, 1]))
    point, label = ds[3]
    np.testing.assert_array_equal(point, ds.data[3])
    assert label == ds.labels[3]


def test_xor_dataset_is_reproducible_and_seed_dependent():
    a, b, c = XORDataset(100, seed=1), XORDataset(100, seed=1), XORDataset(100, seed=2)
    np.testing.assert_array_equal(a.data, b.data)
    assert not np.array_equal(a.data, c.data)


def test_xor_dataset_noise_scale():
    ds = XORDataset(20_000, seed=0, noise=0.2)
    residual = ds.data - np.round(ds.data)  # small noise: the nearest corner is the start
    assert 0.18 < residual.std() < 0.22
    assert 0.4 < ds.labels.mean() < 0.6  # the classes are balanced


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"size": -5, "seed": 0}, ValueError, "size must be at least 1"),
        ({"size": 0, "seed": 0}, ValueError, "size must be at least 1"),
        ({"size": 2.5, "seed": 0}, TypeError, "size must be an integer"),
        ({"size": 10, "seed": 1.5}, TypeError, "seed must be an integer"),
        ({"size": 10, "seed": "0"}, TypeError, "seed must be an integer"),
        ({"size": 10, "seed": True}, TypeError, "seed must be an integer"),
        ({"size": 10, "seed": -1}, ValueError, "seed must be at least 0"),
        ({"size": 10, "seed": 0, "noise": -0.1}, ValueError, "noise must be non-negative"),
        ({"size": 10, "seed": 0, "noise": float("nan")}, ValueError, "non-negative"),
        ({"size": 10, "seed": 0, "noise": "big"}, TypeError, "noise must be a real number"),
    ],
)
def test_xor_dataset_rejects_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        XORDataset(**kwargs)


def test_xor_dataset_accepts_numpy_integers():
    assert len(XORDataset(np.int64(7), seed=np.int32(3))) == 7


def test_numpy_collate_stacks_pairs_into_arrays():
    xs, ys = numpy_collate([(np.array([1.0, 2.0]), 0), (np.array([3.0, 4.0]), 1)])
    assert isinstance(xs, np.ndarray) and xs.shape == (2, 2)
    np.testing.assert_array_equal(ys, [0, 1])


def test_numpy_collate_keeps_dicts_and_nesting():
    batch = numpy_collate([{"x": (1.0, [2.0]), "y": 3}, {"x": (4.0, [5.0]), "y": 6}])
    np.testing.assert_array_equal(batch["x"][0], [1.0, 4.0])
    np.testing.assert_array_equal(batch["x"][1][0], [2.0, 5.0])
    np.testing.assert_array_equal(batch["y"], [3, 6])


@pytest.mark.parametrize(
    ("batch", "error", "message"),
    [
        ([], ValueError, "empty batch"),
        ([np.ones(2), np.ones(3)], ValueError, "different shapes"),
        ([(1, 2), (1,)], ValueError, "same number of fields"),
        ([{"a": 1}, {"b": 1}], ValueError, "same keys"),
        (np.ones((2, 2)), TypeError, "list of samples"),
        ("ab", TypeError, "list of samples"),
    ],
)
def test_numpy_collate_rejects_bad_batches(batch, error, message):
    with pytest.raises(error, match=message):
        numpy_collate(batch)


def test_dataloader_yields_numpy_batches():
    ds = XORDataset(10, seed=0)
    loader = torch.utils.data.DataLoader(ds, batch_size=4, collate_fn=numpy_collate)
    batches = list(loader)
    assert [len(y) for _, y in batches] == [4, 4, 2]
    xs, ys = batches[0]
    assert type(xs) is np.ndarray and xs.dtype == np.float32 and ys.dtype == np.int32
    np.testing.assert_array_equal(xs, ds.data[:4])
