"""Keeping the chapter notebooks tidy: the Colab set-up cell and clean stored notebooks.

Every chapter starts with the same set-up cell (tagged ``remove-cell``, so the website hides
it). On Colab it installs this book's ``helpers`` package from the repository, and with it any
library that Colab lacks or has too old; elsewhere it does nothing. The repository URL lives in
one place, ``_config.yml``; run ``python -m tools.notebooks`` (``make tidy``) after changing it,
or after saving a notebook with outputs, to rewrite the set-up cell of every notebook in
``book/`` and ``templates/`` and strip outputs and execution counts.
``python -m tools.notebooks --check`` changes nothing: it lists the notebooks that ``make tidy``
would fix and exits with status 1 if there are any (the pre-commit hook runs it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

__all__ = [
    "INSTALL_SOURCE_VARIABLE",
    "SETUP_CELL_TAG",
    "cell_timeout",
    "chapter_notebooks",
    "notebook_problems",
    "TAUGHT_LIBRARIES",
    "pinned_versions",
    "read_config",
    "read_pins",
    "repository_url",
    "setup_cell_source",
    "template_notebooks",
    "tidy_notebook",
]

SETUP_CELL_TAG = "remove-cell"
# Set to a pip requirement (a path, a wheel, a git URL) to install `helpers` from there
# outside Colab too: the Colab tests point it at this checkout.
INSTALL_SOURCE_VARIABLE = "EXECUTABLE_JAX_HELPERS"
# The libraries the book teaches, which the set-up cell brings to their tested versions.
TAUGHT_LIBRARIES = ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint")

_TEMPLATE = """\
# @title Set-up: on Colab, brings JAX, Flax, Optax and Orbax to the tested versions
# (Colab shows this cell as its title line alone: `# @title` and the form view.)
# Hidden on the website. On Colab this brings JAX, Flax, Optax and Orbax to
# the versions the book is tested with (JAX with the runtime's GPU or TPU package),
# installs the book's `helpers` package, and prints one line saying what it changed.
# Elsewhere `make book` / `make lab` have installed everything: this cell does nothing.
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import time

TESTED = {tested}
REPOSITORY = "git+{url}.git"

if importlib.util.find_spec("helpers") is None:
    if "google.colab" not in sys.modules and "{variable}" not in os.environ:
        raise ModuleNotFoundError(
            "This notebook needs the book's `helpers` package. From the repository "
            "root run `make lab` (see README.md), or `pip install -r requirements.txt` "
            "in the environment of this kernel."
        )

    def _name(distribution):
        return distribution.lower().replace("_", "-").replace(".", "-")

    def _installed():
        found = importlib.metadata.distributions()
        return {{_name(d.metadata["Name"]): d.version for d in found}}

    def _release(version):  # "0.12.1rc1" -> (0, 12, 1)
        parts = version.split("+")[0].split(".")
        return tuple(int(p[: len(p) - len(p.lstrip("0123456789"))] or 0) for p in parts)

    before = _installed()
    accelerator = ""  # JAX's extra for the runtime's accelerator
    if "jax-cuda13-plugin" in before:
        accelerator = "[cuda13]"
    elif "jax-cuda12-plugin" in before:
        accelerator = "[cuda12]"
    elif "libtpu" in before:
        accelerator = "[tpu]"
    wanted = [
        f"{{name}}{{accelerator if name == 'jax' else ''}}=={{version}}"
        for name, version in TESTED.items()
        if name not in before or _release(before[name]) < _release(version)
    ]
    source = os.environ.get("{variable}", REPOSITORY)
    pip = [sys.executable, "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, *wanted, source], check=True)
    importlib.invalidate_caches()
    after = _installed()
    changed = sorted(name for name in after if before.get(name) != after[name])
    print("Set-up: installed", ", ".join(
        f"{{name}} {{before[name]}} -> {{after[name]}}" if name in before
        else f"{{name}} {{after[name]}}"
        for name in changed
    ))
    # A module imported before its upgrade stays the old one until Python restarts.
    stale = sorted(
        module for module, names in importlib.metadata.packages_distributions().items()
        if module in sys.modules and any(_name(name) in changed for name in names)
    )
    if stale:
        print(f"{{', '.join(stale)}} had been imported before the upgrade, so the "
              "runtime restarts now. Then run the notebook again (Runtime > Run all).",
              flush=True)
        time.sleep(1)  # lets the message reach the notebook
        os.kill(os.getpid(), 9)"""


def read_config(config_path: str | Path) -> dict[str, Any]:
    """The book's settings, ``_config.yml``, as a dict."""
    return yaml.safe_load(Path(config_path).read_text(encoding="utf-8")) or {}


def repository_url(config_path: str | Path) -> str:
    """The repository URL from ``_config.yml`` (``repository: url:``), without a trailing slash."""
    config = read_config(config_path)
    url = (config.get("repository") or {}).get("url")
    if not isinstance(url, str) or not url.startswith("https://"):
        raise ValueError(f"{config_path}: repository.url must be an https:// URL, got {url!r}")
    return url.rstrip("/").removesuffix(".git")


def cell_timeout(config_path: str | Path) -> int:
    """Seconds one notebook cell may run (``execute: timeout:`` in ``_config.yml``).

    The one timeout for every execution of a notebook: the website build, nbmake, the
    reproducibility run and the Colab test.
    """
    config = read_config(config_path)
    timeout = (config.get("execute") or {}).get("timeout")
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
        raise ValueError(
            f"{config_path}: execute.timeout must be a positive integer, got {timeout!r}"
        )
    return timeout


def read_pins(requirements_path: str | Path) -> dict[str, str]:
    """Every ``name==version`` line of a requirements file, by normalized name."""
    pins = {}
    for line in Path(requirements_path).read_text(encoding="utf-8").splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep:
            pins[re.sub(r"[-_.]+", "-", name.split("[")[0]).lower().strip()] = version.strip()
    return pins


def pinned_versions(requirements_path: str | Path) -> dict[str, str]:
    """The pinned versions of the taught libraries in ``requirements.txt``."""
    pins = read_pins(requirements_path)
    missing = [name for name in TAUGHT_LIBRARIES if name not in pins]
    if missing:
        raise ValueError(f"{requirements_path} pins no version of {', '.join(missing)}")
    return {name: pins[name] for name in TAUGHT_LIBRARIES}


def setup_cell_source(url: str, tested: dict[str, str]) -> str:
    """The set-up cell: taught libraries brought up to ``tested``, ``helpers`` from ``url``."""
    if not isinstance(url, str) or not url.startswith("https://") or not urlsplit(url).netloc:
        raise ValueError(f"url must be an https:// URL with a host, got {url!r}")
    if set(tested) != set(TAUGHT_LIBRARIES):
        raise ValueError(f"tested must give versions of exactly {TAUGHT_LIBRARIES}, got {tested}")
    url = url.rstrip("/").removesuffix(".git")
    lines = "".join(f'    "{name}": "{version}",\n' for name, version in tested.items())
    return _TEMPLATE.format(url=url, variable=INSTALL_SOURCE_VARIABLE, tested="{\n" + lines + "}")


def chapter_notebooks(root: str | Path) -> list[Path]:
    """Every notebook under ``root/book``, in file-name (reading) order."""
    book = Path(root) / "book"
    return sorted(p for p in book.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def template_notebooks(root: str | Path) -> list[Path]:
    """The notebooks under ``root/templates`` (the chapter template): not part of the book,
    but kept tidy like its chapters."""
    return sorted((Path(root) / "templates").glob("*.ipynb"))


def _is_setup_cell(cell: dict[str, Any] | None) -> bool:
    return (
        cell is not None
        and cell["cell_type"] == "code"
        and SETUP_CELL_TAG in cell.get("metadata", {}).get("tags", [])
    )


# Colab's form view shows a cell whose first line is `# @title ...` as that title alone,
# its code folded away (metadata `cellView: form`).
SETUP_CELL_METADATA = {"cellView": "form", "tags": [SETUP_CELL_TAG]}


def _setup_cell(source: str) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": "setup",
        "metadata": dict(SETUP_CELL_METADATA),
        "outputs": [],
        "source": source.splitlines(keepends=True),
    }


def _unused_id(taken: set[str]) -> str:
    """A new cell id (8 hex digits) that is not in ``taken``, which it joins."""
    while (new := uuid.uuid4().hex[:8]) in taken:
        pass
    taken.add(new)
    return new


def tidy_notebook(path: str | Path, url: str, tested: dict[str, str]) -> bool:
    """Put the current set-up cell first, strip outputs and give every cell an id (nbformat
    4.5 requires one); return whether the file changed."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    notebook = json.loads(text)
    cells = notebook["cells"]
    first = cells[0] if cells else None
    cell = _setup_cell(setup_cell_source(url, tested))
    if _is_setup_cell(first):
        cell["id"] = first.get("id", "setup")
        cells[0] = cell
    else:
        cells.insert(0, cell)
    taken = {c["id"] for c in cells if c.get("id")}
    for c in cells:
        if c["cell_type"] == "code":
            c["outputs"] = []
            c["execution_count"] = None
        if not c.get("id"):
            c["id"] = _unused_id(taken)
    new_text = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
    if new_text != text:
        path.write_text(new_text, encoding="utf-8")
        return True
    return False


def notebook_problems(path: str | Path, url: str, tested: dict[str, str]) -> list[str]:
    """What :func:`tidy_notebook` would fix in a notebook, without changing it: a missing or
    stale set-up cell, code cells that carry outputs or execution counts, and cells without
    an id."""
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    problems = []
    first = cells[0] if cells else None
    if not _is_setup_cell(first):
        problems.append(f"the first cell is not the set-up cell (tagged {SETUP_CELL_TAG})")
    elif ("".join(first["source"]) != setup_cell_source(url, tested)
          or first.get("metadata") != SETUP_CELL_METADATA):
        problems.append("the set-up cell is stale")
    dirty = [
        i for i, c in enumerate(cells)
        if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count") is not None)
    ]
    if dirty:
        problems.append(f"cells {dirty} carry outputs or execution counts")
    if missing := [i for i, c in enumerate(cells) if not c.get("id")]:
        problems.append(f"cells {missing} have no id")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Tidy every notebook of the book and the templates (``--check``: only report); the exit
    status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=".", help="the repository root")
    parser.add_argument(
        "--check", action="store_true",
        help="change nothing; list the notebooks that need tidying and exit 1 if there are any",
    )
    args = parser.parse_args(argv)
    root = Path(args.root)
    url = repository_url(root / "_config.yml")
    tested = pinned_versions(root / "requirements.txt")
    notebooks = [*chapter_notebooks(root), *template_notebooks(root)]
    if args.check:
        found = {path: problems for path in notebooks
                 if (problems := notebook_problems(path, url, tested))}
        for path, problems in found.items():
            print(f"{path}: {'; '.join(problems)}")
        if found:
            print("Run `make tidy` (python -m tools.notebooks) to fix them.")
        return 1 if found else 0
    for notebook in notebooks:
        if tidy_notebook(notebook, url, tested):
            print(f"tidied {notebook}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
