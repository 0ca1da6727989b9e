"""Keeping the chapter notebooks tidy: the Colab set-up cell and clean stored notebooks.

Every chapter starts with the same set-up cell (tagged ``remove-cell``, so the website hides
it). On Colab it installs this book's ``helpers`` package from the repository, and with it any
library that Colab lacks or has too old; elsewhere it does nothing. The repository URL lives in
one place, ``_config.yml``; run ``python -m helpers.notebooks`` (``make tidy``) after changing it,
or after saving a notebook with outputs, to rewrite every notebook's set-up cell and strip
outputs and execution counts.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

__all__ = [
    "INSTALL_SOURCE_VARIABLE",
    "SETUP_CELL_TAG",
    "chapter_notebooks",
    "repository_url",
    "setup_cell_source",
    "tidy_notebook",
]

SETUP_CELL_TAG = "remove-cell"
# Set to a pip requirement (a path, a wheel, a git URL) to install `helpers` from there
# outside Colab too: the test of a notebook's self-sufficiency points it at this checkout.
INSTALL_SOURCE_VARIABLE = "EXECUTABLE_JAX_HELPERS"

_TEMPLATE = '''\
# Set-up (hidden on the website). On Colab this installs the book's `helpers` package and, with
# it, any library that Colab lacks or has too old. Elsewhere `make book` / `make lab` have
# installed everything already and this cell does nothing.
import importlib.util
import os
import subprocess
import sys

if importlib.util.find_spec("helpers") is None:
    if "google.colab" not in sys.modules and "{variable}" not in os.environ:
        raise ModuleNotFoundError(
            "This notebook needs the book's `helpers` package. From the repository root run "
            "`make lab` (see README.md), or `pip install -r requirements.txt` in the "
            "environment of this kernel."
        )
    _source = os.environ.get("{variable}", "git+{url}.git")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", _source], check=True)
    importlib.invalidate_caches()'''


def repository_url(config_path: str | Path) -> str:
    """The repository URL from ``_config.yml`` (``repository: url:``), without a trailing slash."""
    config = yaml.safe_load(Path(config_path).read_text(encoding="utf-8")) or {}
    url = (config.get("repository") or {}).get("url")
    if not isinstance(url, str) or not url.startswith("https://"):
        raise ValueError(f"{config_path}: repository.url must be an https:// URL, got {url!r}")
    return url.rstrip("/").removesuffix(".git")


def setup_cell_source(url: str) -> str:
    """The source of the set-up cell that installs ``helpers`` from the repository ``url``."""
    if not isinstance(url, str) or not url.startswith("https://") or not urlsplit(url).netloc:
        raise ValueError(f"url must be an https:// URL with a host, got {url!r}")
    url = url.rstrip("/").removesuffix(".git")
    return _TEMPLATE.format(url=url, variable=INSTALL_SOURCE_VARIABLE)


def chapter_notebooks(root: str | Path) -> list[Path]:
    """Every notebook under ``root/book``, in file-name (reading) order."""
    book = Path(root) / "book"
    return sorted(p for p in book.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def _setup_cell(source: str) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": "setup",
        "metadata": {"tags": [SETUP_CELL_TAG]},
        "outputs": [],
        "source": source.splitlines(keepends=True),
    }


def tidy_notebook(path: str | Path, url: str) -> bool:
    """Put the current set-up cell first and strip outputs; return whether the file changed."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    notebook = json.loads(text)
    cells = notebook["cells"]
    first = cells[0] if cells else None
    is_setup = (
        first is not None
        and first["cell_type"] == "code"
        and SETUP_CELL_TAG in first.get("metadata", {}).get("tags", [])
    )
    cell = _setup_cell(setup_cell_source(url))
    if is_setup:
        cell["id"] = first.get("id", "setup")
        cells[0] = cell
    else:
        cells.insert(0, cell)
    for c in cells:
        if c["cell_type"] == "code":
            c["outputs"] = []
            c["execution_count"] = None
    new_text = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
    if new_text != text:
        path.write_text(new_text, encoding="utf-8")
        return True
    return False


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=".", help="the repository root")
    root = Path(parser.parse_args(argv).root)
    url = repository_url(root / "_config.yml")
    for notebook in chapter_notebooks(root):
        if tidy_notebook(notebook, url):
            print(f"tidied {notebook}")


if __name__ == "__main__":
    main()
