"""The chapter template (``templates/chapter.ipynb``) runs top to bottom, as a chapter must.

Its content is held to the chapters' rules in ``test_notebook_policy.py`` (``-k templates``),
and ``make tidy`` keeps its set-up cell current, as it does the chapters'. It is not part of
the book: the website build leaves it out, and nbmake does not collect it.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tools.notebooks import cell_timeout

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "templates" / "chapter.ipynb"


def test_the_chapter_template_runs():
    notebook = nbformat.read(TEMPLATE, as_version=4)
    NotebookClient(
        notebook, kernel_name="python3", timeout=cell_timeout(ROOT / "_config.yml"),
        resources={"metadata": {"path": str(TEMPLATE.parent)}},
    ).execute()
    printed = "".join(
        output.get("text", "")
        for cell in notebook.cells if cell.cell_type == "code"
        for output in cell.outputs
    )
    assert "backend:" in printed  # the environment banner
    assert printed.count("TypeError (expected):") == 2  # the error shown, and an exercise's
    assert "speed vs eager" in printed  # the timing table
