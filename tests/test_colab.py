"""Every notebook runs on Colab: with Colab's package versions, after its set-up cell.

An environment is built from ``tests/colab_runtime.txt`` (Colab's published versions: jax 0.7.2,
numpy 2.1.3, ipykernel 6.17.1 ...) on the same Python, with the book's ``helpers`` package not
installed. The set-up cell runs there first, as a reader's first click on Colab would run it,
with numpy already imported (as Colab's kernel may have it): it must bring the taught libraries
to the tested versions, say so in one line, and restart the kernel because numpy changed under
it. Then every notebook runs top to bottom in a fresh kernel of that environment (``conftest.py``'s
``SecondRun``, which also serves as the second run that ``test_reproducible.py`` compares with
nbmake's first).
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest
from colab import COLAB_RUNTIME, ColabRuntime, kernel_spec, printed_text, versions
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from tools.notebooks import (
    INSTALL_SOURCE_VARIABLE,
    cell_timeout,
    chapter_notebooks,
    pinned_versions,
    read_pins,
)

ROOT = Path(__file__).resolve().parent.parent
CELL_TIMEOUT = cell_timeout(ROOT / "_config.yml")
NOTEBOOKS = chapter_notebooks(ROOT)
TESTED = pinned_versions(ROOT / "requirements.txt")


def test_the_setup_cell_brings_colab_to_the_pinned_versions(colab_runtime: ColabRuntime):
    colab = read_pins(COLAB_RUNTIME)
    printed = colab_runtime.first_setup_output
    (line,) = [line for line in printed.splitlines() if line.startswith("Set-up: installed")]
    for name in ("jax", "jaxlib", "flax", "orbax-checkpoint"):
        assert f"{name} {colab[name]} -> {TESTED[name]}" in line, line
    assert "executable-jax-helpers 0.1.0" in line
    # numpy was imported before jax's upgrade raised it, so the kernel had to restart.
    assert f"numpy {colab['numpy']} -> " in line
    assert "numpy had been imported before the upgrade, so the runtime restarts now" in printed
    assert versions(colab_runtime.python, list(TESTED)) == TESTED


def test_colab_draws_figures_with_the_pinned_matplotlib(colab_runtime: ColabRuntime):
    # The set-up cell leaves matplotlib as Colab has it, and requirements.txt pins the same
    # version: a figure then comes out the same in both runs, which test_reproducible.py
    # compares pixel for pixel.
    pinned = read_pins(ROOT / "requirements.txt")["matplotlib"]
    assert read_pins(COLAB_RUNTIME)["matplotlib"] == pinned, (
        "Colab's matplotlib changed: pin the same version in requirements.txt")
    assert versions(colab_runtime.python, ["matplotlib"]) == {"matplotlib": pinned}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_notebook_runs_on_colab(path: Path, second_run):
    # Executed in a kernel of Colab's runtime (after its set-up), beside nbmake's run
    # (conftest.py's `SecondRun`); a cell's error fails this test with the cell named.
    notebook = second_run.executed(path)
    assert "Set-up:" not in printed_text(notebook), "the set-up cell had nothing left to change"


@pytest.fixture
def bare_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernel whose Python has this environment's libraries but not ``helpers``."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip())
    # A plain path in a .pth file is appended to sys.path, but the .pth files inside it are
    # not run, so the editable install of `helpers` in this environment stays invisible.
    (site / "libraries.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    kernel_spec(python, "bare", tmp_path / "share")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share" / "jupyter"))
    return "bare"


def test_without_helpers_outside_colab_the_setup_cell_says_what_to_do(
    tmp_path: Path, bare_kernel: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv(INSTALL_SOURCE_VARIABLE, raising=False)
    notebook = nbformat.read(NOTEBOOKS[0], as_version=4)
    notebook.cells = notebook.cells[:1]  # the set-up cell alone
    where = {"metadata": {"path": str(tmp_path)}}
    client = NotebookClient(
        notebook, kernel_name=bare_kernel, timeout=CELL_TIMEOUT, resources=where
    )
    with pytest.raises(CellExecutionError, match="ModuleNotFoundError") as caught:
        client.execute()
    assert "make lab" in str(caught.value)
