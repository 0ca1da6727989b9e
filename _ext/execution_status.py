"""The book's execution-status page, filled in by the build from the notebooks it executed.

``{execution-status}`` (a directive, used by ``book/execution_status.md``) becomes a table with
one row per notebook in the table of contents, in reading order: its run time in this build,
and the JAX, Flax and Optax versions and the devices it ran on. Nothing in the table is typed
by hand:

- run times and execution times come from myst-nb, which records them as it executes each
  notebook (the same data as its ``{nb-exec-table}`` directive), or, when the build renders
  notebooks executed before it (the tests build the site from the notebooks nbmake executed,
  with execution off), from the record that executor left in each notebook's metadata
  (``book_run``: the same keys);
- versions and devices come from the environment banner each notebook prints under its
  imports (``helpers.environment_banner()``), read from the executed outputs, so they are what
  the notebook itself saw.

A notebook that was executed but printed no banner is reported as a build warning.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.environment.collectors import EnvironmentCollector
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

# 'JAX 0.12.0.1 | flax 0.12.12 | optax 0.2.8 | backend: cpu | 1 device: cpu | 2 CPU cores',
# printed or shown as a string's repr.
_BANNER = re.compile(
    r"JAX (?P<jax>\S+)(?P<packages>(?: \| [^|\n]+?)*)(?: \| |\n)backend: (?P<backend>[^|\n]+?) \| "
    r"(?P<devices>\d+ devices?: [^|\n'\"]+?)(?: \| (?P<cores>\d+) CPU cores?)?(?=$|[\n'\"])",
    re.MULTILINE,
)


def parse_banner(text: str) -> dict[str, Any] | None:
    """The versions and devices in the first environment banner in ``text``, or None.

    The format is ``helpers.environment_banner``'s; ``tests/test_env.py`` checks the round trip.
    """
    match = _BANNER.search(text)
    if match is None:
        return None
    packages = {}
    for part in match["packages"].split(" | ")[1:]:
        part = part.strip()
        if part.endswith(" not installed"):
            packages[part.removesuffix(" not installed")] = "not installed"
        else:
            name, _, version = part.rpartition(" ")
            packages[name or version] = version if name else ""
    return {
        "jax": match["jax"],
        "packages": packages,
        "backend": match["backend"].strip(),
        "devices": match["devices"].strip(),
        "cores": int(match["cores"]) if match["cores"] else None,
    }

_NAMED_COLUMNS = ("flax", "optax")
_MISSING = "—"


class ExecutionStatusNode(nodes.General, nodes.Element):
    """Where the table goes; replaced once every notebook has been executed."""


# The notebook metadata key under which the tests' executor records a run (conftest.py).
RUN_RECORD = "book_run"


def _exec_data(env: BuildEnvironment, docname: str) -> dict[str, Any] | None:
    """How ``docname`` was executed: what myst-nb recorded if this build executed it, else the
    record of the run whose outputs the notebook carries; None for a page never executed."""
    metadata = getattr(env, "nb_metadata", None) or {}
    data = (metadata.get(docname) or {}).get("exec_data")
    if data is not None:
        return data
    path = Path(env.doc2path(docname))
    if path.suffix != ".ipynb" or not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8")).get("metadata", {}).get(RUN_RECORD)


class BannerCollector(EnvironmentCollector):
    """Reads each executed notebook's environment banner when the notebook is read."""

    def clear_doc(self, app: Sphinx, env: BuildEnvironment, docname: str) -> None:
        _banners(env).pop(docname, None)

    def merge_other(
        self, app: Sphinx, env: BuildEnvironment, docnames: set[str], other: BuildEnvironment
    ) -> None:
        theirs = _banners(other)
        for docname in docnames:
            if docname in theirs:
                _banners(env)[docname] = theirs[docname]

    def process_doc(self, app: Sphinx, doctree: nodes.document) -> None:
        env = app.env
        if _exec_data(env, env.docname) is None:
            return  # not a notebook this build executed
        banner = None
        for block in doctree.findall(nodes.literal_block):
            banner = parse_banner(block.astext())
            if banner is not None:
                break
        _banners(env)[env.docname] = banner


def _banners(env: BuildEnvironment) -> dict[str, dict[str, Any] | None]:
    if not hasattr(env, "execution_status_banners"):
        env.execution_status_banners = {}
    return env.execution_status_banners


def _pages_with_table(env: BuildEnvironment) -> set[str]:
    if not hasattr(env, "execution_status_pages"):
        env.execution_status_pages = set()
    return env.execution_status_pages


class ExecutionStatusDirective(SphinxDirective):
    """``{execution-status}``: the table of executed notebooks (no arguments, no content)."""

    def run(self) -> list[nodes.Node]:
        _pages_with_table(self.env).add(self.env.docname)
        return [ExecutionStatusNode()]


def _purge_page(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    _pages_with_table(env).discard(docname)


def _merge_pages(
    app: Sphinx, env: BuildEnvironment, docnames: set[str], other: BuildEnvironment
) -> None:
    _pages_with_table(env).update(_pages_with_table(other) & docnames)


def _rewrite_tables(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """Rewrite the pages with a table whenever a notebook was read again in this build."""
    return sorted(_pages_with_table(env))


def _reading_order(env: BuildEnvironment) -> list[str]:
    """Every document reachable from the root document's toctree, in reading order."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(docname: str) -> None:
        if docname in seen:
            return
        seen.add(docname)
        order.append(docname)
        for child in env.toctree_includes.get(docname, []):
            visit(child)

    visit(env.config.root_doc)
    return order


def _is_notebook(env: BuildEnvironment, docname: str) -> bool:
    return _exec_data(env, docname) is not None or str(env.doc2path(docname)).endswith(".ipynb")


def _devices(described: str, backend: str, cores: int | None = None) -> str:
    """The banner's devices, shorter: '8 devices: 8 × cpu' -> '8 × cpu', '1 device: cpu' ->
    '1 × cpu', '1 device: NVIDIA H100 80GB HBM3' -> '1 × NVIDIA H100 80GB HBM3 (gpu)'; with
    the CPU cores where the banner names them: '1 × cpu; 2 CPU cores'."""
    count, _, kinds = described.partition(": ")
    if "×" not in kinds and count.split()[0].isdigit():
        kinds = f"{count.split()[0]} × {kinds}"
    shown = kinds if backend in kinds else f"{kinds} ({backend})"
    return shown if cores is None else f"{shown}; {cores} CPU core{'s' * (cores != 1)}"


def _cell(content: str | nodes.Node) -> nodes.entry:
    paragraph = nodes.paragraph()
    paragraph += nodes.Text(content) if isinstance(content, str) else content
    return nodes.entry("", paragraph)


def _table(headers: list[str], rows: list[list[str | nodes.Node]]) -> nodes.table:
    table = nodes.table(classes=["colwidths-auto", "execution-status"])
    group = nodes.tgroup(cols=len(headers))
    table += group
    for _ in headers:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    head += nodes.row("", *(_cell(h) for h in headers))
    body = nodes.tbody()
    group += body
    for row in rows:
        body += nodes.row("", *(_cell(c) for c in row))
    return table


# The table's words in each language of the book (Sphinx's ``language``; English otherwise).
_WORDS = {
    "en": {
        "headers": ["Page", "Run time", "JAX", "Flax", "Optax", "Also", "Devices"],
        "not executed": "not executed", "failed": "failed",
        "summary": "{count} notebooks, executed from a clean kernel for this build, the last "
                   "finishing at {when}: {total:.0f} s of run time in all.",
        "none": "This build executed no notebooks.",
    },
    "zh_CN": {
        "headers": ["页面", "运行时间", "JAX", "Flax", "Optax", "其他", "设备"],
        "not executed": "未执行", "failed": "失败",
        "summary": "为本次构建从干净的内核执行了 {count} 个笔记本，最后一个完成于 {when}，"
                   "运行时间共计 {total:.0f} 秒。",
        "none": "本次构建没有执行任何笔记本。",
    },
}


def build_status(env: BuildEnvironment, fromdocname: str) -> list[nodes.Node]:
    """The summary paragraph and the table for the page ``fromdocname``."""
    words = _WORDS.get(env.config.language or "en", _WORDS["en"])
    headers = words["headers"]
    rows: list[list[str | nodes.Node]] = []
    total, executed_at = 0.0, []
    for docname in _reading_order(env):
        if not _is_notebook(env, docname):
            continue
        number = env.toc_secnumbers.get(docname, {}).get("")
        title = env.titles[docname].astext() if docname in env.titles else docname
        label = f"{'.'.join(map(str, number))}. {title}" if number else title
        link = pending_xref("", nodes.inline("", label), refdoc=fromdocname,
                            reftarget="/" + docname, reftype="doc", refdomain="std",
                            refexplicit=True, refwarn=True)
        data = _exec_data(env, docname)
        banner = _banners(env).get(docname)
        if data is None:
            rows.append([link, words["not executed"], *[_MISSING] * 5])
            continue
        runtime = data.get("runtime")
        if runtime is not None:
            total += runtime
        if data.get("mtime"):
            executed_at.append(data["mtime"])
        status = f"{runtime:.1f} s" if runtime is not None else _MISSING
        if not data.get("succeeded", True):
            status += f" ({words['failed']}: {data.get('error') or 'error'})"
        if banner is None:
            logger.warning(
                "%s was executed but printed no environment banner "
                "(helpers.environment_banner()), so its versions and devices are unknown",
                docname, location=docname, type="execution_status",
            )
            rows.append([link, status, *[_MISSING] * 5])
            continue
        packages = dict(banner["packages"])
        named = [packages.pop(name, _MISSING) or _MISSING for name in _NAMED_COLUMNS]
        others = ", ".join(f"{name} {version}".strip() for name, version in packages.items())
        rows.append([link, status, banner["jax"], *named, others or _MISSING,
                     _devices(banner["devices"], banner["backend"], banner["cores"])])
    summary = nodes.paragraph()
    if executed_at:
        when = datetime.fromtimestamp(max(executed_at), UTC).strftime("%Y-%m-%d %H:%M UTC")
        summary += nodes.Text(words["summary"].format(
            count=len(executed_at), when=when, total=total))
    else:
        summary += nodes.Text(words["none"])
    return [summary, _table(headers, rows)]


class ExecutionStatusTransform(SphinxPostTransform):
    """Replaces each placeholder with the table, before cross-references are resolved."""

    default_priority = 8  # ReferencesResolver is 10: the links in the table get resolved

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(ExecutionStatusNode)):
            node.replace_self(build_status(self.env, self.env.docname))


# The runs in the table, by page, written with the website (``_static``): the Chinese edition's
# build (tools/zh_site.py) shows the same runs, since it renders the same executed notebooks.
RECORDS_FILE = "execution-status.json"


def _write_records(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    records = {}
    for docname in _reading_order(app.env):
        data = _exec_data(app.env, docname)
        if data is not None:
            records[docname] = {key: data.get(key)
                                for key in ("runtime", "mtime", "succeeded", "error")}
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    (static / RECORDS_FILE).write_text(json.dumps(records, indent=1), encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(ExecutionStatusNode)
    app.connect("build-finished", _write_records)
    app.add_directive("execution-status", ExecutionStatusDirective)
    app.add_env_collector(BannerCollector)
    app.connect("env-purge-doc", _purge_page)
    app.connect("env-merge-info", _merge_pages)
    app.connect("env-updated", _rewrite_tables)
    app.add_post_transform(ExecutionStatusTransform)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
