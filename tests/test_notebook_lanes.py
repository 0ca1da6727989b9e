"""The lane that runs the second execution of the notebooks (conftest.py's NotebookLane):
a notebook's result, a failing cell named, a runner that stops reported at once."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from conftest import NotebookLane

# What pytest.fail raises: the lane fails the waiting test with it (a specific type, pytest's
# own, not a catch-all).
TEST_FAILED = pytest.fail.Exception


def _notebook(path: Path, *sources: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(notebook, path)
    return path


def test_a_lane_gives_each_notebook_executed_or_its_failing_cell(tmp_path: Path):
    bad = _notebook(tmp_path / "bad.ipynb", "print('before')", "1 / 0")
    good = _notebook(tmp_path / "good.ipynb", "print(6 * 7)")
    lane = NotebookLane([bad, good], "python3", tmp_path / "out")
    try:
        with pytest.raises(TEST_FAILED, match=r"(?s)bad\.ipynb failed.*1 / 0"):
            lane.executed(bad)
        (cell,) = lane.executed(good).cells
        assert cell.outputs[0].text == "42\n"  # the next notebook ran after the failure
    finally:
        lane.stop()


def test_a_runner_that_stops_fails_the_waiting_test_with_its_log(tmp_path: Path):
    missing = tmp_path / "missing.ipynb"
    lane = NotebookLane([missing], "python3", tmp_path / "out")
    with pytest.raises(TEST_FAILED, match=r"(?s)stopped \(exit status 1\) before "
                       r"missing\.ipynb.*FileNotFoundError"):
        lane.executed(missing)
