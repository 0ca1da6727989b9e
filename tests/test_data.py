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


def test_xor_dataset_noise_only_moves_points_around_the_same_corners():
    # For one seed every noise level draws the same corners and labels, and the offsets from
    # the corners scale with the noise: Gaussian noise of that standard deviation.
    corners, far, ds = (XORDataset(1000, seed=5, noise=noise) for noise in (0.0, 0.3, 0.1))
    np.testing.assert_array_equal(ds.labels, corners.labels)
    np.testing.assert_allclose(ds.data, corners.data + (far.data - corners.data) / 3, atol=1e-6)
    # With noise 0.05, rounding recovers the corner (a 10-sigma miss), and so the label.
    small = XORDataset(2000, seed=0, noise=0.05)
    np.testing.assert_array_equal(small.labels, np.logical_xor(*np.round(small.data).T))


def test_numpy_collate_stacks_pairs_into_arrays():
    xs, ys = numpy_collate([(np.array([1.0, 2.0]), 0), (np.array([3.0, 4.0]), 1)])
    assert isinstance(xs, np.ndarray) and xs.shape == (2, 2)
    np.testing.assert_array_equal(ys, [0, 1])


def test_numpy_collate_keeps_nested_tuples():
    batch = numpy_collate([((1.0, 2.0), 3), ((4.0, 5.0), 6)])
    np.testing.assert_array_equal(batch[0][0], [1.0, 4.0])
    np.testing.assert_array_equal(batch[0][1], [2.0, 5.0])
    np.testing.assert_array_equal(batch[1], [3, 6])


def test_numpy_collate_cannot_stack_samples_of_different_shapes():
    with pytest.raises(ValueError, match="same shape"):
        numpy_collate([np.ones(2), np.ones(3)])


def test_dataloader_yields_numpy_batches():
    ds = XORDataset(10, seed=0)
    loader = torch.utils.data.DataLoader(ds, batch_size=4, collate_fn=numpy_collate)
    batches = list(loader)
    assert [len(y) for _, y in batches] == [4, 4, 2]
    xs, ys = batches[0]
    assert type(xs) is np.ndarray and xs.dtype == np.float32 and ys.dtype == np.int32
    np.testing.assert_array_equal(xs, ds.data[:4])


def test_xor_dataset_noise_is_gaussian_with_the_given_scale():
    for noise, ds in ((0.1, XORDataset(20_000, seed=0)), (0.15, XORDataset(20_000, 0, noise=0.15))):
        offsets = ds.data - np.round(ds.data)  # the noise around each corner (< 0.5 mostly)
        assert abs(offsets.mean()) < 0.01
        assert abs(offsets.std() - noise) < 0.02
    labels = XORDataset(20_000, seed=0).labels
    assert 0.45 < labels.mean() < 0.55  # the four corners are equally likely


def test_xor_dataset_values_for_a_seed_are_fixed():
    # The chapters print these points: a change of the generator would change their pages.
    ds = XORDataset(3, seed=0)
    np.testing.assert_allclose(
        ds.data,
        [[1.0104901, 0.94643307], [1.0361595, 0.1304], [0.0947081, -0.07037352]],
        rtol=1e-6,
    )
    np.testing.assert_array_equal(ds.labels, [0, 1, 0])


def test_numpy_collate_rejects_samples_of_different_lengths():
    with pytest.raises(ValueError, match="zip"):
        numpy_collate([(np.zeros(2), 1), (np.zeros(2),)])
