"""Colab's runtime, rebuilt here: its package versions in a fresh environment, as a kernel.

``tests/colab_runtime.txt`` holds Colab's published versions (jax 0.7.2, numpy 2.1.3, ipykernel
6.17.1 ...). ``colab_runtime`` builds an environment of them on this Python, without the book's
``helpers`` package, and runs a notebook's set-up cell there first, as a reader's first click
on Colab would, with numpy already imported (as Colab's kernel may have it). The fixture of
that name (``conftest.py``) builds it once per test session; ``test_colab.py`` checks it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from tools.notebooks import INSTALL_SOURCE_VARIABLE, cell_timeout, chapter_notebooks, read_pins

ROOT = Path(__file__).resolve().parent.parent
COLAB_RUNTIME = ROOT / "tests" / "colab_runtime.txt"


def kernel_spec(python: Path, name: str, share: Path) -> None:
    """Make ``python`` a Jupyter kernel called ``name``, found through ``share/jupyter``."""
    spec = share / "jupyter" / "kernels" / name
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": name, "language": "python",
    }))


def versions(python: Path, names: list[str]) -> dict[str, str]:
    """The installed versions of the distributions ``names`` in ``python``'s environment."""
    script = "import importlib.metadata as m, sys; print(*(m.version(n) for n in sys.argv[1:]))"
    out = subprocess.run([python, "-c", script, *names], check=True, capture_output=True, text=True)
    return dict(zip(names, out.stdout.split(), strict=True))


def printed_text(notebook: nbformat.NotebookNode) -> str:
    """Everything the notebook's code cells printed."""
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    return "".join(o.get("text", "") for o in outputs)


@dataclass
class ColabRuntime:
    python: Path
    kernel: str
    env: dict[str, str]  # what a kernel of it needs in its environment
    first_setup_output: str  # what the set-up cell printed on Colab's own versions


def colab_runtime(where: Path, helpers_wheel: Path, env: dict[str, str]) -> ColabRuntime:
    """Colab's packages in a fresh environment under ``where``, then brought up by a
    notebook's set-up cell (which restarts the kernel, as it asks Colab to)."""
    venv = where / "venv"
    uv = Path(sys.executable).parent / "uv"
    torch = f"torch=={read_pins(ROOT / 'requirements.txt')['torch']}"
    subprocess.run([uv, "venv", "--quiet", "--seed", "--python", sys.executable, venv], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [uv, "pip", "install", "--quiet", "--python", python, "-r", COLAB_RUNTIME, torch],
        check=True,
    )
    colab = read_pins(COLAB_RUNTIME)
    assert versions(python, ["jax", "numpy"]) == {"jax": colab["jax"], "numpy": colab["numpy"]}
    probe = subprocess.run([python, "-c", "import helpers"], capture_output=True, cwd=where)
    assert probe.returncode != 0, "helpers must not be importable before the set-up cell"
    kernel_spec(python, "colab", where / "share")
    env = {**env, "JUPYTER_PATH": str(where / "share" / "jupyter"),
           INSTALL_SOURCE_VARIABLE: str(helpers_wheel)}

    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        setup = nbformat.read(chapter_notebooks(ROOT)[0], as_version=4)
        setup.cells = [nbformat.v4.new_code_cell("import numpy"), setup.cells[0]]
        client = NotebookClient(setup, kernel_name="colab", timeout=cell_timeout(
            ROOT / "_config.yml"), resources={"metadata": {"path": str(where)}})
        with pytest.raises(DeadKernelError):  # the restart the cell asks for
            client.execute()
    return ColabRuntime(python, "colab", env, printed_text(setup))
