"""Unit tests of helpers.plotting (drawn off-screen with the Agg backend)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers import XORDataset, plot_curves, plot_decision_boundary, plot_xor  # noqa: E402

DS = XORDataset(200, seed=0)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_plot_xor_draws_both_classes():
    ax = plot_xor(DS.data, DS.labels, title="XOR")
    sizes = [len(c.get_offsets()) for c in ax.collections]
    assert sum(sizes) == len(DS) and len(sizes) == 2
    assert ax.get_title() == "XOR"


def test_plot_decision_boundary_evaluates_predict_on_a_grid():
    seen = []

    def predict(points):
        seen.append(points.shape)
        return (points[:, 0] > 0.5).astype(np.float32)

    ax = plot_decision_boundary(predict, DS.data, DS.labels, resolution=30)
    assert seen == [(900, 2)]
    assert len(ax.figure.axes) == 2  # the plot and its colour bar


def test_plot_decision_boundary_rejects_a_wrong_prediction_size():
    with pytest.raises(ValueError, match="one probability per point"):
        plot_decision_boundary(lambda p: np.zeros(3), DS.data, DS.labels, resolution=10)


def _must_not_run(points):
    raise AssertionError("predict was called although the arguments were invalid")


def _boundary(data, labels):
    return plot_decision_boundary(_must_not_run, data, labels)


@pytest.mark.parametrize("plot", [plot_xor, _boundary], ids=["plot_xor", "plot_decision_boundary"])
@pytest.mark.parametrize(
    ("data", "labels", "message"),
    [
        ((5, 3), (5,), r"data must have shape \(n, 2\)"),
        ((4,), (4,), r"data must have shape \(n, 2\)"),
        ((1, 5, 2), (5,), r"data must have shape \(n, 2\)"),
        ((5, 2), (4,), r"labels must have shape \(5,\)"),
        ((5, 2), (5, 1), r"labels must have shape \(5,\)"),
    ],
)
def test_plots_reject_wrong_shapes_before_drawing(plot, data, labels, message):
    with pytest.raises(ValueError, match=message):
        plot(np.ones(data), np.ones(labels))
    assert not plt.get_fignums()  # no figure was made


@pytest.mark.parametrize("resolution", [1, 0, True, 2.5, "3"])
def test_plot_decision_boundary_rejects_a_bad_resolution(resolution):
    with pytest.raises(ValueError, match="resolution must be an int of at least 2"):
        plot_decision_boundary(_must_not_run, DS.data, DS.labels, resolution=resolution)


def test_plot_curves_draws_one_line_per_series():
    ax = plot_curves({"loss": [1.0, 0.5, 0.2], "accuracy": [0.5, 0.8, 0.9]})
    assert [line.get_label() for line in ax.get_lines()] == ["loss", "accuracy"]
    np.testing.assert_array_equal(ax.get_lines()[0].get_xdata(), [1, 2, 3])


@pytest.mark.parametrize("history", [{}, {"loss": []}, {"loss": [[1.0, 2.0]]}])
def test_plot_curves_rejects_empty_or_malformed_history(history):
    with pytest.raises(ValueError):
        plot_curves(history)
