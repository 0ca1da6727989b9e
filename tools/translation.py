"""The Chinese edition (``zh/``), kept in step with the English book (``book/``).

Every English page has a Chinese page of the same name in ``zh/``. The Chinese page is made of
*units*, each the translation of one English unit: a notebook's units are its cells; a
markdown page's units are its sections (from one heading to the next) and, in the glossary,
its entries. Each Chinese unit records which English unit it translates and a digest of that
unit's English text as it was translated:

- in a notebook, in the cell's metadata: ``"translation": {"cell": ID, "digest": DIGEST}``;
- in a markdown page, on a line of its own before the unit: ``% translates: ID DIGEST`` (a
  MyST comment), or ``.. translates: ID DIGEST`` inside a glossary (a glossary comment); a
  unit still in English, put there by ``sync`` or ``import``, is headed
  ``% untranslated: ID`` (``.. untranslated: ID``) instead.

Code cells are the English code, token for token (comments may be translated), with the same
tags; the website shows the outputs of the English execution under them.

``python -m tools.translation check`` lists what is out of step (exit status 1 if anything):
English units changed since their translation, units added or removed on one side, code that
differs, Chinese pages whose English page is gone, and prose whose markup (role and link
targets, labels, mathematics, inline code, directives, code blocks, headings) is not the
English's. ``sync`` makes the structural repairs (new pages, cells and sections, English code
and cell tags copied, removed units dropped, the English order) and leaves the prose to
translate. ``export PAGE`` writes the units to translate as text blocks (``--stale``: only
those out of step; ``--comments``: the code cells whose comments to translate) and
``import PAGE FILE`` puts translated blocks back, recording what they translate.
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

from tools.notebooks import read_config
from tools.policy import PAGE_WIDTH

__all__ = [
    "RECORD",
    "Unit",
    "check_page",
    "chinese_only_pages",
    "code_tokens",
    "digest",
    "display_width",
    "is_current",
    "english_pages",
    "export_units",
    "import_units",
    "main",
    "markdown_units",
    "markup_problems",
    "page_problems",
    "pages_without_english",
    "sync_page",
    "translated_units",
    "zh_page",
]

RECORD = "translation"  # the notebook cell metadata key
_MARKER = re.compile(r"^(?:%|\.\.) translates: (?P<id>\S+) (?P<digest>[0-9a-f]{12})$")
_UNTRANSLATED = re.compile(r"^(?:%|\.\.) untranslated: (?P<id>\S+)$")
_HEADING = re.compile(r"^#{1,6} ")
_LABEL = re.compile(r"^\(.+\)=$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BLOCK = re.compile(r"^===== (?P<id>\S+) (?P<kind>markdown|code)$")
_BEFORE_RECORDS = "(before the first record)"  # the id of a markdown page's unrecorded opening


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


def is_current(recorded: str | None, text: str) -> bool:
    """Whether a digest recorded by a translation is that of ``text``, the English unit as it
    is now, the line breaks that end it aside (a page's last section gains a blank line when
    a section is added after it, without changing). A unit records its text with at most two
    (a cell none, a section of a markdown page one or two)."""
    body = text.rstrip("\n")
    return recorded in {digest(body + end) for end in ("", "\n", "\n\n")}


def english_pages(root: Path) -> list[Path]:
    """The English pages that have a Chinese counterpart: every notebook and markdown page
    in ``book/``."""
    book = Path(root) / "book"
    return sorted(p for p in book.iterdir() if p.suffix in (".ipynb", ".md"))


def chinese_only_pages(root: Path) -> set[str]:
    """The names of the Chinese pages that translate no English page (the term list): the
    ``only_here`` of ``zh/_config.yml``'s ``language_switch``, which gives them no link."""
    config = read_config(Path(root) / "zh" / "_config.yml")
    switch = (config.get("sphinx") or {}).get("config", {}).get("language_switch") or {}
    return set(switch.get("only_here", []))


def pages_without_english(root: Path) -> list[str]:
    """A problem for each Chinese page whose English page is gone (renamed or removed)."""
    english = {page.name for page in english_pages(root)}
    only_here = chinese_only_pages(root)
    return [f"{page.name}: a Chinese page without an English page book/{page.name} (git mv it "
            "to the English page's new name, or git rm it)"
            for page in sorted((Path(root) / "zh").iterdir())
            if page.suffix in (".ipynb", ".md") and page.name not in english
            and page.stem not in only_here]


def zh_page(root: Path, english: Path) -> Path:
    """The Chinese page of an English page: same name, in ``zh/``."""
    return Path(root) / "zh" / Path(english).name


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def markdown_units(text: str) -> list[Unit]:
    """A markdown page cut into units: the text before the first heading (``top``), each
    section from a heading (with the ``(label)=`` line just above it) to the next, and each
    entry of a ``{glossary}`` block (its term lines, one after the other, and definition).
    Headings inside fenced blocks are not headings. A unit's id comes from its heading or
    first term; a second unit with the same id gets ``-2`` (then ``-3``, ...)."""
    lines = text.splitlines(keepends=True)
    starts: list[tuple[int, str, bool]] = [(0, "top", False)]
    fence: re.Pattern | None = None  # what closes the open fenced block
    glossary = False
    for i, line in enumerate(lines):
        stripped = line.rstrip("\n")
        if fence is not None:
            if fence.fullmatch(stripped):
                fence, glossary = None, False
            elif glossary and _is_term_line(stripped) and not _is_term_line(
                    lines[i - 1].rstrip("\n")):
                starts.append((i, "term-" + _slug(stripped), True))
            continue
        if match := _FENCE.match(stripped):
            marks = match.group(1)
            fence = re.compile(rf" {{0,3}}{re.escape(marks[0])}{{{len(marks)},}}\s*")
            glossary = stripped[match.end():].strip().startswith("{glossary}")
            continue
        if _HEADING.match(stripped):
            start = i
            if i > 0 and _LABEL.match(lines[i - 1].strip()):
                start = i - 1
            starts.append((start, _slug(stripped.lstrip("#")), False))
    units: list[Unit] = []
    taken: set[str] = set()
    for n, (start, name, in_glossary) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        source = "".join(lines[start:end])
        if name == "top" and not source.strip():
            continue  # the page starts with a heading
        unit_id, count = name, 1
        while unit_id in taken:
            count += 1
            unit_id = f"{name}-{count}"
        taken.add(unit_id)
        units.append(Unit(unit_id, "markdown", source, None, in_glossary))
    return units


def _is_term_line(line: str) -> bool:
    """Whether a line inside a ``{glossary}`` block is a term: not blank, not indented (a
    definition), not a comment (``.. ``) and not the fence."""
    return bool(line.strip()) and not line[0].isspace() and not line.startswith(".. ") and (
        not _FENCE.match(line))


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
    """The units of a Chinese page, each with the English unit and digest it records (none
    for a unit still in English: a cell without a record, a section headed
    ``% untranslated: ID``, or a markdown page's text before its first record)."""
    if path.suffix == ".ipynb":
        return _cell_units(_notebook(path))
    units: list[Unit] = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if match := _MARKER.match(line.rstrip("\n")):
            units.append(Unit(match["id"], "markdown", "", (match["id"], match["digest"]),
                              line.startswith("..")))
        elif match := _UNTRANSLATED.match(line.rstrip("\n")):
            units.append(Unit(match["id"], "markdown", "", None, line.startswith("..")))
        elif units:
            units[-1].source += line
        elif line.strip():
            units.append(Unit(_BEFORE_RECORDS, "markdown", line, None))
    return units


def _translates(unit: Unit) -> str:
    """The English unit a Chinese unit stands for: the one it records, else (a unit still in
    English, copied by ``sync``) the one whose id it has."""
    return unit.recorded[0] if unit.recorded else unit.id


def code_tokens(source: str) -> list[tuple[int, str]]:
    """A code cell's tokens without comments and line breaks: what must match token for token.

    IPython's magic lines (``%%writefile``, ``%time``, ``!ls``) are compared as text, in their
    place; code that does not tokenize as Python, line by line, without ``#`` comment lines
    and blank lines."""
    lines = source.splitlines()
    magics = [(n, line.strip()) for n, line in enumerate(lines)
              if line.lstrip().startswith(("%", "!"))]
    magic_lines = {n for n, _ in magics}
    python = "\n".join("" if n in magic_lines else line for n, line in enumerate(lines))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
    try:
        found = [
            (t.start[0] - 1, t.type, t.string)
            for t in tokenize.generate_tokens(io.StringIO(python + "\n").readline)
            if t.type not in skip
        ]
    except (tokenize.TokenError, SyntaxError):
        found = [(n, -2, line.rstrip()) for n, line in enumerate(python.splitlines())
                 if line.strip() and not line.lstrip().startswith("#")]
    found += [(n, -1, text) for n, text in magics]
    found.sort(key=lambda token: token[0])  # stable: a line's tokens keep their order
    return [(kind, text) for _, kind, text in found]


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
    matcher = difflib.SequenceMatcher(a=[u.id for u in source], b=[_translates(u) for u in target],
                                      autojunk=False)
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
        if not is_current(unit.recorded[1], original.source):
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


_ROLE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<text>[^`]*)`")
_OPTION = re.compile(r"^:(?P<name>[\w-]+):(?P<value>.*)$")
# Directives whose argument is a target (an exercise's label), not a title to translate.
_TARGET_ARGUMENT = {"solution-start", "solution"}
# Directives whose content is code, compared as code cells are.
_CODE_DIRECTIVES = {"code", "code-block", "code-cell", "sourcecode"}
# Options whose value is text to translate.
_TEXT_OPTIONS = {"alt", "caption"}


def display_width(line: str) -> int:
    """Columns a line takes in a monospaced font: two for each wide (CJK) character."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


def _is_chinese(character: str) -> bool:
    return bool(character) and ("\u4e00" <= character <= "\u9fff" or "\u3000" <= character
                                <= "\u303f" or "\uff00" <= character <= "\uffef")


def _markup(text: str) -> dict:
    """What a translation must keep of a markdown unit: the targets of its roles (glossary
    terms, references), link targets, labels, mathematics, directives (with their options,
    and the argument where it is a target), code blocks, heading levels, inline code; and
    how many emphasis markers did not render (CommonMark opens no emphasis between a Chinese
    character and ``{``) and line breaks fall between Chinese characters. The prose inside
    directives (admonitions, exercises) is held to the same."""

    def target(role: str) -> str:
        match = re.search(r"<([^>]+)>\s*$", role)
        return " ".join((match.group(1) if match else role).split())

    roles = _ROLE.findall(text)
    found: dict = {
        "glossary references": sorted(target(t) for r, t in roles if r == "term"),
        "references": sorted(f"{r}:{target(t)}" for r, t in roles if r != "term"),
        "links": [], "labels": [], "mathematics": [], "directives": [], "code blocks": [],
        "headings": [], "code": set(), "unrendered *": 0, "broken lines": 0,
    }
    # each role's text replaced by one symbol: what is around it still parses as written
    _collect_markup(_ROLE.sub(lambda m: f"{{{m['role']}}}`~`", text), found)
    found["links"].sort()
    return found


def _collect_markup(text: str, found: dict) -> None:
    """``_markup``'s findings in ``text``, added to ``found``; directives' content in turn."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.colon_fence import colon_fence_plugin
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    parser = (MarkdownIt("commonmark").enable("table").use(dollarmath_plugin)
              .use(colon_fence_plugin))
    for token in parser.parse(text):
        if token.type in ("fence", "colon_fence"):
            _collect_block(token.info.strip(), token.content, found)
        elif token.type == "heading_open":
            found["headings"].append(token.tag)
        elif token.type == "math_block":
            found["mathematics"].append(" ".join(token.content.split()))
        elif token.type == "inline":
            found["labels"] += re.findall(r"^\((.+)\)=[ \t]*$", token.content, re.MULTILINE)
        children = token.children or []
        for i, child in enumerate(children):
            before = children[i - 1] if i > 0 else None
            after = children[i + 1] if i + 1 < len(children) else None
            if (child.type == "softbreak" and before is not None and after is not None
                    and _is_chinese(before.content[-1:]) and _is_chinese(after.content[:1])):
                found["broken lines"] += 1
            if child.type == "link_open":
                found["links"].append(child.attrs.get("href"))
            elif child.type == "image":
                found["links"].append(child.attrs.get("src"))
            elif child.type == "math_inline":
                found["mathematics"].append(" ".join(child.content.split()))
            elif child.type == "code_inline" and child.content != "~":
                found["code"].add(" ".join(child.content.split()))
            elif child.type == "text":
                found["unrendered *"] += child.content.count("*")


def _collect_block(info: str, content: str, found: dict) -> None:
    """A fenced block's findings: a MyST directive's name, options and (for some) argument,
    then its content; a code block's language and tokens."""
    name, _, argument = info.partition(" ")
    if not (name.startswith("{") and name.endswith("}")):
        found["directives"].append(name)
        found["code blocks"].append(code_tokens(content))
        return
    directive = name[1:-1]
    lines = content.splitlines(keepends=True)
    options = []
    while lines and (match := _OPTION.match(lines[0].rstrip("\n"))):
        if match["name"] not in _TEXT_OPTIONS:
            options.append(f":{match['name']}: {match['value'].strip()}".rstrip())
        lines.pop(0)
    shown = [name, argument.strip()] if directive in _TARGET_ARGUMENT else [name]
    found["directives"].append(" ".join(shown + options).strip())
    if directive in _CODE_DIRECTIVES:
        found["code blocks"].append(code_tokens("".join(lines)))
    elif directive == "math":
        found["mathematics"].append(" ".join("".join(lines).split()))
    else:
        _collect_markup("".join(lines), found)


def _glossary_entry(text: str) -> tuple[list[str], str]:
    """A glossary entry's term lines, and the rest: its definition (and the fence that may
    close the glossary, and what follows it)."""
    lines = text.splitlines(keepends=True)
    n = 0
    while n < len(lines) and _is_term_line(lines[n].rstrip("\n")):
        n += 1
    return [line.strip() for line in lines[:n]], "".join(lines[n:])


def markup_problems(english: Path, chinese: Path) -> list[str]:
    """Where a translated unit lost or changed the English unit's markup: role and link
    targets, labels, directives (and their options), code blocks (but their comments) and
    heading levels must be the same; mathematics and inline code may be repeated but not
    dropped or changed; no emphasis may be left unrendered, no line broken inside Chinese
    text; a glossary entry keeps its English term lines. A unit whose English changed after
    its translation is left for the translation to come (``page_problems`` names it)."""
    source = {u.id: u for u in _english_units(english)}
    problems = []
    for unit in translated_units(chinese):
        if unit.kind != "markdown" or unit.recorded is None or unit.recorded[0] not in source:
            continue
        original = source[unit.recorded[0]]
        if not is_current(unit.recorded[1], original.source):
            continue
        english_text, chinese_text = original.source, unit.source
        where = f"{chinese.name}: unit {unit.id}"
        if original.in_glossary:
            (english_terms, english_text), (terms, chinese_text) = map(
                _glossary_entry, (english_text, chinese_text))
            if missing := [term for term in english_terms if term not in terms]:
                problems.append(f"{where}: glossary terms {missing} are missing (keep each "
                                "English term line, under the Chinese one)")
        theirs, ours = _markup(english_text), _markup(chinese_text)
        for key in ("glossary references", "references", "links", "labels", "directives",
                    "headings"):
            if theirs[key] != ours[key]:
                problems.append(f"{where}: {key} {ours[key]} differ from the English "
                                f"{theirs[key]}")
        if theirs["code blocks"] != ours["code blocks"]:
            problems.append(f"{where}: code blocks differ from the English (only comments may "
                            "differ)")
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


def _marker(unit: Unit, digest_value: str | None) -> str:
    """The line that heads a unit of a Chinese markdown page: what it translates, or (no
    digest) that it is still in English."""
    lead = ".." if unit.in_glossary else "%"
    if digest_value is None:
        return f"{lead} untranslated: {unit.id}\n"
    return f"{lead} translates: {unit.id} {digest_value}\n"


def _markdown_page(english: list[Unit], chinese: list[Unit], blocks: dict[str, str]) -> str:
    """A Chinese markdown page in the English page's order: each unit from ``blocks`` (a new
    translation of the English unit as it is now), else its translation in ``chinese`` (with
    the digest it records), else the English unit, headed as untranslated."""
    translated = {u.recorded[0]: u for u in chinese if u.recorded}
    parts = []
    for unit in english:
        if unit.id in blocks:
            parts.append(_marker(unit, digest(unit.source)) + blocks[unit.id])
        elif unit.id in translated:
            mine = translated[unit.id]
            parts.append(_marker(unit, mine.recorded[1]) + mine.source.rstrip("\n"))
        else:
            parts.append(_marker(unit, None) + unit.source.rstrip("\n"))
    return "\n\n".join(parts) + "\n"


def _sync_markdown(english: Path, chinese: Path) -> list[str]:
    units = _english_units(english)
    if not chinese.exists():
        chinese.parent.mkdir(parents=True, exist_ok=True)
        chinese.write_text(_markdown_page(units, [], {}), encoding="utf-8")
        return [f"created {chinese} (English text, to translate)"]
    old = chinese.read_text(encoding="utf-8")
    mine = translated_units(chinese)
    text = _markdown_page(units, mine, {})
    if text == old:
        return []
    chinese.write_text(text, encoding="utf-8")
    english_ids = {u.id for u in units}
    kept = {_translates(u) for u in mine}
    done = [f"{chinese.name}: inserted English unit {u.id}" for u in units if u.id not in kept]
    done += [f"{chinese.name}: dropped unit {u.id} (its English unit is gone)" for u in mine
             if u.id != _BEFORE_RECORDS and _translates(u) not in english_ids]
    done += [f"{chinese.name}: replaced the text before the first record with the English "
             "units" for u in mine if u.id == _BEFORE_RECORDS]
    return done or [f"{chinese.name}: rewritten in the English order"]


def _cell_translates(cell: dict) -> str:
    """``_translates`` for a notebook cell."""
    record = cell.get("metadata", {}).get(RECORD)
    return record["cell"] if record else cell["id"]


def _set_tags(cell: dict, tags: list[str]) -> None:
    if tags:
        cell.setdefault("metadata", {})["tags"] = list(tags)
    else:
        cell.get("metadata", {}).pop("tags", None)


def sync_page(english: Path, chinese: Path) -> list[str]:
    """The structural repairs, without translating anything. Returns what it did, one line
    each.

    A missing page is created from the English (its prose listed as not translated yet). In a
    notebook, English cells added are inserted (code recorded, prose unrecorded), cells whose
    English cell is gone are dropped, cells follow the English order and take its tags, and a
    cell takes the English cell (and, code, its record) when its kind differs, or, code, when
    its tokens differ or the English changed. A markdown page is rewritten in the English
    order: its translated units kept, units whose English is gone dropped, new English units
    inserted, headed ``% untranslated: ID``."""
    if english.suffix == ".md":
        return _sync_markdown(english, chinese)
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
    done = []
    mine_by_english: dict[str, dict] = {}
    for cell in notebook["cells"]:
        other = mine_by_english.setdefault(_cell_translates(cell), cell)
        if other is not cell:
            done.append(f"{chinese.name}: dropped cell {cell['id']} (cell {other['id']} "
                        f"translates English cell {_cell_translates(cell)} too)")
    cells = []
    for cell in source["cells"]:
        unit = Unit(cell["id"], cell["cell_type"], "".join(cell["source"]))
        mine = mine_by_english.pop(cell["id"], None)
        if mine is None:
            mine = copy.deepcopy(cell)
            if cell["cell_type"] == "code":
                mine["metadata"][RECORD] = _record(unit)
            done.append(f"{chinese.name}: inserted English cell {cell['id']}")
        elif mine["cell_type"] != cell["cell_type"] or cell["cell_type"] == "code" and (
                not is_current(mine.get("metadata", {}).get(RECORD, {}).get("digest"),
                               unit.source)
                or code_tokens("".join(mine["source"])) != code_tokens(unit.source)):
            mine = copy.deepcopy(cell)
            if cell["cell_type"] == "code":
                mine["metadata"][RECORD] = _record(unit)
            done.append(f"{chinese.name}: {cell['cell_type']} cell {cell['id']} copied from "
                        "English")
        elif _tags(mine) != _tags(cell):
            _set_tags(mine, _tags(cell))
            done.append(f"{chinese.name}: cell {mine['id']} takes English cell {cell['id']}'s "
                        f"tags {_tags(cell)}")
        cells.append(mine)
    done += [f"{chinese.name}: dropped cell {c['id']} (its English cell is gone)"
             for c in mine_by_english.values()]
    if [c["id"] for c in cells] != [c["id"] for c in notebook["cells"]] and not done:
        done.append(f"{chinese.name}: cells put in the English order")
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
    tidy`` writes), whose comments may be translated (``stale_only``: only those whose
    Chinese cell is missing or is the English code as it is, comments and all, as ``sync``
    copies it)."""
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
        if stale_only and mine is not None and is_current(mine.recorded[1], unit.source) and not (
                comments and mine.source == unit.source):
            continue
        blocks.append(f"===== {unit.id} {unit.kind}\n{unit.source.rstrip()}\n")
    return "\n".join(blocks)


def _blocks(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    name = None
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if match := _BLOCK.match(line.rstrip("\n")):
            name = match["id"]
            if name in found:
                raise ValueError(f"unit {name} appears twice")
            found[name] = ""
        elif line.startswith("====="):
            raise ValueError(f"line {number}, {line.rstrip()!r}: not a block header "
                             "('===== ID markdown' or '===== ID code')")
        elif name is not None:
            found[name] += line
        elif line.strip():
            raise ValueError("text before the first '===== ID KIND' header")
    # a unit may start with blank lines (a code cell); the file's layout adds trailing ones
    return {k: v.rstrip("\n") for k, v in found.items()}


def import_units(english: Path, chinese: Path, text: str) -> list[str]:
    """Put translated blocks (``export``'s format) into the Chinese page, each recorded as the
    translation of its English unit as it is now. A code block replaces a code cell whose
    comments it translates. A markdown page is rewritten as ``sync`` does, the blocks put in;
    a notebook must have a cell for each block (``sync`` inserts the English cells added).
    Returns the ids imported."""
    blocks = _blocks(text)
    units = {u.id: u for u in _english_units(english)}
    unknown = sorted(set(blocks) - set(units))
    if unknown:
        raise ValueError(f"{english.name} has no unit {', '.join(unknown)}")
    for unit_id, block in blocks.items():
        unit = units[unit_id]
        if unit.kind == "code" and code_tokens(block) != code_tokens(unit.source):
            raise ValueError(f"code block {unit_id} changes more than comments")
    if english.suffix == ".md":
        mine = translated_units(chinese) if chinese.exists() else []
        chinese.parent.mkdir(parents=True, exist_ok=True)
        chinese.write_text(_markdown_page(list(units.values()), mine, blocks), encoding="utf-8")
        return sorted(blocks)
    if not chinese.exists():
        sync_page(english, chinese)
    notebook = _notebook(chinese)
    cells = {_cell_translates(cell): cell for cell in notebook["cells"]}
    missing = [unit_id for unit_id in blocks if unit_id not in cells]
    if missing:
        raise ValueError(f"{chinese.name} has no cell for English cell {', '.join(missing)} "
                         "(python -m tools.translation sync inserts it)")
    for unit_id, block in blocks.items():
        cell = cells[unit_id]
        cell["source"] = block.splitlines(keepends=True)
        cell.setdefault("metadata", {})[RECORD] = _record(units[unit_id])
    _write_notebook(chinese, notebook)
    return sorted(blocks)


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module's docstring); the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=".", help="the repository root")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("check", help="list what is out of step; exit 1 if anything is")
    commands.add_parser("sync", help="create missing pages, cells and sections, drop removed "
                        "ones, copy changed code and tags")
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
        problems = pages_without_english(root) + [
            p for page in english_pages(root) for p in check_page(root, page)]
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
    try:
        imported_ids = import_units(english, zh_page(root, english),
                                    Path(args.file).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        print(f"nothing imported: {error}", file=sys.stderr)
        return 1
    for unit in imported_ids:
        print(f"imported {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
