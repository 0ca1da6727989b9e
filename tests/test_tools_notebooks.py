"""Unit tests of tools.notebooks: the set-up cell and `make tidy`."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import nbformat
import pytest

from tools.notebooks import (
    INSTALL_SOURCE_VARIABLE,
    SETUP_CELL_TAG,
    chapter_notebooks,
    main,
    pinned_versions,
    repository_url,
    setup_cell_source,
    tidy_notebook,
)

URL = "https://github.com/someone/some-book"
TESTED = {
    "jax": "0.12.0.1", "jaxlib": "0.12.0.1", "flax": "0.12.12", "optax": "0.2.8",
    "orbax-checkpoint": "0.12.8",
}


def _write_config(root: Path, url: object) -> Path:
    config = root / "_config.yml"
    config.write_text(f"title: t\nrepository:\n  url: {url}\n  branch: main\n")
    return config


def _notebook(path: Path, cells: list) -> Path:
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "P"}
    nbformat.write(nb, path)
    return path


def test_repository_url_reads_the_config(tmp_path):
    assert repository_url(_write_config(tmp_path, URL + "/")) == URL
    assert repository_url(_write_config(tmp_path, URL + ".git")) == URL


@pytest.mark.parametrize("bad", ["git@github.com:someone/book.git", "null", "[1, 2]"])
def test_repository_url_rejects_a_missing_or_non_https_url(tmp_path, bad):
    with pytest.raises(ValueError, match="repository.url"):
        repository_url(_write_config(tmp_path, bad))


def test_setup_cell_installs_from_the_repository_on_colab_only():
    source = setup_cell_source(URL, TESTED)
    assert f'"git+{URL}.git"' in source
    assert '"google.colab" not in sys.modules' in source
    assert INSTALL_SOURCE_VARIABLE in source
    compile(source, "setup-cell", "exec")  # valid Python


def test_setup_cell_pins_the_taught_libraries_and_matches_the_runtime_accelerator():
    source = setup_cell_source(URL, TESTED)
    assert '"jax": "0.12.0.1",' in source and '"orbax-checkpoint": "0.12.8",' in source
    assert 'if "jax-cuda12-plugin" in before:\n        accelerator = "[cuda12]"' in source
    assert 'elif "libtpu" in before:\n        accelerator = "[tpu]"' in source
    with pytest.raises(ValueError, match="exactly"):
        setup_cell_source(URL, {"jax": "0.12.0.1"})


def test_pinned_versions_reads_the_pins(tmp_path):
    requirements = tmp_path / "requirements.txt"
    lines = [f"{name}=={version}  # why" for name, version in TESTED.items()]
    requirements.write_text("# pins\nnumpy==2.5.5\n" + "\n".join(lines).replace("orbax-", "Orbax_"))
    assert pinned_versions(requirements) == TESTED
    requirements.write_text("jax==0.12.0.1\n")
    with pytest.raises(ValueError, match="jaxlib, flax, optax, orbax-checkpoint"):
        pinned_versions(requirements)


def test_setup_cell_rejects_a_bad_url():
    with pytest.raises(ValueError, match="https://"):
        setup_cell_source("github.com/someone/book", TESTED)


def test_tidy_inserts_the_setup_cell_and_strips_outputs(tmp_path):
    code = nbformat.v4.new_code_cell("1 + 1")
    code.execution_count = 3
    code.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "2"})]
    path = _notebook(tmp_path / "01_x.ipynb", [nbformat.v4.new_markdown_cell("# X"), code])

    assert tidy_notebook(path, URL, TESTED) is True
    cells = json.loads(path.read_text())["cells"]
    assert cells[0]["metadata"]["tags"] == [SETUP_CELL_TAG]
    assert "".join(cells[0]["source"]) == setup_cell_source(URL, TESTED)
    assert "".join(cells[1]["source"]) == "# X"
    assert cells[2]["outputs"] == [] and cells[2]["execution_count"] is None
    assert tidy_notebook(path, URL, TESTED) is False  # idempotent: nothing left to change


def test_tidy_replaces_a_stale_setup_cell(tmp_path):
    stale = nbformat.v4.new_code_cell(setup_cell_source("https://github.com/old/place", TESTED))
    stale.metadata["tags"] = [SETUP_CELL_TAG]
    path = _notebook(tmp_path / "01_x.ipynb", [stale, nbformat.v4.new_markdown_cell("# X")])
    assert tidy_notebook(path, URL, TESTED) is True
    cells = json.loads(path.read_text())["cells"]
    assert len(cells) == 2
    assert "github.com/old/place" not in "".join(cells[0]["source"])


def test_main_tidies_every_chapter(tmp_path, capsys):
    _write_config(tmp_path, URL)
    pins = "".join(f"{name}=={version}\n" for name, version in TESTED.items())
    (tmp_path / "requirements.txt").write_text(pins)
    (tmp_path / "book").mkdir()
    _notebook(tmp_path / "book" / "02_b.ipynb", [nbformat.v4.new_markdown_cell("# B")])
    _notebook(tmp_path / "book" / "01_a.ipynb", [nbformat.v4.new_markdown_cell("# A")])
    assert [p.name for p in chapter_notebooks(tmp_path)] == ["01_a.ipynb", "02_b.ipynb"]
    main([str(tmp_path)])
    assert capsys.readouterr().out.count("tidied") == 2
    main([str(tmp_path)])
    assert capsys.readouterr().out == ""


def test_setup_cell_compares_versions_by_release_number():
    # The cell's own version parser (it must not import anything a chapter might import).
    tree = ast.parse(setup_cell_source(URL, TESTED))
    (release,) = [node for node in ast.walk(tree)
                  if isinstance(node, ast.FunctionDef) and node.name == "_release"]
    namespace: dict = {}
    exec(compile(ast.Module(body=[release], type_ignores=[]), "setup-cell", "exec"), namespace)
    parse = namespace["_release"]
    assert parse("0.12.0.1") == (0, 12, 0, 1) and parse("2.11.0+cu128") == (2, 11, 0)
    assert parse("0.7.2") < parse("0.12.0.1") < parse("0.12.1rc1")
    assert parse("0.12.0.1.post1") > parse("0.12.0.1")
