"""Every notebook runs on Colab: with Colab's package versions, after its set-up cell.

An environment is built from ``tests/colab_runtime.txt`` (Colab's published versions: jax 0.7.2,
numpy 2.1.3, ipykernel 6.17.1 ...) on the same Python, with the book's ``helpers`` package not
installed. The set-up cell runs there first, as a reader's first click on Colab would run it,
with numpy already imported (as Colab's kernel may have it): it must bring the taught libraries
to the tested versions, say so in one line, and restart the kernel because numpy changed under
it. Then every notebook runs top to bottom in a fresh kernel of that environment.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, DeadKernelError

from tools.notebooks import (
    INSTALL_SOURCE_VARIABLE,
    cell_timeout,
    chapter_notebooks,
    pinned_versions,
    read_pins,
)

ROOT = Path(__file__).resolve().parent.parent
CELL_TIMEOUT = cell_timeout(ROOT / "_config.yml")
COLAB_RUNTIME = ROOT / "tests" / "colab_runtime.txt"
NOTEBOOKS = chapter_notebooks(ROOT)
TESTED = pinned_versions(ROOT / "requirements.txt")


def _kernel_spec(python: Path, name: str, share: Path) -> None:
    spec = share / "jupyter" / "kernels" / name
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": name, "language": "python",
    }))


def _versions(python: Path, names: list[str]) -> dict[str, str]:
    script = "import importlib.metadata as m, sys; print(*(m.version(n) for n in sys.argv[1:]))"
    out = subprocess.run([python, "-c", script, *names], check=True, capture_output=True, text=True)
    return dict(zip(names, out.stdout.split(), strict=True))


def _text(notebook: nbformat.NotebookNode) -> str:
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    return "".join(o.get("text", "") for o in outputs)


@dataclass
class ColabRuntime:
    python: Path
    kernel: str
    first_setup_output: str  # what the set-up cell printed on Colab's own versions


@pytest.fixture(scope="session")
def colab_runtime(
    tmp_path_factory: pytest.TempPathFactory, helpers_wheel: Path
) -> Iterator[ColabRuntime]:
    """Colab's packages in a fresh environment, then brought up by a notebook's set-up cell."""
    where = tmp_path_factory.mktemp("colab")
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
    assert _versions(python, ["jax", "numpy"]) == {"jax": colab["jax"], "numpy": colab["numpy"]}
    probe = subprocess.run([python, "-c", "import helpers"], capture_output=True, cwd=where)
    assert probe.returncode != 0, "helpers must not be importable before the set-up cell"
    _kernel_spec(python, "colab", where / "share")

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(where / "share" / "jupyter"))
        patch.setenv(INSTALL_SOURCE_VARIABLE, str(helpers_wheel))
        setup = nbformat.read(NOTEBOOKS[0], as_version=4)
        setup.cells = [nbformat.v4.new_code_cell("import numpy"), setup.cells[0]]
        client = NotebookClient(setup, kernel_name="colab", timeout=CELL_TIMEOUT,
                                resources={"metadata": {"path": str(where)}})
        with pytest.raises(DeadKernelError):  # the restart the cell asks for
            client.execute()
        yield ColabRuntime(python, "colab", _text(setup))


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
    assert _versions(colab_runtime.python, list(TESTED)) == TESTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_notebook_runs_on_colab(path: Path, colab_runtime: ColabRuntime):
    notebook = nbformat.read(path, as_version=4)
    try:
        NotebookClient(notebook, kernel_name=colab_runtime.kernel, timeout=CELL_TIMEOUT,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    except CellExecutionError as error:
        pytest.fail(f"{path.name} failed with Colab's package versions:\n{error}")
    assert "Set-up:" not in _text(notebook), "the set-up cell had nothing left to change"


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
    _kernel_spec(python, "bare", tmp_path / "share")
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
