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
    cell_timeout,
    chapter_notebooks,
    main,
    notebook_problems,
    pinned_versions,
    read_pins,
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
    assert 'if "jax-cuda13-plugin" in before:\n        accelerator = "[cuda13]"' in source
    assert 'elif "jax-cuda12-plugin" in before:\n        accelerator = "[cuda12]"' in source
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


@pytest.mark.parametrize(
    "bad",
    [
        "github.com/someone/book", "http://github.com/someone/book",
        "HTTPS://github.com/someone/book", " https://github.com/someone/book",
        "https:/github.com/someone/book", "git@github.com:someone/book.git",
        "https://", "https:///someone/book",  # no host
        None, b"https://github.com/someone/book",
    ],
)
def test_setup_cell_rejects_anything_but_an_https_url_with_a_host(bad):
    with pytest.raises(ValueError, match="url must be an https:// URL with a host"):
        setup_cell_source(bad, TESTED)


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


def test_tidy_gives_every_cell_an_id_and_check_reports_cells_without_one(tmp_path):
    path = _notebook(tmp_path / "01_x.ipynb", [nbformat.v4.new_markdown_cell("# X")])
    tidy_notebook(path, URL, TESTED)
    notebook = json.loads(path.read_text())
    notebook["cells"] += [
        {"cell_type": "markdown", "metadata": {}, "source": ["new"]},
        {"cell_type": "code", "metadata": {}, "source": ["1"], "outputs": [],
         "execution_count": None, "id": ""},
    ]
    path.write_text(json.dumps(notebook))
    assert notebook_problems(path, URL, TESTED) == ["cells [2, 3] have no id"]

    assert tidy_notebook(path, URL, TESTED) is True
    ids = [cell["id"] for cell in json.loads(path.read_text())["cells"]]
    assert ids[:2] == [notebook["cells"][0]["id"], notebook["cells"][1]["id"]]  # kept
    assert all(ids) and len(set(ids)) == 4
    assert notebook_problems(path, URL, TESTED) == []


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


def _repository(root: Path) -> Path:
    """A repository root with a `_config.yml`, pins and an empty `book/` and `templates/`."""
    _write_config(root, URL)
    (root / "requirements.txt").write_text("".join(f"{n}=={v}\n" for n, v in TESTED.items()))
    (root / "book").mkdir()
    (root / "templates").mkdir()
    return root


def _setup(url: str = URL) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(setup_cell_source(url, TESTED))
    cell.metadata["cellView"] = "form"
    cell.metadata["tags"] = [SETUP_CELL_TAG]
    return cell


def test_main_tidies_the_templates_too(tmp_path, capsys):
    root = _repository(tmp_path)
    template = root / "templates" / "chapter.ipynb"
    _notebook(template, [nbformat.v4.new_markdown_cell("# T")])
    assert main([str(root)]) == 0
    assert capsys.readouterr().out == f"tidied {template}\n"
    first = json.loads(template.read_text())["cells"][0]
    assert "".join(first["source"]) == setup_cell_source(URL, TESTED)


def test_check_lists_what_tidy_would_fix_and_changes_nothing(tmp_path, capsys):
    root = _repository(tmp_path)
    clean = _notebook(root / "book" / "01_a.ipynb", [_setup(), nbformat.v4.new_code_cell("1")])
    counted = nbformat.v4.new_code_cell("1 + 1")
    counted.execution_count = 4  # an execution count alone, without outputs, is enough
    _notebook(root / "book" / "02_b.ipynb", [_setup(), nbformat.v4.new_markdown_cell("#"), counted])
    _notebook(root / "book" / "03_c.ipynb", [nbformat.v4.new_markdown_cell("# C")])
    _notebook(root / "templates" / "chapter.ipynb", [_setup("https://github.com/old/place")])
    files = sorted(root.rglob("*.ipynb"))
    before = [path.read_bytes() for path in files]

    assert main(["--check", str(root)]) == 1
    out = capsys.readouterr().out
    assert f"{clean}" not in out
    assert "02_b.ipynb: cells [2] carry outputs or execution counts" in out
    assert "03_c.ipynb: the first cell is not the set-up cell" in out
    assert "chapter.ipynb: the set-up cell is stale" in out
    assert "make tidy" in out
    assert [path.read_bytes() for path in files] == before

    main([str(root)])
    capsys.readouterr()
    assert main(["--check", str(root)]) == 0
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


def _config_with_timeout(root: Path, timeout: str) -> Path:
    config = root / "_config.yml"
    config.write_text(f"title: t\nexecute:\n  execute_notebooks: force\n{timeout}")
    return config


@pytest.mark.parametrize(("timeout", "seconds"), [("1", 1), ("600", 600)])
def test_cell_timeout_reads_the_config(tmp_path, timeout, seconds):
    assert cell_timeout(_config_with_timeout(tmp_path, f"  timeout: {timeout}\n")) == seconds


@pytest.mark.parametrize(
    ("timeout", "shown"),
    [
        ("  timeout: 0\n", "0"), ("  timeout: -5\n", "-5"), ("  timeout: -1\n", "-1"),
        ("  timeout: true\n", "True"), ("  timeout: 2.5\n", "2.5"), ("  timeout: '60'\n", "'60'"),
        ("  timeout:\n", "None"), ("", "None"),
    ],
)
def test_cell_timeout_must_be_a_positive_integer(tmp_path, timeout, shown):
    config = _config_with_timeout(tmp_path, timeout)
    message = f"execute.timeout must be a positive integer, got {shown}$"
    with pytest.raises(ValueError, match=message):
        cell_timeout(config)


def test_cell_timeout_without_an_execute_section(tmp_path):
    config = tmp_path / "_config.yml"
    config.write_text("title: t\n")
    with pytest.raises(ValueError, match="got None$"):
        cell_timeout(config)
    config.write_text("")  # an empty file is an empty config
    with pytest.raises(ValueError, match="got None$"):
        cell_timeout(config)


def test_read_pins_normalizes_names_and_skips_comments_and_extras(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(
        "# a comment==1\n"
        "Orbax_Checkpoint == 0.12.8  # why\n"
        "jax[cuda12]==0.12.0.1\n"
        "zope.interface==7.0\n"
        "numpy>=2.5\n"
        "-e .\n"
        "\n"
    )
    assert read_pins(requirements) == {
        "orbax-checkpoint": "0.12.8", "jax": "0.12.0.1", "zope-interface": "7.0"
    }


def test_chapter_notebooks_skips_checkpoints_and_reads_subfolders(tmp_path):
    (tmp_path / "book" / ".ipynb_checkpoints").mkdir(parents=True)
    (tmp_path / "book" / "part").mkdir()
    for name in ["book/02_b.ipynb", "book/01_a.ipynb", "book/part/03_c.ipynb",
                 "book/.ipynb_checkpoints/01_a-checkpoint.ipynb", "book/notes.md"]:
        (tmp_path / name).write_text("{}")
    assert [p.relative_to(tmp_path).as_posix() for p in chapter_notebooks(tmp_path)] == [
        "book/01_a.ipynb", "book/02_b.ipynb", "book/part/03_c.ipynb"
    ]


def test_tidy_writes_the_setup_cell_as_json_with_one_space_indents(tmp_path):
    path = _notebook(tmp_path / "01_x.ipynb", [nbformat.v4.new_markdown_cell("# Café")])
    tidy_notebook(path, URL, TESTED)
    text = path.read_text(encoding="utf-8")
    notebook = json.loads(text)
    assert text == json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
    assert "Café" in text  # not \u00e9
    assert notebook["cells"][0] == {
        "cell_type": "code", "execution_count": None, "id": "setup",
        "metadata": {"cellView": "form", "tags": [SETUP_CELL_TAG]}, "outputs": [],
        "source": setup_cell_source(URL, TESTED).splitlines(keepends=True),
    }
    assert notebook["cells"][1]["source"] == ["# Café"]
    assert "outputs" not in notebook["cells"][1]  # markdown cells have none


def test_tidy_keeps_the_setup_cells_id_and_counts_an_untagged_code_cell_as_content(tmp_path):
    stale = nbformat.v4.new_code_cell("old set-up", id="kept-id")
    stale.metadata["tags"] = [SETUP_CELL_TAG, "other"]
    untagged = nbformat.v4.new_code_cell("print(1)")
    path = _notebook(tmp_path / "01_x.ipynb", [stale, untagged])
    assert tidy_notebook(path, URL, TESTED) is True
    cells = json.loads(path.read_text())["cells"]
    assert [c["id"] for c in cells] == ["kept-id", untagged.id]
    second = _notebook(tmp_path / "02_x.ipynb", [untagged])
    tidy_notebook(second, URL, TESTED)
    cells = json.loads(second.read_text())["cells"]
    assert len(cells) == 2 and cells[1]["source"] == ["print(1)"]
    tagged_markdown = nbformat.v4.new_markdown_cell("# X")
    tagged_markdown.metadata["tags"] = [SETUP_CELL_TAG]
    third = _notebook(tmp_path / "03_x.ipynb", [tagged_markdown])
    tidy_notebook(third, URL, TESTED)
    assert len(json.loads(third.read_text())["cells"]) == 2  # a markdown cell is not it


def test_tidy_an_empty_notebook(tmp_path):
    path = _notebook(tmp_path / "01_x.ipynb", [])
    assert tidy_notebook(path, URL, TESTED) is True
    (cell,) = json.loads(path.read_text())["cells"]
    assert cell["metadata"]["tags"] == [SETUP_CELL_TAG]


def test_notebook_problems_names_each_problem(tmp_path):
    counted = nbformat.v4.new_code_cell("1")
    counted.outputs = [nbformat.v4.new_output("stream", text="1")]
    markdown = nbformat.v4.new_markdown_cell("# X")
    path = _notebook(tmp_path / "a.ipynb", [markdown, counted, nbformat.v4.new_code_cell("2")])
    assert notebook_problems(path, URL, TESTED) == [
        f"the first cell is not the set-up cell (tagged {SETUP_CELL_TAG})",
        "cells [1] carry outputs or execution counts",
    ]
    assert notebook_problems(_notebook(tmp_path / "b.ipynb", []), URL, TESTED) == [
        f"the first cell is not the set-up cell (tagged {SETUP_CELL_TAG})"
    ]
    stale = _notebook(tmp_path / "c.ipynb", [_setup("https://github.com/old/place")])
    assert notebook_problems(stale, URL, TESTED) == ["the set-up cell is stale"]
    unfolded = _setup()
    del unfolded.metadata["cellView"]  # Colab would show all its code
    stale = _notebook(tmp_path / "e.ipynb", [unfolded])
    assert notebook_problems(stale, URL, TESTED) == ["the set-up cell is stale"]
    assert notebook_problems(_notebook(tmp_path / "d.ipynb", [_setup()]), URL, TESTED) == []


def test_main_in_the_current_folder_and_its_messages(tmp_path, capsys, monkeypatch):
    root = _repository(tmp_path)
    _notebook(root / "book" / "01_a.ipynb", [nbformat.v4.new_markdown_cell("# A")])
    monkeypatch.chdir(root)
    assert main(["--check"]) == 1
    assert capsys.readouterr().out == (
        "book/01_a.ipynb: the first cell is not the set-up cell (tagged remove-cell)\n"
        "Run `make tidy` (python -m tools.notebooks) to fix them.\n"
    )
    assert main([]) == 0
    assert capsys.readouterr().out == "tidied book/01_a.ipynb\n"
    assert main(["--check"]) == 0
    assert capsys.readouterr().out == ""


def test_main_reports_several_problems_of_one_notebook_on_one_line(tmp_path, capsys):
    root = _repository(tmp_path)
    counted = nbformat.v4.new_code_cell("1")
    counted.execution_count = 1
    _notebook(root / "book" / "01_a.ipynb", [counted])
    assert main(["--check", str(root)]) == 1
    assert capsys.readouterr().out.splitlines()[0] == (
        f"{root}/book/01_a.ipynb: the first cell is not the set-up cell (tagged remove-cell); "
        "cells [0] carry outputs or execution counts"
    )


def test_main_explains_itself(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["--help"])
    assert caught.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "Keeping the chapter notebooks tidy: the Colab set-up cell and clean stored" in help_text
    assert "root the repository root" in help_text
    assert ("--check change nothing; list the notebooks that need tidying and exit 1 if there "
            "are any") in help_text


def test_tidy_a_notebook_stored_without_cell_ids_or_metadata(tmp_path):
    """Older notebooks (nbformat 4.4) have no cell ids, and a cell may lack metadata."""
    old_setup = {"cell_type": "code", "execution_count": None, "metadata": {"tags":
                 [SETUP_CELL_TAG]}, "outputs": [], "source": ["old"]}
    bare = {"cell_type": "code", "execution_count": 2, "outputs": [], "source": ["1"]}
    path = tmp_path / "01_x.ipynb"
    for cells, first_id in (([old_setup], "setup"), ([bare], "setup")):
        path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                    "nbformat_minor": 4}))
        assert notebook_problems(path, URL, TESTED)
        tidy_notebook(path, URL, TESTED)
        tidied = json.loads(path.read_text())["cells"]
        assert tidied[0]["id"] == first_id
        assert len(tidied) == len(cells) + (cells[0] is bare)
        assert notebook_problems(path, URL, TESTED) == []


def test_urls_lose_only_a_trailing_slash_and_git_suffix(tmp_path):
    url = "https://github.com/someone/bookX"
    assert repository_url(_write_config(tmp_path, url + "/")) == url
    assert f'"git+{url}.git"' in setup_cell_source(url + "/", TESTED)
    assert f'"git+{url}.git"' in setup_cell_source(url + ".git", TESTED)


def test_colab_shows_the_setup_cell_as_one_titled_line():
    # Colab's form view: a first line `# @title Text` and metadata `cellView: form` show the
    # cell as "Text" alone, its code folded (tidy writes the metadata: see the test of the
    # cell's exact JSON above).
    first, *_ = setup_cell_source(URL, TESTED).splitlines()
    assert first.startswith("# @title Set-up: ") and len(first) <= 88
