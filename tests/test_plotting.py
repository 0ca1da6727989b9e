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


def test_plot_xor_as_drawn():
    data = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    ax = plot_xor(data, np.array([0, 0, 1]))
    assert tuple(ax.figure.get_size_inches()) == (4.0, 4.0)
    blue, orange = ax.collections
    np.testing.assert_array_equal(blue.get_offsets(), [[0.0, 0.0], [1.0, 1.0]])
    np.testing.assert_array_equal(orange.get_offsets(), [[0.0, 1.0]])
    assert [c.get_label() for c in ax.collections] == ["class 0", "class 1"]
    assert matplotlib.colors.to_hex(blue.get_facecolor()[0]) == matplotlib.colors.to_hex("tab:blue")
    assert matplotlib.colors.to_hex(orange.get_facecolor()[0]) == matplotlib.colors.to_hex(
        "tab:orange")
    assert list(blue.get_sizes()) == [8] and list(orange.get_sizes()) == [8]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("$x_1$", "$x_2$", "")
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["class 0", "class 1"]
    assert legend._loc == 10  # "center"
    assert legend.get_texts()[0].get_fontsize() == matplotlib.font_manager.font_scalings[
        "small"] * matplotlib.rcParams["font.size"]


def test_plot_xor_draws_on_the_axes_it_is_given():
    _, ax = plt.subplots()
    assert plot_xor(DS.data, DS.labels, ax=ax) is ax
    assert len(plt.get_fignums()) == 1


def test_plot_decision_boundary_as_drawn():
    data = np.array([[0.0, 0.0], [1.0, 2.0]])
    seen = []

    def predict(points):
        seen.append(points)
        return points[:, 0] / 2  # 0 .. 1 over the grid's x range

    ax = plot_decision_boundary(predict, data, np.array([0, 1]), resolution=3)
    (grid,) = seen
    assert grid.dtype == np.float32
    np.testing.assert_allclose(grid, [[x, y] for y in (-0.5, 1.0, 2.5) for x in (-0.5, 0.5, 1.5)])
    contour = next(c for c in ax.collections if hasattr(c, "levels"))
    np.testing.assert_allclose(contour.levels, np.linspace(0, 1, 11))
    assert contour.get_cmap().name == "RdBu_r" and contour.get_alpha() == 0.6
    colorbar_axes = [a for a in ax.figure.axes if a is not ax]
    assert [a.get_ylabel() for a in colorbar_axes] == ["P(class 1)"]
    assert [c.get_label() for c in ax.collections[-2:]] == ["class 0", "class 1"]
    assert ax.get_legend() is not None


def test_plot_curves_as_drawn():
    ax = plot_curves({"loss": [3.0, 2.0], "accuracy": [0.5]}, xlabel="step")
    assert tuple(ax.figure.get_size_inches()) == (5.0, 3.5)
    loss, accuracy = ax.get_lines()
    np.testing.assert_array_equal(loss.get_xdata(), [1, 2])
    np.testing.assert_array_equal(loss.get_ydata(), [3.0, 2.0])
    np.testing.assert_array_equal(accuracy.get_xdata(), [1])
    assert (loss.get_marker(), loss.get_markersize()) == ("o", 3)
    assert ax.get_xlabel() == "step"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["loss", "accuracy"]
    assert all(line.get_visible() and line.get_alpha() == 0.3 for line in ax.get_xgridlines())
    assert plot_curves({"loss": [1.0]}).get_xlabel() == "epoch"


@pytest.mark.parametrize(
    ("history", "message"),
    [
        ({}, r"^history is empty: give at least one name -> values$"),
        ({"loss": []}, r"^history\['loss'\] must be a non-empty 1-D sequence of numbers$"),
        ({"loss": [[1.0, 2.0]]}, r"^history\['loss'\] must be a non-empty 1-D sequence"),
    ],
)
def test_plot_curves_names_what_is_wrong(history, message):
    with pytest.raises(ValueError, match=message):
        plot_curves(history)


def test_shape_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"^data must have shape \(n, 2\), got \(5, 3\)$"):
        plot_xor(np.ones((5, 3)), np.ones(5))
    with pytest.raises(ValueError, match=r"^labels must have shape \(5,\), got \(4,\)$"):
        plot_xor(np.ones((5, 2)), np.ones(4))
    with pytest.raises(ValueError, match=r"^resolution must be an int of at least 2, got 1$"):
        plot_decision_boundary(_must_not_run, DS.data, DS.labels, resolution=1)
    with pytest.raises(ValueError, match=r"^predict returned 3 values for 4 points; it must"):
        plot_decision_boundary(lambda p: np.zeros(3), DS.data, DS.labels, resolution=2)


def test_the_class_colours_do_not_depend_on_the_style():
    with matplotlib.rc_context({"axes.prop_cycle": matplotlib.cycler(color=["k", "m"])}):
        ax = plot_xor(DS.data, DS.labels)
    colours = [matplotlib.colors.to_hex(c.get_facecolor()[0]) for c in ax.collections]
    assert colours == [matplotlib.colors.to_hex("tab:blue"), matplotlib.colors.to_hex("tab:orange")]


def test_plot_decision_boundary_on_given_axes_with_its_own_colour_bar():
    figure, (given, other) = plt.subplots(1, 2)
    other.imshow(np.zeros((2, 2)))  # the current axes, with an image of its own
    width = given.get_position().width
    seen = []
    data = np.array([[0.0, 1.0], [1.0, 3.0]])  # x from -0.5 to 1.5, y from 0.5 to 3.5

    def predict(points):
        seen.append(points)
        return np.full(len(points), 0.5)

    assert plot_decision_boundary(predict, data, np.array([0, 1]), ax=given) is given
    assert plt.gcf() is figure and len(plt.get_fignums()) == 1
    (grid,) = seen
    assert grid.shape == (200 * 200, 2)  # the default resolution
    np.testing.assert_allclose(grid.min(axis=0), [-0.5, 0.5])
    np.testing.assert_allclose(grid.max(axis=0), [1.5, 3.5])
    assert given.get_position().width < width  # the colour bar took its room from `given`
    (colorbar,) = [a for a in figure.axes if a not in (given, other)]
    assert colorbar.get_ylabel() == "P(class 1)"
    (contour,) = [c for c in given.collections if hasattr(c, "levels")]
    assert figure.axes[-1] is colorbar and contour.colorbar.ax is colorbar


def test_plot_curves_on_given_axes_with_a_missing_value():
    _, ax = plt.subplots()
    assert plot_curves({"loss": [1.0, None, 0.5]}, ax=ax) is ax
    assert len(plt.get_fignums()) == 1
    np.testing.assert_array_equal(ax.get_lines()[0].get_ydata(), [1.0, np.nan, 0.5])
