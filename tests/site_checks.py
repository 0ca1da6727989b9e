"""Checking the built website in a real browser (used by ``test_website.py``).

A page is visited once: :func:`visit` loads it in Chromium and gathers what a reader would
see (headings, outputs, images, links, buttons, exercises, JavaScript errors) in one pass, and
:func:`check_page` turns those facts into problems, grouped by aspect, each naming the page.
Requests to other hosts than the local server are blocked, so a page must show its content
without the CDNs the theme may ask for. MathJax is served with the site, so mathematics must be
typeset: TeX source left in the text (``\\(``, ``\\[``, ``$$``) is a problem.
"""

from __future__ import annotations

import functools
import html
import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import yaml
from playwright.sync_api import Error as PlaywrightError

LOCAL_HOSTS = {"127.0.0.1", "localhost"}
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
# MyST or directive syntax left as text on a page: something did not render.
_UNRENDERED = re.compile(
    r"```\{|\{(?:term|ref|doc|numref|eq|exercise|solution|solution-start|solution-end)\}`|"
    r"^:(?:label|class):", re.MULTILINE,
)
# TeX delimiters that MathJax replaces when it typesets a page's mathematics.
_UNTYPESET_MATH = re.compile(r"\\\(|\\\[|\$\$")


@dataclass(frozen=True)
class TocPage:
    """A page listed in ``_toc.yml``."""

    docname: str  # "book/01_why_jax"
    source: Path
    number: int | None  # the chapter number on the page, for chapters of numbered parts

    @property
    def is_notebook(self) -> bool:
        return self.source.suffix == ".ipynb"

    @property
    def html(self) -> str:
        return self.docname + ".html"

    def markdown(self) -> str:
        """The page's Markdown text (a notebook's Markdown cells, joined)."""
        text = self.source.read_text(encoding="utf-8")
        if not self.is_notebook:
            return text
        cells = json.loads(text)["cells"]
        return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")

    def code(self) -> str:
        if not self.is_notebook:
            return ""
        cells = json.loads(self.source.read_text(encoding="utf-8"))["cells"]
        return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")

    def title(self) -> str:
        """The page's H1 title as a reader sees it (Markdown emphasis and code marks removed)."""
        match = re.search(r"^# (.+)$", self.markdown(), flags=re.MULTILINE)
        return _plain(match.group(1)) if match else ""


def _plain(markdown: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    return re.sub(r"[`*]", "", text).strip()


def toc_pages(root: Path, folder: str = "") -> list[TocPage]:
    """Every page of ``_toc.yml`` in reading order, with the chapter numbers the book shows
    (chapters of ``numbered`` parts are numbered continuously across parts). ``folder``: a
    book whose ``_toc.yml`` is in that folder of ``root`` and whose website is in the same
    folder of the site (the Chinese edition, ``zh``)."""
    book = root / folder
    toc = yaml.safe_load((book / "_toc.yml").read_text(encoding="utf-8"))
    pages: list[TocPage] = []
    number = 0
    prefix = f"{folder}/" if folder else ""

    def source(entry: str) -> Path:
        for suffix in (".ipynb", ".md"):
            if (book / (entry + suffix)).exists():
                return book / (entry + suffix)
        return book / (entry + ".md")  # missing: the page check reports it

    def add(entries: list[dict], numbered: bool) -> None:
        nonlocal number
        for entry in entries:
            if "file" in entry:
                chapter = None
                if numbered:
                    number += 1
                    chapter = number
                pages.append(TocPage(prefix + entry["file"], source(entry["file"]), chapter))
            add(entry.get("sections", []), False)

    pages.append(TocPage(prefix + toc["root"], source(toc["root"]), None))
    for part in toc.get("parts", []):
        add(part.get("chapters", []), bool(part.get("numbered")))
    add(toc.get("chapters", []), False)
    return pages


def colab_url(root: Path, page: TocPage) -> str:
    """Where the page's Colab launch button must point, from ``_config.yml``."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    repository = config["repository"]
    repo = urlsplit(repository["url"]).path.strip("/").removesuffix(".git")
    colab = config["launch_buttons"]["colab_url"].rstrip("/")
    path = page.source.relative_to(root).as_posix()
    return f"{colab}/github/{repo}/blob/{repository.get('branch', 'main')}/{path}"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` over HTTP on 127.0.0.1 (a free port); yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def is_local(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme not in ("http", "https") or parts.hostname in LOCAL_HOSTS


def block_other_hosts(context: Any, blocked: list[str]) -> None:
    """Abort every request to a host other than the local server, noting its URL."""

    def handle(route: Any) -> None:
        url = route.request.url
        if is_local(url):
            route.continue_()
        else:
            blocked.append(url)
            route.abort("blockedbyclient")

    context.route("**/*", handle)


# Everything a reader would check on a page, gathered by the browser in one pass.
_FACTS = r"""
() => {
  const article = document.querySelector("article.bd-article")
    || document.querySelector("main") || document.body;
  const shown = (el) => {
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== "hidden";
  };
  const folded = (el) => !!el.closest(".toggle-hidden, details:not([open]), .solution");
  const headingText = (h) => {
    const copy = h.cloneNode(true);
    copy.querySelectorAll(".headerlink, .section-number").forEach((e) => e.remove());
    return copy.textContent.replace(/\s+/g, " ").trim();
  };
  const prose = article.cloneNode(true);
  prose.querySelectorAll("pre, code, .cell_output, script, style").forEach((e) => e.remove());
  return {
    title: document.title,
    headings: [...article.querySelectorAll("h1, h2, h3, h4")].map((h) => ({
      level: Number(h.tagName[1]),
      number: (h.querySelector(".section-number")?.textContent || "").trim(),
      text: headingText(h),
      shown: shown(h),
    })),
    textLength: article.innerText.trim().length,
    prose: prose.textContent,
    problematic: article.querySelectorAll(".problematic, .system-message").length,
    images: [...document.querySelectorAll("img")].map((img) => ({
      src: img.getAttribute("src") || "",
      loaded: img.complete && img.naturalWidth > 0,
      inOutput: !!img.closest(".cell_output"),
      shown: shown(img) || folded(img) || !article.contains(img),
    })),
    cellsWithOutput: [...article.querySelectorAll("div.cell")]
      .filter((c) => c.querySelector(":scope > .cell_output")).length,
    outputs: [...article.querySelectorAll(".cell_output")].map((o) => ({
      empty: !(o.innerText.trim() || o.querySelector("img, svg, table, iframe")),
      shown: shown(o) || folded(o),
    })),
    links: [...document.querySelectorAll("a[href]")].map((a) => a.href),
    articleLinks: [...article.querySelectorAll("a[href]")].map((a) => a.href),
    languageSwitch: [...document.querySelectorAll(".language-switch a")].map((a) => ({
      href: a.href, lang: a.getAttribute("hreflang"), text: a.textContent.trim(),
    })),
    lang: document.documentElement.lang,
    colab: [...document.querySelectorAll('a[href*="colab.research.google.com"]')]
      .map((a) => a.getAttribute("href")),
    downloads: [...document.querySelectorAll("a.btn-download-source-button")]
      .map((a) => a.href),
    exercises: [...article.querySelectorAll(".exercise")].map((e) => e.id),
    solutions: [...article.querySelectorAll(".solution")].map((s) => ({
      id: s.id,
      button: !!s.querySelector(".admonition-title button.toggle-button"),
      collapsed: s.classList.contains("toggle-hidden") && [...s.children]
        .filter((c) => !c.classList.contains("admonition-title")).every((c) => !shown(c)),
    })),
  };
}
"""

_SOLUTION_BODY_SHOWN = r"""
(solution) => [...solution.children]
  .filter((c) => !c.classList.contains("admonition-title"))
  .some((c) => { const b = c.getBoundingClientRect(); return b.width > 0 && b.height > 0; })
"""


@dataclass
class Visit:
    """What the browser saw on one page."""

    url: str
    status: int | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    js_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)  # requests to other hosts, refused
    escaped: list[str] = field(default_factory=list)  # responses from other hosts: none
    solution_opens: bool | None = None  # a solution's body shows after a click on its button
    download: dict[str, Any] | None = None  # the notebook the .ipynb button serves
    seconds: float = 0.0


class Browser:
    """One Chromium page on one context, reused for every visit (the fastest way through)."""

    def __init__(self, context: Any):
        self.context = context
        self.page = context.new_page()
        self.page.set_default_timeout(30_000)
        self._visit: Visit | None = None
        self._visits: dict[str, Visit] = {}  # by URL, fragment removed
        self.page.on("pageerror", self._on_page_error)
        self.page.on("console", self._on_console)
        self.page.on("requestfailed", self._on_request_failed)
        self.page.on("response", self._on_response)

    def _note(self, attribute: str, message: str, request: Any = None) -> None:
        """Add to the visit of the page that made ``request`` (its Referer: a response may be
        reported after the next page has started loading), or else to the current visit."""
        visit = self._visit
        referer = (request.headers.get("referer") or "") if request is not None else ""
        if referer.split("#")[0] in self._visits:
            visit = self._visits[referer.split("#")[0]]
        if visit is not None:
            getattr(visit, attribute).append(message)

    def _on_page_error(self, error: Any) -> None:
        self._note("js_errors", f"uncaught {error.name}: {error.message}")

    def _on_console(self, message: Any) -> None:
        if message.type != "error":
            return
        where = (message.location or {}).get("url", "")
        if where and not is_local(where):
            return  # a blocked request to another host (a CDN): allowed, checked by content
        if message.text.startswith("Failed to load resource"):
            return  # a local request that failed: reported with its URL by the handlers below
        self._note("js_errors", f"console error: {message.text} ({where})")

    def _on_request_failed(self, request: Any) -> None:
        failure = request.failure or ""
        if not is_local(request.url):
            self._note("blocked", request.url, request)
        elif "ERR_ABORTED" not in failure:
            self._note("failed_requests", f"{request.url}: {failure}", request)

    def _on_response(self, response: Any) -> None:
        url = response.url
        if not is_local(url):
            self._note("escaped", url, response.request)
            return
        if response.request.is_navigation_request():
            return  # the page itself: its status is checked on its own
        if response.status >= 400 and not url.endswith("/favicon.ico"):
            self._note("failed_requests", f"{url}: HTTP {response.status}", response.request)

    def visit(
        self, url: str, screenshots: Sequence[tuple[Path, str | None]] = (),
        open_a_solution: bool = True, fetch_download: bool = True,
    ) -> Visit:
        """Load ``url`` and gather its facts; ``screenshots`` are (file, CSS selector of what to
        scroll to first, or None for the top of the page), taken before anything is clicked."""
        start = time.perf_counter()
        visit = self._visit = self._visits[url.split("#")[0]] = Visit(url)
        try:
            self._look(visit, screenshots, open_a_solution, fetch_download)
        except PlaywrightError as error:  # a page that hangs or breaks the browser
            visit.failed_requests.append(f"{url}: {str(error).splitlines()[0]}")
        finally:
            self._visit = None
        visit.seconds = time.perf_counter() - start
        return visit

    def _look(
        self, visit: Visit, screenshots: Sequence[tuple[Path, str | None]],
        open_a_solution: bool, fetch_download: bool,
    ) -> None:
        response = self.page.goto(visit.url, wait_until="load")
        visit.status = response.status if response is not None else None
        # MathJax typesets after the load event; its promise settles when it is done (pages
        # without mathematics do not load MathJax).
        self.page.evaluate("() => window.MathJax?.startup?.promise")
        visit.facts = self.page.evaluate(_FACTS)
        for path, selector in screenshots:
            target = self.page.locator(selector).first if selector else None
            if target is not None and target.count():
                target.scroll_into_view_if_needed()
            self.page.screenshot(path=str(path))
        buttons = self.page.locator("article .solution > .admonition-title > .toggle-button")
        if open_a_solution and buttons.count():
            buttons.first.click()  # the chevron a reader clicks to show the solution
            visit.solution_opens = buttons.first.locator("xpath=../..").evaluate(
                _SOLUTION_BODY_SHOWN
            )
        notebooks = [url for url in visit.facts["downloads"] if url.endswith(".ipynb")]
        if fetch_download and notebooks:
            visit.download = self._fetch_notebook(notebooks[0])

    def close(self) -> None:
        self.page.close()

    def _fetch_notebook(self, url: str) -> dict[str, Any]:
        response = self.context.request.get(url)
        result: dict[str, Any] = {"url": url, "status": response.status}
        try:
            notebook = json.loads(response.body())
        except ValueError as error:
            result["error"] = f"not JSON: {error}"
            return result
        cells = notebook.get("cells", []) if isinstance(notebook, dict) else []
        result["nbformat"] = notebook.get("nbformat") if isinstance(notebook, dict) else None
        result["cells"] = len(cells)
        markdown = "\n\n".join(
            "".join(c.get("source", "")) for c in cells if c.get("cell_type") == "markdown"
        )
        match = re.search(r"^# (.+)$", markdown, flags=re.MULTILINE)
        result["title"] = _plain(match.group(1)) if match else ""
        return result


class LinkChecker:
    """Resolves links to the local site against the built files, anchors included."""

    def __init__(self, site: Path, base_url: str):
        self.site = site
        self.base = urlsplit(base_url)
        self._ids: dict[Path, set[str]] = {}

    def target(self, url: str) -> tuple[Path, str] | None:
        """The file and fragment a local link points at; None for another host's link."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or parts.netloc != self.base.netloc:
            return None
        path = self.site / unquote(parts.path).lstrip("/")
        if parts.path.endswith("/") or path.is_dir():
            path = path / "index.html"
        return path, unquote(parts.fragment)

    def ids(self, path: Path) -> set[str]:
        if path not in self._ids:
            text = path.read_text(encoding="utf-8", errors="replace")
            found = re.findall(r"""\s(?:id|name)=["']([^"']*)["']""", text)
            self._ids[path] = {html.unescape(i) for i in found}
        return self._ids[path]

    def problem(self, url: str) -> str | None:
        """Why a local link is broken, or None when it resolves (or is not local)."""
        target = self.target(url)
        if target is None:
            return None
        path, fragment = target
        if not path.is_file():
            return f"{url} -> no file {path.relative_to(self.site).as_posix()}"
        if fragment and path.suffix == ".html" and fragment not in self.ids(path):
            return f"{url} -> no element with id {fragment!r}"
        return None


def expected_outputs(executed: Path | None) -> tuple[int | None, int | None]:
    """Code cells with shown outputs, and image outputs, in an executed notebook."""
    if executed is None or not executed.is_file():
        return None, None
    cells, images = 0, 0
    for cell in json.loads(executed.read_text(encoding="utf-8"))["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] != "code" or {"remove-cell", "remove-output"} & set(tags):
            continue
        outputs = cell.get("outputs", [])
        cells += bool(outputs)
        images += sum(any(k.startswith("image/") for k in o.get("data", {})) for o in outputs)
    return cells, images


def check_page(
    page: TocPage, visit: Visit, links: LinkChecker, root: Path, executed: Path | None = None,
) -> dict[str, list[str]]:
    """Problems on one page, by aspect; an empty list means the aspect is fine."""
    name = page.docname
    facts = visit.facts
    problems: dict[str, list[str]] = {
        "loads": [], "javascript": [], "title": [], "headings": [], "content": [],
        "outputs": [], "images": [], "links": [], "cross-references": [], "launch": [],
        "download": [], "exercises": [], "math": [],
    }

    def report(aspect: str, message: str) -> None:
        problems[aspect].append(f"{name}: {message}")

    if visit.status != 200:
        report("loads", f"HTTP {visit.status} for {visit.url}")
    for message in visit.failed_requests:
        report("loads", f"failed request {message}")
    for message in visit.js_errors:
        report("javascript", message)
    if not facts:
        report("content", "nothing to check: the page did not render")
        return problems

    # Title and headings.
    title = page.title()
    h1s = [h for h in facts["headings"] if h["level"] == 1]
    if not title:
        report("title", f"{page.source.name} has no '# ' title")
    elif not h1s or h1s[0]["text"] != title:
        report("title", f"the page's H1 is {h1s[0]['text'] if h1s else None!r}, not {title!r}")
    elif not h1s[0]["shown"]:
        report("title", "the H1 title is not visible")
    elif title not in facts["title"]:
        report("title", f"the browser title {facts['title']!r} does not name {title!r}")
    if page.number is not None:
        expected = f"{page.number}."
        if h1s and h1s[0]["number"] != expected:
            report("headings", f"the H1 is numbered {h1s[0]['number']!r}, not {expected!r}")
        sections = [h for h in facts["headings"] if h["level"] == 2]
        for k, heading in enumerate(sections, start=1):
            if heading["number"] != f"{page.number}.{k}.":
                report("headings", f"section {heading['text']!r} is numbered "
                                   f"{heading['number']!r}, not '{page.number}.{k}.'")
        if not sections:
            report("headings", "no numbered sections")

    # Content: text there, nothing left unrendered, no docutils error markup.
    if facts["textLength"] < 200:
        report("content", f"only {facts['textLength']} characters of text")
    if facts["problematic"]:
        report("content", f"{facts['problematic']} rendering error marker(s) (.problematic)")
    leftover = _UNRENDERED.search(facts["prose"])
    if leftover:
        start = max(leftover.start() - 40, 0)
        snippet = " ".join(facts["prose"][start:leftover.end() + 40].split())
        report("content", f"unrendered markup near {snippet!r}")

    untypeset = _UNTYPESET_MATH.search(facts["prose"])
    if untypeset:
        start = max(untypeset.start() - 40, 0)
        snippet = " ".join(facts["prose"][start:untypeset.end() + 40].split())
        report("math", f"mathematics shown as TeX source near {snippet!r}")

    # Outputs of code cells.
    if page.is_notebook:
        cells, images = expected_outputs(executed)
        if not facts["outputs"]:
            report("outputs", "no cell outputs")
        if cells is not None and facts["cellsWithOutput"] != cells:
            report("outputs", f"{facts['cellsWithOutput']} code cells show outputs, the "
                              f"executed notebook has {cells}")
        empty = sum(o["empty"] for o in facts["outputs"])
        hidden = sum(not o["shown"] for o in facts["outputs"])
        if empty:
            report("outputs", f"{empty} empty output(s)")
        if hidden:
            report("outputs", f"{hidden} output(s) not displayed")
        shown_images = sum(i["inOutput"] for i in facts["images"])
        if images is not None and shown_images != images:
            report("images", f"{shown_images} images in outputs, the executed notebook has "
                             f"{images}")
        if re.search(r"\bplt\.|\bplot_\w+\(", page.code()) and not shown_images:
            report("images", "the code draws figures but the page shows none")

    # Images (the theme's as well as the outputs').
    for image in facts["images"]:
        if not image["loaded"]:
            report("images", f"image {image['src']!r} did not load")
        elif not image["shown"]:
            report("images", f"image {image['src']!r} is not displayed")

    # Links to the site itself, then the links the page's text asks for.
    seen: set[str] = set()
    for url in facts["links"]:
        if url in seen:
            continue
        seen.add(url)
        broken = links.problem(url)
        if broken:
            report("links", f"broken link {broken}")
    targets = {links.target(u)[0] for u in facts["articleLinks"] if links.target(u)}
    here = (links.site / page.html).parent
    for match in re.finditer(r"\]\(([\w./-]+)\.(?:ipynb|md)(?:#[^)\s]*)?\)", page.markdown()):
        wanted = (here / (match.group(1) + ".html")).resolve()
        if wanted not in {t.resolve() for t in targets}:
            report("cross-references", f"the link to {match.group(1)} is missing from the page")
    terms = len(re.findall(r"\{term\}`", page.markdown()))
    term_links = sum("#term-" in u for u in facts["articleLinks"])
    if term_links < terms:
        report("cross-references",
               f"{terms} glossary references in the source, {term_links} glossary links shown")

    # Launch and download buttons of notebooks.
    if page.is_notebook:
        wanted = colab_url(root, page)
        if wanted not in facts["colab"]:
            report("launch", f"no Colab button for {wanted} (found {facts['colab']})")
        download = visit.download
        if not download:
            report("download", "no .ipynb download button")
        elif download.get("status") != 200 or download.get("error"):
            report("download", f"{download['url']} gave HTTP {download.get('status')} "
                               f"{download.get('error', '')}")
        elif download.get("nbformat") != 4 or not download.get("cells"):
            report("download", f"{download['url']} is not a notebook with cells")
        elif download.get("title") != title:
            report("download", f"{download['url']} is titled {download.get('title')!r}")

    # Exercises, with their solutions folded away.
    markdown = page.markdown()
    exercises = len(re.findall(r"^`{3,}\{exercise\}", markdown, flags=re.MULTILINE))
    solutions = len(re.findall(r"^`{3,}\{solution-start\}", markdown, flags=re.MULTILINE))
    if len(facts["exercises"]) != exercises:
        report("exercises", f"{len(facts['exercises'])} exercises rendered, {exercises} written")
    if len(facts["solutions"]) != solutions:
        report("exercises", f"{len(facts['solutions'])} solutions rendered, {solutions} written")
    for solution in facts["solutions"]:
        if not solution["collapsed"] or not solution["button"]:
            report("exercises", f"solution {solution['id']!r} is not collapsed behind a button")
    if facts["solutions"] and visit.solution_opens is False:
        report("exercises", "clicking a solution's title does not show it")
    return problems
