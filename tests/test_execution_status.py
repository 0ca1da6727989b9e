"""The execution-status page: written by the build from the notebooks it executed."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from importlib import metadata
from pathlib import Path

import jax
import pytest
from execution_status import parse_banner
from site_checks import toc_pages

ROOT = Path(__file__).resolve().parent.parent

NOTEBOOKS = [page for page in toc_pages(ROOT) if page.is_notebook]


class _Table(HTMLParser):
    """The rows of the page's execution-status table: cell texts and the row's first link."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[list[str], str | None]] = []
        self.headers: list[str] = []
        self._in_table = self._in_head = self._in_cell = False
        self._cells: list[str] = []
        self._link: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "table" and "execution-status" in (attributes.get("class") or ""):
            self._in_table = True
        elif self._in_table and tag == "thead":
            self._in_head = True
        elif self._in_table and tag == "tr":
            self._cells, self._link = [], None
        elif self._in_table and tag in ("td", "th"):
            self._in_cell = True
            self._cells.append("")
        elif self._in_table and tag == "a" and self._link is None:
            self._link = attributes.get("href")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_table = False
        elif tag == "thead":
            self._in_head = False
        elif self._in_table and tag in ("td", "th"):
            self._in_cell = False
        elif self._in_table and tag == "tr":
            cells = [" ".join(c.split()) for c in self._cells]
            if self._in_head:
                self.headers = cells
            else:
                self.rows.append((cells, self._link))

    def handle_data(self, data: str) -> None:
        if self._in_cell:
            self._cells[-1] += data


def _status_table(page: Path) -> _Table:
    assert page.exists(), f"the execution-status page {page} was not built"
    table = _Table()
    table.feed(page.read_text(encoding="utf-8"))
    assert table.headers, f"the execution-status page {page} has no table"
    return table


@pytest.fixture(scope="module")
def status_table(built_site: Path) -> _Table:
    return _status_table(built_site / "book" / "execution_status.html")


def test_the_chinese_edition_shows_the_same_runs(built_site: Path, status_table):
    """The Chinese pages show the English execution's outputs, so their status page lists
    the same runs: row for row, the same run times, versions and devices, under Chinese
    headers."""
    chinese = _status_table(built_site / "zh" / "execution_status.html")
    assert chinese.headers[:2] == ["页面", "运行时间"]
    assert len(chinese.rows) == len(status_table.rows)
    for (english_cells, english_link), (cells, link) in zip(
            status_table.rows, chinese.rows, strict=True):
        assert link == english_link  # the same page name, in the other edition
        assert cells[1:] == english_cells[1:], (english_cells, cells)


def test_the_page_lists_every_notebook_with_run_time_versions_and_device(status_table):
    column = {name: i for i, name in enumerate(status_table.headers)}
    by_page = {link.split("#")[0]: cells for cells, link in status_table.rows if link}
    assert len(status_table.rows) == len(NOTEBOOKS), (
        f"{len(status_table.rows)} rows for {len(NOTEBOOKS)} notebooks in _toc.yml"
    )
    for page in NOTEBOOKS:
        cells = by_page.get(Path(page.docname).name + ".html")
        assert cells is not None, f"{page.docname} is not on the execution-status page"
        assert page.title() in cells[column["Page"]], f"{page.docname}: {cells}"
        assert re.fullmatch(r"\d+\.\d s", cells[column["Run time"]]), (
            f"{page.docname}: no run time, {cells}"
        )
        assert cells[column["JAX"]] == jax.__version__, f"{page.docname}: {cells}"
        for library in ("Flax", "Optax"):
            value = cells[column[library]]
            assert value in ("—", metadata.version(library.lower())), f"{page.docname}: {cells}"
        # The device this machine computes on, whether a CPU or a GPU.
        assert re.fullmatch(r"\d+ × .+", cells[column["Devices"]]), f"{page.docname}: {cells}"
        assert jax.devices()[0].device_kind in cells[column["Devices"]], (
            f"{page.docname}: {cells}"
        )
    # The training chapters name Flax and Optax in their banners.
    assert any(cells[column["Flax"]] != "—" for cells, _ in status_table.rows)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("JAX 0.12.0.1 | backend: cpu | 1 device: cpu | 2 CPU cores",
         {"jax": "0.12.0.1", "packages": {}, "backend": "cpu", "devices": "1 device: cpu",
          "cores": 2}),
        ("'JAX 0.12.0.1 | flax 0.12.12 | optax 0.2.8 | backend: cpu | 8 devices: 8 × cpu | "
         "1 CPU core'",
         {"jax": "0.12.0.1", "packages": {"flax": "0.12.12", "optax": "0.2.8"}, "backend": "cpu",
          "devices": "8 devices: 8 × cpu", "cores": 1}),
        ("JAX 0.12.0.1 | torch 2.15.0+cpu | flax not installed\nbackend: gpu | "
         "1 device: NVIDIA H100 80GB HBM3 | 16 CPU cores\nmore output",
         {"jax": "0.12.0.1", "packages": {"torch": "2.15.0+cpu", "flax": "not installed"},
          "backend": "gpu", "devices": "1 device: NVIDIA H100 80GB HBM3", "cores": 16}),
        # A banner from before the cores were named.
        ("JAX 0.12.0.1 | backend: cpu | 1 device: cpu\nmore output",
         {"jax": "0.12.0.1", "packages": {}, "backend": "cpu", "devices": "1 device: cpu",
          "cores": None}),
    ],
)
def test_parse_banner(text, expected):
    assert parse_banner(text) == expected


def test_parse_banner_without_a_banner():
    assert parse_banner("JAX is great | backend: none") is None
