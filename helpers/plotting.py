"""Plots the training chapters share (chapters 10 and 11).

Each function draws on a Matplotlib ``Axes`` (a new figure when ``ax`` is None) and returns
that ``Axes``. Matplotlib is imported when a function is called, not when ``helpers`` is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_curves", "plot_decision_boundary", "plot_xor"]


def _axes(ax: Axes | None, size: tuple[float, float] = (4.0, 4.0)) -> Axes:
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def _points(data: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    data, labels = np.asarray(data), np.asarray(labels)
    if data.ndim != 2 or data.shape[1] != 2:
        raise ValueError(f"data must have shape (n, 2), got {data.shape}")
    if labels.shape != (data.shape[0],):
        raise ValueError(f"labels must have shape ({data.shape[0]},), got {labels.shape}")
    return data, labels


def plot_xor(data: Any, labels: Any, ax: Axes | None = None, title: str | None = None) -> Axes:
    """Scatter 2-D points coloured by their 0/1 label (chapter 10)."""
    data, labels = _points(data, labels)
    ax = _axes(ax)
    for value, colour in ((0, "tab:blue"), (1, "tab:orange")):
        chosen = data[labels == value]
        ax.scatter(chosen[:, 0], chosen[:, 1], s=8, c=colour, label=f"class {value}")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.legend(loc="center", fontsize="small")  # the XOR clouds sit at the corners
    if title:
        ax.set_title(title)
    return ax


def plot_decision_boundary(
    predict: Callable[[np.ndarray], Any],
    data: Any,
    labels: Any,
    ax: Axes | None = None,
    resolution: int = 200,
) -> Axes:
    """Shade a classifier's probability of class 1 over the plane, with the data on top.

    ``predict`` maps an array of points, shape (n, 2), to probabilities of class 1, shape
    (n,) (chapter 11 passes a jitted Flax model followed by a sigmoid).
    """
    data, labels = _points(data, labels)
    if isinstance(resolution, bool) or not isinstance(resolution, int) or resolution < 2:
        raise ValueError(f"resolution must be an int of at least 2, got {resolution!r}")
    ax = _axes(ax)
    low, high = data.min(axis=0) - 0.5, data.max(axis=0) + 0.5
    xs, ys = np.linspace(low[0], high[0], resolution), np.linspace(low[1], high[1], resolution)
    grid = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2).astype(np.float32)
    probabilities = np.asarray(predict(grid))
    if probabilities.size != grid.shape[0]:
        raise ValueError(
            f"predict returned {probabilities.size} values for {grid.shape[0]} points; "
            "it must return one probability per point"
        )
    image = ax.contourf(xs, ys, probabilities.reshape(resolution, resolution),
                        levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.6)
    ax.figure.colorbar(image, ax=ax, label="P(class 1)")
    plot_xor(data, labels, ax=ax)
    return ax


def plot_curves(
    history: Mapping[str, Sequence[float]],
    ax: Axes | None = None,
    xlabel: str = "epoch",
) -> Axes:
    """Plot training curves, one line per named series (chapter 11).

    ``history`` maps a name such as ``"train loss"`` to its values, one per epoch or step.
    """
    if not history:
        raise ValueError("history is empty: give at least one name -> values")
    ax = _axes(ax, size=(5.0, 3.5))
    for name, values in history.items():
        values = np.asarray(values, dtype=float)
        if values.ndim != 1 or values.size == 0:
            raise ValueError(f"history[{name!r}] must be a non-empty 1-D sequence of numbers")
        ax.plot(np.arange(1, values.size + 1), values, marker="o", markersize=3, label=name)
    ax.set_xlabel(xlabel)
    ax.legend()
    ax.grid(alpha=0.3)
    return ax
