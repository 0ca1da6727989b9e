"""The Chinese edition (``zh/``), kept in step with the English book (``book/``).

Every English page has a Chinese page of the same name in ``zh/``. The Chinese page is made of
*units*, each the translation of one English unit: a notebook's units are its cells; a
markdown page's units are its sections (from one heading to the next) and, in the glossary,
its entries. Each Chinese unit records which English unit it translates and a digest of that
unit's English text as it was translated:

- in a notebook, in the cell's metadata: ``"translation": {"cell": ID, "digest": DIGEST}``;
- in a markdown page, on a line of its own before the unit: ``% translates: ID DIGEST`` (a
  MyST comment), or ``.. translates: ID DIGEST`` inside a glossary (a glossary comment).

Code cells are the English code, token for token (comments may be translated), with the same
tags; the website shows the outputs of the English execution under them.

``python -m tools.translation check`` lists what is out of step (exit status 1 if anything):
English units changed since their translation, units added or removed on one side, code that
differs, and prose whose markup (glossary and link targets, mathematics, inline code,
directives, headings) is not the English's. ``sync`` makes the structural repairs (new pages
and cells, English code copied, removed cells dropped) and leaves the prose to translate.
``export PAGE`` writes the units to translate as text blocks (``--stale``: only those out of
step) and ``import PAGE FILE`` puts translated blocks back, recording what they translate.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import hashlib
import io
import json
import re
import sys
import tokenize
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from tools.policy import PAGE_WIDTH

__all__ = [
    "RECORD",
    "Unit",
    "check_page",
    "code_tokens",
    "digest",
    "display_width",
    "english_pages",
    "export_units",
    "import_units",
    "main",
    "markdown_units",
    "markup_problems",
    "page_problems",
    "sync_page",
    "translated_units",
    "zh_page",
]

RECORD = "translation"  # the notebook cell metadata key
_MARKER = re.compile(r"^(?:%|\.\.) translates: (?P<id>\S+) (?P<digest>[0-9a-f]{12})$")
_HEADING = re.compile(r"^#{1,6} ")
_LABEL = re.compile(r"^\(.+\)=$")
_FENCE = re.compile(r"^(`{3,}|~{3,})")
_BLOCK = re.compile(r"^===== (?P<id>\S+) (?P<kind>markdown|code)$")


@dataclass
class Unit:
    """One translatable piece of a page: a cell, a section or a glossary entry."""

    id: str
    kind: str  # "markdown" or "code"
    source: str
    recorded: tuple[str, str] | None = None  # (English id, digest) it translates, if recorded
    in_glossary: bool = False


def digest(text: str) -> str:
    """The digest a translation records of its English text (12 hex digits of SHA-256)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def english_pages(root: Path) -> list[Path]:
    """The English pages that have a Chinese counterpart: every notebook and markdown page
    in ``book/``."""
    book = Path(root) / "book"
    return sorted(p for p in book.iterdir() if p.suffix in (".ipynb", ".md"))


def zh_page(root: Path, english: Path) -> Path:
    """The Chinese page of an English page: same name, in ``zh/``."""
    return Path(root) / "zh" / Path(english).name


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def markdown_units(text: str) -> list[Unit]:
    """A markdown page cut into units: the text before the first heading (``top``), each
    section from a heading (with the ``(label)=`` line just above it) to the next, and each
    entry of a ``{glossary}`` block. A unit's id comes from its heading or term."""
    lines = text.splitlines(keepends=True)
    starts: list[tuple[int, str, bool]] = [(0, "top", False)]
    fence: str | None = None
    glossary = False
    for i, line in enumerate(lines):
        stripped = line.rstrip("\n")
        if fence is not None:
            if stripped.startswith(fence) and stripped.strip() == fence:
                fence, glossary = None, False
            elif glossary and stripped and not stripped[0].isspace() and not _MARKER.match(
                    stripped) and not stripped.startswith(".. "):
                # a term line; the terms of one entry follow each other directly
                previous = lines[i - 1].rstrip("\n")
                if previous.strip() and not _FENCE.match(previous) and not _MARKER.match(
                        previous):
                    continue
                starts.append((i, "term-" + _slug(stripped), True))
            continue
        if match := _FENCE.match(stripped):
            fence = match.group(1)
            glossary = stripped[len(fence):].strip().startswith("{glossary}")
            continue
        if _HEADING.match(stripped):
            start = i
            if i > 0 and _LABEL.match(lines[i - 1].strip()):
                start = i - 1
            starts.append((start, _slug(stripped.lstrip("#")), False))
    units: list[Unit] = []
    seen: dict[str, int] = {}
    for n, (start, name, in_glossary) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        if start == 0 and name != "top" and units and units[0].id == "top":
            units.pop()  # the page starts with a heading: no text before it
        seen[name] = seen.get(name, 0) + 1
        unit_id = name if seen[name] == 1 else f"{name}-{seen[name]}"
        units.append(Unit(unit_id, "markdown", "".join(lines[start:end]), None, in_glossary))
    if units and units[0].id == "top" and not units[0].source.strip():
        units.pop(0)
    return units


def _notebook(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _cell_units(notebook: dict) -> list[Unit]:
    units = []
    for cell in notebook["cells"]:
        record = cell.get("metadata", {}).get(RECORD)
        recorded = (record["cell"], record["digest"]) if record else None
        units.append(Unit(cell["id"], cell["cell_type"], "".join(cell["source"]), recorded))
    return units


def _english_units(path: Path) -> list[Unit]:
    if path.suffix == ".ipynb":
        return _cell_units(_notebook(path))
    return markdown_units(path.read_text(encoding="utf-8"))


def translated_units(path: Path) -> list[Unit]:
    """The units of a Chinese page, each with the English unit and digest it records."""
    if path.suffix == ".ipynb":
        return _cell_units(_notebook(path))
    units: list[Unit] = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if match := _MARKER.match(line.rstrip("\n")):
            units.append(Unit(match["id"], "markdown", "", (match["id"], match["digest"]),
                              line.startswith("..")))
        elif units:
            units[-1].source += line
        elif line.strip():
            units.append(Unit("(before the first record)", "markdown", line, None))
    return units


def code_tokens(source: str) -> list[tuple[int, str]]:
    """A code cell's tokens without comments and line breaks: what must match token for token.

    IPython's magics (``%%writefile`` on the first line, ``%`` and ``!`` lines) are compared as
    text; code that does not tokenize as Python, line by line without ``#`` comment lines."""
    lines = source.splitlines()
    header: list[tuple[int, str]] = []
    if lines and lines[0].startswith("%%"):  # a cell magic: its body is usually Python
        header, lines = [(-1, lines[0].rstrip())], lines[1:]
    magic = [(-1, line.strip()) for line in lines if line.lstrip().startswith(("%", "!"))]
    python = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
    try:
        tokens = [
            (t.type, t.string)
            for t in tokenize.generate_tokens(io.StringIO(python + "\n").readline)
            if t.type not in skip
        ]
    except (tokenize.TokenError, SyntaxError):
        tokens = [(-2, line) for line in _code_lines(python)]
    return header + magic + tokens


def _code_lines(text: str) -> list[str]:
    """A text's lines without ``#`` comments and blank lines (for code that is not Python)."""
    kept = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        if line.strip():
            kept.append(line.rstrip())
    return kept


def _tags(cell: dict) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def page_problems(english: Path, chinese: Path) -> list[str]:
    """What is out of step between an English page and its Chinese page, one line each."""
    if not chinese.exists():
        return [f"{chinese.name}: no Chinese page (python -m tools.translation sync)"]
    source = _english_units(english)
    target = translated_units(chinese)
    by_id = {u.id: u for u in source}
    problems = []
    for unit in target:
        if unit.recorded is None:
            problems.append(f"{chinese.name}: unit {unit.id} records no English unit: "
                            "not translated yet")
    recorded_ids = [u.recorded[0] if u.recorded else None for u in target]
    matcher = difflib.SequenceMatcher(a=[u.id for u in source], b=recorded_ids, autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag in ("delete", "replace"):
            for unit in source[a0:a1]:
                problems.append(f"{chinese.name}: English unit {unit.id} ({unit.kind}) was "
                                "added and has no translation")
        if tag in ("insert", "replace"):
            for unit in target[b0:b1]:
                if unit.recorded is None:
                    continue
                where = ("is no longer in the English page" if unit.recorded[0] not in by_id
                         else "is out of order")
                problems.append(f"{chinese.name}: unit {unit.id} translates English unit "
                                f"{unit.recorded[0]}, which {where}")
    english_cells = {c["id"]: c for c in _notebook(english)["cells"]} if (
        english.suffix == ".ipynb") else {}
    chinese_cells = {c["id"]: c for c in _notebook(chinese)["cells"]} if (
        chinese.suffix == ".ipynb") else {}
    for unit in target:
        if unit.recorded is None or unit.recorded[0] not in by_id:
            continue
        original = by_id[unit.recorded[0]]
        if unit.recorded[1] != digest(original.source):
            problems.append(f"{chinese.name}: English unit {original.id} ({original.kind}) "
                            "changed after it was translated")
        if original.kind != unit.kind:
            problems.append(f"{chinese.name}: unit {unit.id} is {unit.kind}, English unit "
                            f"{original.id} is {original.kind}")
        elif original.kind == "code" and code_tokens(unit.source) != code_tokens(
                original.source):
            problems.append(f"{chinese.name}: code cell {unit.id} differs from English cell "
                            f"{original.id} (only comments may differ)")
        elif original.kind == "code":
            english_lines = set(original.source.splitlines())
            wide = [line for line in unit.source.splitlines()
                    if display_width(line) > PAGE_WIDTH and line not in english_lines]
            if wide:
                problems.append(f"{chinese.name}: code cell {unit.id} has lines wider than "
                                f"{PAGE_WIDTH} columns (a Chinese character takes two): "
                                f"{wide[0]!r}")
        if english_cells and chinese_cells and _tags(english_cells[original.id]) != _tags(
                chinese_cells[unit.id]):
            problems.append(f"{chinese.name}: cell {unit.id} has tags "
                            f"{_tags(chinese_cells[unit.id])}, English cell {original.id} has "
                            f"{_tags(english_cells[original.id])}")
    return problems


_TERM_ROLE = re.compile(r"\{term\}`([^`]*)`")


def display_width(line: str) -> int:
    """Columns a line takes in a monospaced font: two for each wide (CJK) character."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


def _is_chinese(character: str) -> bool:
    return bool(character) and ("\u4e00" <= character <= "\u9fff" or "\u3000" <= character
                                <= "\u303f" or "\uff00" <= character <= "\uffef")


def _markup(text: str) -> dict:
    """What a translation must keep of a markdown unit: glossary targets, link targets,
    mathematics, directives, heading levels, inline code; and emphasis markers that did not
    render (CommonMark opens no emphasis between a Chinese character and ``{``)."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    def target(role: str) -> str:
        match = re.search(r"<([^>]+)>\s*$", role)
        return " ".join((match.group(1) if match else role).split())

    found: dict = {"glossary references": sorted(map(target, _TERM_ROLE.findall(text))),
                   "links": [], "mathematics": [], "directives": [], "headings": [],
                   "code": set(), "unrendered *": 0, "broken lines": 0}
    parser = MarkdownIt("commonmark").enable("table").use(dollarmath_plugin)
    # each role's text replaced by one symbol: what is around it still parses as written
    for token in parser.parse(_TERM_ROLE.sub("{term}`~`", text)):
        if token.type == "fence":
            found["directives"].append(token.info.split()[0] if token.info.strip() else "")
        elif token.type == "heading_open":
            found["headings"].append(token.tag)
        elif token.type == "math_block":
            found["mathematics"].append(" ".join(token.content.split()))
        children = token.children or []
        for i, child in enumerate(children):
            before = children[i - 1] if i > 0 else None
            after = children[i + 1] if i + 1 < len(children) else None
            if (child.type == "softbreak" and before is not None and after is not None
                    and _is_chinese(before.content[-1:]) and _is_chinese(after.content[:1])):
                found["broken lines"] += 1
            if child.type == "link_open":
                found["links"].append(child.attrs.get("href"))
            elif child.type == "math_inline":
                found["mathematics"].append(" ".join(child.content.split()))
            elif child.type == "code_inline" and child.content != "~":
                found["code"].add(" ".join(child.content.split()))
            elif child.type == "text" and "*" in child.content:
                found["unrendered *"] += 1
    found["links"].sort()
    return found


def markup_problems(english: Path, chinese: Path) -> list[str]:
    """Where a translated unit lost or changed the English unit's markup: glossary targets,
    links, directives and heading levels must be the same; mathematics and inline code may be
    repeated but not dropped or changed; and no emphasis may be left unrendered."""
    source = {u.id: u for u in _english_units(english)}
    problems = []
    for unit in translated_units(chinese):
        if unit.kind != "markdown" or unit.recorded is None or unit.recorded[0] not in source:
            continue
        theirs, ours = _markup(source[unit.recorded[0]].source), _markup(unit.source)
        where = f"{chinese.name}: unit {unit.id}"
        for key in ("glossary references", "links", "directives", "headings"):
            if theirs[key] != ours[key]:
                problems.append(f"{where}: {key} {ours[key]} differ from the English "
                                f"{theirs[key]}")
        math_en, math_zh = theirs["mathematics"], ours["mathematics"]
        if set(math_zh) != set(math_en) or len(math_zh) < len(math_en):
            problems.append(f"{where}: mathematics {sorted(set(math_zh) ^ set(math_en))} "
                            "differs from the English")
        if dropped := theirs["code"] - ours["code"]:
            problems.append(f"{where}: inline code {sorted(dropped)} is missing")
        if ours["broken lines"]:
            problems.append(f"{where}: a line break inside Chinese text shows as a space "
                            "(write each paragraph on one line)")
        if ours["unrendered *"] > theirs["unrendered *"]:
            problems.append(f"{where}: an emphasis marker * shows as text (put a space "
                            "between it and the Chinese character next to it)")
    return problems


def check_page(root: Path, english: Path) -> list[str]:
    """``page_problems`` and ``markup_problems`` for an English page and its Chinese page under
    ``root``."""
    chinese = zh_page(root, english)
    problems = page_problems(english, chinese)
    return problems + markup_problems(english, chinese) if chinese.exists() else problems


def _record(unit: Unit) -> dict[str, str]:
    return {"cell": unit.id, "digest": digest(unit.source)}


def _write_notebook(path: Path, notebook: dict) -> None:
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _marker(unit_id: str, digest_value: str, in_glossary: bool) -> str:
    return f"{'..' if in_glossary else '%'} translates: {unit_id} {digest_value}\n"


def sync_page(english: Path, chinese: Path) -> list[str]:
    """The structural repairs, without translating anything: a missing page is created from
    the English (units unrecorded, so listed as not translated); in a notebook, English cells
    added are inserted, cells whose English cell is gone are dropped, and code cells take the
    English code (and its record) when their tokens differ or the English changed. Returns
    what it did."""
    done = []
    if english.suffix == ".md":
        if not chinese.exists():
            chinese.parent.mkdir(parents=True, exist_ok=True)
            chinese.write_text(english.read_text(encoding="utf-8"), encoding="utf-8")
            done.append(f"created {chinese} (English text, to translate)")
        return done
    source = _notebook(english)
    if not chinese.exists():
        chinese.parent.mkdir(parents=True, exist_ok=True)
        notebook = copy.deepcopy(source)
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                cell["metadata"][RECORD] = _record(Unit(cell["id"], "code",
                                                        "".join(cell["source"])))
        _write_notebook(chinese, notebook)
        return [f"created {chinese} (code cells copied, markdown to translate)"]
    notebook = _notebook(chinese)
    by_record = {c["metadata"][RECORD]["cell"]: c for c in notebook["cells"]
                 if c.get("metadata", {}).get(RECORD)}
    english_ids = {c["id"] for c in source["cells"]}
    cells = []
    for cell in source["cells"]:
        unit = Unit(cell["id"], cell["cell_type"], "".join(cell["source"]))
        mine = by_record.get(cell["id"])
        if mine is None:
            mine = copy.deepcopy(cell)
            if cell["cell_type"] == "code":
                mine["metadata"][RECORD] = _record(unit)
            done.append(f"{chinese.name}: inserted English cell {cell['id']}")
        elif cell["cell_type"] == "code" and (
                mine["metadata"][RECORD]["digest"] != digest(unit.source)
                or code_tokens("".join(mine["source"])) != code_tokens(unit.source)
                or _tags(mine) != _tags(cell)):
            mine = copy.deepcopy(cell)
            mine["metadata"][RECORD] = _record(unit)
            done.append(f"{chinese.name}: code cell {cell['id']} copied from English")
        cells.append(mine)
    dropped = [c["id"] for c in notebook["cells"]
               if c.get("metadata", {}).get(RECORD, {}).get("cell") not in english_ids]
    done += [f"{chinese.name}: dropped cell {i} (its English cell is gone)" for i in dropped]
    notebook["cells"] = cells
    _write_notebook(chinese, notebook)
    return done


def _has_comment(source: str) -> bool:
    try:
        return any(t.type == tokenize.COMMENT
                   for t in tokenize.generate_tokens(io.StringIO(source + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return any(line.lstrip().startswith("#") or " # " in line for line in source.splitlines())


def export_units(english: Path, chinese: Path, stale_only: bool = False,
                 comments: bool = False) -> str:
    """The units of a page to translate, as text blocks headed ``===== ID KIND``: the English
    text of every markdown unit (``stale_only``: only those whose translation is missing or
    out of date). Translate the text under each header and give the file to ``import``.
    ``comments``: instead, the code cells with comments (but the set-up cell, which ``make
    tidy`` writes), whose comments may be translated."""
    current = {}
    if chinese.exists():
        current = {u.recorded[0]: u for u in translated_units(chinese) if u.recorded}
    blocks = []
    for unit in _english_units(english):
        if comments:
            if (unit.kind != "code" or unit.source.startswith("# @title")
                    or not _has_comment(unit.source)):
                continue
        elif unit.kind != "markdown":
            continue
        mine = current.get(unit.id)
        if stale_only and mine is not None and mine.recorded[1] == digest(unit.source):
            continue
        blocks.append(f"===== {unit.id} {unit.kind}\n{unit.source.rstrip()}\n")
    return "\n".join(blocks)


def _blocks(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    name = None
    for line in text.splitlines(keepends=True):
        if match := _BLOCK.match(line.rstrip("\n")):
            name = match["id"]
            if name in found:
                raise ValueError(f"unit {name} appears twice")
            found[name] = ""
        elif name is not None:
            found[name] += line
        elif line.strip():
            raise ValueError("text before the first '===== ID KIND' header")
    # a unit may start with blank lines (a code cell); the file's layout adds trailing ones
    return {k: v.rstrip("\n") for k, v in found.items()}


def import_units(english: Path, chinese: Path, text: str) -> list[str]:
    """Put translated blocks (``export``'s format) into the Chinese page, each recorded as the
    translation of its English unit as it is now. A code block replaces a code cell whose
    comments it translates. Returns the ids imported."""
    blocks = _blocks(text)
    units = {u.id: u for u in _english_units(english)}
    unknown = sorted(set(blocks) - set(units))
    if unknown:
        raise ValueError(f"{english.name} has no unit {', '.join(unknown)}")
    if english.suffix == ".ipynb":
        if not chinese.exists():
            sync_page(english, chinese)
        notebook = _notebook(chinese)
        for cell in notebook["cells"]:
            record = cell.get("metadata", {}).get(RECORD)
            original = cell["id"] if record is None else record["cell"]
            if original in blocks:
                unit = units[original]
                if unit.kind == "code" and code_tokens(blocks[original]) != code_tokens(
                        unit.source):
                    raise ValueError(f"code block {original} changes more than comments")
                cell["source"] = blocks[original].splitlines(keepends=True)
                cell["metadata"][RECORD] = _record(unit)
        _write_notebook(chinese, notebook)
        return sorted(blocks)
    # a markdown page: rebuilt from its units, translated ones from the blocks
    existing = {}
    if chinese.exists():
        existing = {u.recorded[0]: u for u in translated_units(chinese) if u.recorded}
    parts = []
    for unit in units.values():
        if unit.id in blocks:
            parts.append(_marker(unit.id, digest(unit.source), unit.in_glossary)
                         + blocks[unit.id] + "\n\n")
        elif unit.id in existing:
            mine = existing[unit.id]
            parts.append(_marker(unit.id, mine.recorded[1], unit.in_glossary)
                         + mine.source.rstrip("\n") + "\n\n")
        else:
            parts.append(unit.source.rstrip("\n") + "\n\n")
    chinese.write_text("".join(parts).rstrip("\n") + "\n", encoding="utf-8")
    return sorted(blocks)


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module's docstring); the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=".", help="the repository root")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("check", help="list what is out of step; exit 1 if anything is")
    commands.add_parser("sync", help="create missing pages and cells, copy changed code")
    export = commands.add_parser("export", help="the units of a page to translate")
    export.add_argument("page", help="a page's file name, e.g. 01_why_jax.ipynb")
    export.add_argument("--stale", action="store_true", help="only units out of step")
    export.add_argument("--comments", action="store_true",
                        help="the code cells with comments instead, to translate those")
    imported = commands.add_parser("import", help="put translated units into a Chinese page")
    imported.add_argument("page")
    imported.add_argument("file", help="translated blocks, in export's format")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if args.command == "check":
        problems = [p for page in english_pages(root) for p in check_page(root, page)]
        for problem in problems:
            print(problem)
        if problems:
            print(f"{len(problems)} translation problems: see CONTRIBUTING.md, "
                  "'Changing a page in both languages'.")
        return 1 if problems else 0
    if args.command == "sync":
        for page in english_pages(root):
            for line in sync_page(page, zh_page(root, page)):
                print(line)
        return 0
    english = root / "book" / Path(args.page).name
    if not english.exists():
        parser.error(f"no English page {english}")
    if args.command == "export":
        sys.stdout.write(export_units(english, zh_page(root, english), args.stale,
                                      args.comments))
        return 0
    text = Path(args.file).read_text(encoding="utf-8")
    for unit in import_units(english, zh_page(root, english), text):
        print(f"imported {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
