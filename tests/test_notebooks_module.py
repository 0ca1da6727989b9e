"""Unit tests of helpers.notebooks: the set-up cell and `make tidy`."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from helpers.notebooks import (
    INSTALL_SOURCE_VARIABLE,
    SETUP_CELL_TAG,
    chapter_notebooks,
    main,
    repository_url,
    setup_cell_source,
    tidy_notebook,
)

URL = "https://github.com/someone/some-book"


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
    source = setup_cell_source(URL)
    assert f'"git+{URL}.git"' in source
    assert '"google.colab" not in sys.modules' in source
    assert INSTALL_SOURCE_VARIABLE in source
    compile(source, "setup-cell", "exec")  # valid Python


def test_setup_cell_rejects_a_bad_url():
    with pytest.raises(ValueError, match="https://"):
        setup_cell_source("github.com/someone/book")


def test_tidy_inserts_the_setup_cell_and_strips_outputs(tmp_path):
    code = nbformat.v4.new_code_cell("1 + 1")
    code.execution_count = 3
    code.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "2"})]
    path = _notebook(tmp_path / "01_x.ipynb", [nbformat.v4.new_markdown_cell("# X"), code])

    assert tidy_notebook(path, URL) is True
    cells = json.loads(path.read_text())["cells"]
    assert cells[0]["metadata"]["tags"] == [SETUP_CELL_TAG]
    assert "".join(cells[0]["source"]) == setup_cell_source(URL)
    assert "".join(cells[1]["source"]) == "# X"
    assert cells[2]["outputs"] == [] and cells[2]["execution_count"] is None
    assert tidy_notebook(path, URL) is False  # idempotent: nothing left to change


def test_tidy_replaces_a_stale_setup_cell(tmp_path):
    stale = nbformat.v4.new_code_cell(setup_cell_source("https://github.com/old/place"))
    stale.metadata["tags"] = [SETUP_CELL_TAG]
    path = _notebook(tmp_path / "01_x.ipynb", [stale, nbformat.v4.new_markdown_cell("# X")])
    assert tidy_notebook(path, URL) is True
    cells = json.loads(path.read_text())["cells"]
    assert len(cells) == 2
    assert "github.com/old/place" not in "".join(cells[0]["source"])


def test_main_tidies_every_chapter(tmp_path, capsys):
    _write_config(tmp_path, URL)
    (tmp_path / "book").mkdir()
    _notebook(tmp_path / "book" / "02_b.ipynb", [nbformat.v4.new_markdown_cell("# B")])
    _notebook(tmp_path / "book" / "01_a.ipynb", [nbformat.v4.new_markdown_cell("# A")])
    assert [p.name for p in chapter_notebooks(tmp_path)] == ["01_a.ipynb", "02_b.ipynb"]
    main([str(tmp_path)])
    assert capsys.readouterr().out.count("tidied") == 2
    main([str(tmp_path)])
    assert capsys.readouterr().out == ""
