"""The set-up cell makes a notebook self-sufficient: copied alone, it installs what it needs.

A fresh virtual environment stands in for Colab: it sees the installed libraries (jax, numpy...)
but not the book's ``helpers`` package, and the notebook sits alone in an empty folder. The
set-up cell's install step, pointed at a wheel built from this checkout, must make the rest
of the notebook run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from helpers.notebooks import INSTALL_SOURCE_VARIABLE, chapter_notebooks

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def bare_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernel whose Python has this environment's libraries but not ``helpers``."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )
    # A plain path in a .pth file is appended to sys.path, but the .pth files inside it are
    # not run, so the editable install of `helpers` in this environment stays invisible.
    (site / "libraries.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = subprocess.run([python, "-c", "import helpers"], capture_output=True, cwd=tmp_path)
    assert probe.returncode != 0, "helpers must not be importable before the set-up cell"

    kernels = tmp_path / "share" / "jupyter" / "kernels" / "bare"
    kernels.mkdir(parents=True)
    spec = {
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "bare", "language": "python",
    }
    (kernels / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share" / "jupyter"))
    return "bare"


def test_a_notebook_copied_alone_installs_helpers_and_runs(
    tmp_path: Path, bare_kernel: str, helpers_wheel: Path, monkeypatch: pytest.MonkeyPatch
):
    # The shortest chapter keeps this test quick; every chapter has the same set-up cell.
    # (Appendices may read files of the repository, so the candidates are chapters.)
    chapters = [p for p in chapter_notebooks(ROOT) if p.name[:2].isdigit()]
    source = min(chapters, key=lambda p: p.stat().st_size)
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(source, alone / source.name)
    monkeypatch.setenv(INSTALL_SOURCE_VARIABLE, str(helpers_wheel))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # everything must come from the wheel or be there

    notebook = nbformat.read(alone / source.name, as_version=4)
    NotebookClient(
        notebook, kernel_name=bare_kernel, timeout=300, resources={"metadata": {"path": str(alone)}}
    ).execute()

    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    texts = "".join(o.get("text", "") for o in outputs)
    assert "JAX " in texts and "backend:" in texts  # the banner printed by `helpers`


def test_without_helpers_outside_colab_the_setup_cell_says_what_to_do(
    tmp_path: Path, bare_kernel: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv(INSTALL_SOURCE_VARIABLE, raising=False)
    source = chapter_notebooks(ROOT)[0]
    notebook = nbformat.read(source, as_version=4)
    notebook.cells = notebook.cells[:1]  # the set-up cell alone
    where = {"metadata": {"path": str(tmp_path)}}
    client = NotebookClient(notebook, kernel_name=bare_kernel, timeout=120, resources=where)
    with pytest.raises(CellExecutionError, match="ModuleNotFoundError") as caught:
        client.execute()
    assert "make lab" in str(caught.value)
