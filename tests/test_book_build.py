"""The website builds with every notebook executed and zero warnings."""

from __future__ import annotations

import re
from pathlib import Path

from tools.notebooks import chapter_notebooks

ROOT = Path(__file__).resolve().parent.parent


def test_every_chapter_page_shows_executed_outputs(built_site: Path):
    for notebook in chapter_notebooks(ROOT):
        page = built_site / notebook.relative_to(ROOT).with_suffix(".html")
        assert page.exists(), f"{page} was not built"
        html = page.read_text(encoding="utf-8")
        assert "cell_output" in html, f"{page.name} shows no cell outputs"
        assert "backend:" in html, f"{page.name} does not show the environment banner"
        # The set-up cell is tagged remove-cell: readers of the website never see it.
        assert "importlib.invalidate_caches" not in html, f"{page.name} shows the set-up cell"


def test_colab_launch_button_points_at_the_notebook(built_site: Path):
    for notebook in chapter_notebooks(ROOT):
        page = built_site / notebook.relative_to(ROOT).with_suffix(".html")
        html = page.read_text(encoding="utf-8")
        target = re.escape(notebook.relative_to(ROOT).as_posix())
        colab = r"https://colab\.research\.google\.com/github/[^\"']+/blob/main/"
        assert re.search(colab + target, html), (
            f"{page.name} has no Colab button for {notebook.name}"
        )
