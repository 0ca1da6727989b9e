"""The website as readers use it: every page of ``_toc.yml`` and of the Chinese edition's
``zh/_toc.yml`` in a real browser (Chromium).

The site built by the ``built_site`` fixture is served on 127.0.0.1 and each page is visited
once, in one browser, with every request to another host blocked (a page must show its
content without CDNs). Each test below then checks one aspect of every page, so a failure
names the page and what is wrong with it. Screenshots of a few pages are saved next to the
site, in ``_build/test-site/_build/screenshots``, for a person to look at.

Chromium is Debian's (``apt-get install chromium``; ``make test`` installs it when missing),
at ``$CHROMIUM`` or ``/usr/bin/chromium``; Playwright drives it.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright
from site_checks import (
    CHROMIUM_ARGS,
    Browser,
    LinkChecker,
    TocPage,
    Visit,
    block_other_hosts,
    check_page,
    is_local,
    serve,
    toc_pages,
)

from tools.translation import chinese_only_pages

ROOT = Path(__file__).resolve().parent.parent
ENGLISH = toc_pages(ROOT)
CHINESE = toc_pages(ROOT, "zh")  # the Chinese edition, in the site's zh/ folder
PAGES = ENGLISH + CHINESE
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
# The whole browser suite (every page, the search, the screenshots) stays under this.
BUDGET_SECONDS = 240
# A word from a chapter's text, and the chapter the search must find with it, in each edition
# (the Chinese search cuts the text into words with jieba).
SEARCHES = {"": ("jaxpr", "book/05_tracing_jaxprs"), "zh/": ("微分", "zh/06_autodiff")}
# Pages photographed as a reader first sees them (page, what to scroll to), besides the first
# figure of the book and the search results.
SCREENSHOTS = {
    "book/intro": {"": None},
    "book/03_immutability": {"": None, "_exercises": ".exercise"},
    "book/execution_status": {"": "table.execution-status"},
    "zh/intro": {"": None},
    "zh/03_immutability": {"_exercises": ".exercise"},
}


def _id(page: TocPage) -> str:
    return page.docname


@pytest.fixture(scope="module")
def browser() -> Iterator[tuple[Any, list[str]]]:
    """One Chromium context that blocks every host but the local one; yields (context,
    blocked URLs)."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"the browser tests need Chromium at {CHROMIUM}: install Debian's package "
            "(`apt-get install chromium`, which `make test` does as root) or set $CHROMIUM"
        )
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        blocked: list[str] = []
        block_other_hosts(context, blocked)
        try:
            yield context, blocked
        finally:
            context.close()
            chromium.close()


class Tour:
    """Every page visited once, with the search and the screenshots."""

    def __init__(self, site: Path, base: str, browser: Browser, screenshots: Path):
        self.site, self.base, self.browser = site, base, browser
        self.links = LinkChecker(site, base)
        self.screenshots = screenshots
        self.visits: dict[str, Visit] = {}
        self.saved: list[Path] = []
        self.search_results: dict[str, list[str]] = {}
        self.seconds = 0.0

    def run(self) -> None:
        start = time.perf_counter()
        shutil.rmtree(self.screenshots, ignore_errors=True)
        self.screenshots.mkdir(parents=True)
        figure_shot = False
        for page in PAGES:
            name = page.docname.replace("/", "_")
            shots = [
                (self.screenshots / f"{name}{suffix}.png", selector)
                for suffix, selector in SCREENSHOTS.get(page.docname, {}).items()
            ]
            visit = self.browser.visit(self.base + page.html, screenshots=shots)
            self.saved += [path for path, _ in shots]
            self.visits[page.docname] = visit
            figure = self.browser.page.locator("article .cell_output img:visible").first
            if not figure_shot and visit.status == 200 and figure.count():
                figure.scroll_into_view_if_needed()
                self._shoot(f"{name}_figure.png")
                figure_shot = True
        for folder, (word, _) in SEARCHES.items():
            self._search(folder, word)
        self.seconds = time.perf_counter() - start

    def _search(self, folder: str, word: str) -> None:
        page = self.browser.page
        page.goto(f"{self.base}{folder}search.html?q={word}", wait_until="load")
        results = "#search-results ul.search li a"
        try:
            page.wait_for_selector(results, timeout=20_000)
        except PlaywrightError:
            pass  # no results: the search test says so
        self.search_results[folder] = page.eval_on_selector_all(
            results, "as => as.map(a => a.href)")
        self._shoot(f"{folder.strip('/') or 'en'}_search.png")

    def _shoot(self, name: str) -> None:
        path = self.screenshots / name
        self.browser.page.screenshot(path=str(path))
        self.saved.append(path)


@pytest.fixture(scope="module")
def tour(built_site: Path, browser: tuple[Any, list[str]]) -> Iterator[Tour]:
    context, _ = browser
    with serve(built_site) as base:
        tour = Tour(built_site, base, Browser(context), built_site.parent / "screenshots")
        tour.run()
        yield tour


@pytest.fixture(scope="module")
def problems(tour: Tour, executed_notebooks) -> dict[str, dict[str, list[str]]]:
    return {
        page.docname: check_page(page, tour.visits[page.docname], tour.links, ROOT,
                                 executed_notebooks.get(_english_source(page)))
        for page in PAGES
    }


def _english_source(page: TocPage) -> Path:
    """The English page a page is or translates (its outputs are the English execution's)."""
    return ROOT / "book" / page.source.name if page in CHINESE else page.source.resolve()


def _check(problems: dict[str, dict[str, list[str]]], page: TocPage, *aspects: str) -> None:
    found = [message for aspect in aspects for message in problems[page.docname][aspect]]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_page_loads_without_javascript_errors(problems, page):
    _check(problems, page, "loads", "javascript")


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_page_shows_its_title_numbered_headings_and_text(problems, page):
    _check(problems, page, "title", "headings", "content")


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_mathematics_is_typeset(problems, page):
    _check(problems, page, "math")


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_code_cells_show_their_outputs(problems, page):
    _check(problems, page, "outputs")


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_every_image_and_plot_loads(problems, page):
    _check(problems, page, "images")


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_links_and_cross_references_resolve(problems, page):
    _check(problems, page, "links", "cross-references")


@pytest.mark.parametrize("page", [p for p in PAGES if p.is_notebook], ids=_id)
def test_colab_and_download_buttons(problems, page):
    _check(problems, page, "launch", "download")


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_exercises_render_with_solutions_collapsed(problems, page):
    _check(problems, page, "exercises")


def test_chapters_have_exercises_and_glossary_links(tour):
    """Guards the checks above against finding nothing to check."""
    chapters = [p for p in PAGES if p.number is not None]
    assert chapters
    for page in chapters:
        facts = tour.visits[page.docname].facts
        assert len(facts["exercises"]) >= 3, f"{page.docname}: fewer than 3 exercises shown"
        assert tour.visits[page.docname].solution_opens, f"{page.docname}: a solution stays shut"
    glossary = tour.visits["book/glossary"].facts["articleLinks"]
    assert any("/book/" in url and ".html" in url for url in glossary)


@pytest.mark.parametrize("folder", SEARCHES, ids=["English", "Chinese"])
def test_search_finds_a_chapter_by_a_word_in_its_text(tour, folder):
    word, finds = SEARCHES[folder]
    found = [url.split("?")[0].split("#")[0] for url in tour.search_results[folder]]
    assert any(url.endswith(finds + ".html") for url in found), (
        f"searching {folder or 'the English edition'} for {word!r} does not list {finds}: "
        f"{found}"
    )


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_page_links_to_itself_in_the_other_language(tour, page):
    """Every English page links to its Chinese page and back, and each edition declares its
    language to the browser."""
    facts = tour.visits[page.docname].facts
    chinese = page in CHINESE
    other = (f"book/{page.docname.removeprefix('zh/')}" if chinese else
             f"zh/{page.docname.removeprefix('book/')}")
    assert facts.get("lang") == ("zh-CN" if chinese else "en"), facts.get("lang")
    switch = facts.get("languageSwitch", [])
    if chinese and page.docname.removeprefix("zh/") in chinese_only_pages(ROOT):  # terms
        assert switch == []
        return
    assert [link["href"] for link in switch] == [tour.base + other + ".html"], switch
    assert switch[0]["lang"] == ("en" if chinese else "zh-CN")
    assert (tour.site / (other + ".html")).is_file()


def test_no_page_reached_another_host(tour, browser):
    """Every request to another host (a CDN) was refused, so the checks above saw each page
    as it shows without them."""
    _, blocked = browser
    escaped = {name: visit.escaped for name, visit in tour.visits.items() if visit.escaped}
    assert not escaped, f"responses from other hosts: {escaped}"
    assert all(not is_local(url) for url in blocked)
    refused = {url for visit in tour.visits.values() for url in visit.blocked}
    assert refused <= set(blocked), refused - set(blocked)


def test_screenshots_are_saved(tour):
    planned = sum(len(shots) for shots in SCREENSHOTS.values()) + 1 + len(SEARCHES)  # a figure
    assert len(tour.saved) == planned, f"{len(tour.saved)} screenshots, {planned} planned"
    for path in tour.saved:
        assert path.stat().st_size > 10_000, f"{path} looks blank"


def test_the_browser_tour_fits_its_budget(tour):
    slowest = max(tour.visits.items(), key=lambda item: item[1].seconds)
    assert tour.seconds < BUDGET_SECONDS, (
        f"visiting every page took {tour.seconds:.0f} s (slowest: {slowest[0]}, "
        f"{slowest[1].seconds:.1f} s)"
    )


_BROKEN_PAGE = """<!DOCTYPE html><html><head><title>Broken page</title></head><body>
<article class="bd-article"><h1>Broken page</h1>
<p>This page has plenty of words in it, so that its text is long enough to count as content,
and then it fails in every way a page can fail: a missing image, a link to nowhere, an
anchor that does not exist, a script that throws, and directive syntax left as text.</p>
<p>```{exercise} Left as text</p>
<p>Mathematics that was never typeset: <span class="math">\\(f(x) = x^2\\)</span>.</p>
<img src="missing.png" alt="a figure">
<a href="nowhere.html">nowhere</a> <a href="#no-such-anchor">an anchor</a>
<script>undefinedFunction();</script>
</article></body></html>"""


def test_a_broken_page_is_reported_by_name(browser, tmp_path):
    """The checks fail on a broken page, naming it (a page built wrong, not a test)."""
    context, _ = browser
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "broken.html").write_text(_BROKEN_PAGE, encoding="utf-8")
    source = tmp_path / "book" / "broken.md"
    source.write_text("# Broken page\n\nSee [nothing](missing.md).\n", encoding="utf-8")
    page = TocPage("book/broken", source, None)
    browser = Browser(context)
    with serve(tmp_path) as base:
        visit = browser.visit(base + page.html)
        found = check_page(page, visit, LinkChecker(tmp_path, base), ROOT)
        gone = browser.visit(base + "book/gone.html")
        missing = check_page(page, gone, LinkChecker(tmp_path, base), ROOT)
    browser.close()
    for aspect in ("javascript", "images", "links", "content", "cross-references", "math"):
        assert found[aspect], f"a broken page passed the {aspect!r} check"
        assert all(message.startswith("book/broken: ") for message in found[aspect])
    assert missing["loads"] == [f"book/broken: HTTP 404 for {base}book/gone.html"]
