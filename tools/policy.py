"""The rules every chapter notebook follows, one function per rule (CONTRIBUTING.md, step 4).

Each rule takes a notebook's cells (the ``cells`` list of its JSON, or nbformat's cells) and
returns its problems, one string each: an empty list means the notebook follows the rule.
``tests/test_notebook_policy.py`` runs every rule on every chapter; ``tests/test_policy.py``
feeds each rule notebooks that break it, so that a rule that stopped finding anything fails
there. Nothing here executes a notebook.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tools.notebooks import SETUP_CELL_TAG

__all__ = [
    "CATCH_ALL",
    "PAGE_WIDTH",
    "TIMERS",
    "banner_problems",
    "catch_all_problems",
    "catch_alls_in_test_source",
    "exercise_problems",
    "file_name_problems",
    "kernel_problems",
    "learning_goal_problems",
    "long_code_lines",
    "pytorch_note_problems",
    "read_cells",
    "read_notebook",
    "sections",
    "setup_and_title_problems",
    "stated_numbers",
    "summary_problems",
    "timing_cell_problems",
    "unchecked_number_problems",
]

Cell = Mapping[str, Any]
Cells = Sequence[Cell]

# The width of the website's code column, in characters (helpers.env.PAGE_WIDTH says the same).
PAGE_WIDTH = 88
MIN_GOALS, MAX_GOALS = 2, 4
MIN_EXERCISES = 3

# A timing cell's output changes from run to run (a progress bar reports its rate too); the
# tag exempts it from the reproducibility test, so it must really be measuring time and not
# hiding some other nondeterminism.
TIMERS = re.compile(r"timeit|perf_counter|process_time|median_seconds|log_compiles|tqdm")

# Catch-alls would pass whatever went wrong: an expected error must name its type.
CATCH_ALL = re.compile(
    r"except\s*(\(\s*)?(Exception|BaseException)?\s*(\)\s*)?(as \w+)?\s*:"
    # A plain Exception is accepted when `match=` pins down its message (JAX raises some,
    # such as jax.checking_leaks's report, with no narrower type).
    r"|expect_error\(\s*\(?[^)]*\b(Exception|BaseException)\b(?![^)]*\bmatch=)"
    r"|raises\(\s*\(?[^)]*\b(Exception|BaseException)\b"
)

_CHECKED = re.compile(r"\bassert\b|expect_error")


def read_notebook(path: str | Path) -> dict[str, Any]:
    """The notebook at ``path``, as its JSON."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def read_cells(path: str | Path) -> list[dict[str, Any]]:
    """The cells of the notebook at ``path``."""
    return read_notebook(path)["cells"]


def _source(cell: Cell) -> str:
    return "".join(cell["source"])  # a list of lines in a file, one string in nbformat


def _markdown(cells: Cells) -> str:
    return "\n".join(_source(c) for c in cells if c["cell_type"] == "markdown")


def _code_cells(cells: Cells) -> list[Cell]:
    return [c for c in cells if c["cell_type"] == "code"]


def _tags(cell: Cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def file_name_problems(name: str) -> list[str]:
    """A chapter is ``NN_name.ipynb``, an appendix ``appendix_name.ipynb`` (lower case)."""
    if re.fullmatch(r"(\d\d|appendix)_[a-z0-9_]+\.ipynb", name):
        return []
    return [f"{name}: not NN_name.ipynb or appendix_name.ipynb"]


def kernel_problems(metadata: Mapping[str, Any]) -> list[str]:
    """The notebook's metadata names a Python kernel."""
    language = metadata.get("kernelspec", {}).get("language")
    return [] if language == "python" else [f"the kernel's language is {language!r}, not python"]


def long_code_lines(cells: Cells, width: int = PAGE_WIDTH) -> list[str]:
    """Code lines longer than ``width`` characters (they scroll sideways on the website)."""
    return [
        f"cell {i}: {line[:60]}..." for i, cell in enumerate(cells)
        if cell["cell_type"] == "code" for line in _source(cell).splitlines()
        if len(line) > width
    ]


def setup_and_title_problems(cells: Cells) -> list[str]:
    """The set-up cell (a code cell tagged ``remove-cell``) first, then the ``# Title``."""
    problems = []
    setup = cells[0] if cells else None
    if setup is None or setup["cell_type"] != "code" or SETUP_CELL_TAG not in _tags(setup):
        problems.append(f"the first cell is not the set-up cell (tagged {SETUP_CELL_TAG})")
    title = cells[1] if len(cells) > 1 else None
    if title is None or title["cell_type"] != "markdown" or not _source(title).startswith("# "):
        problems.append("the first cell is the chapter's H1 title")
    return problems


def learning_goal_problems(cells: Cells) -> list[str]:
    """A line ``**Learning goals**`` followed by a list of 2 to 4 goals."""
    match = re.search(r"Learning goals\W*\n\n?((?:.+\n?)+)", _markdown(cells))
    if not match:
        return ["a 'Learning goals' list near the top"]
    # The list runs to the first blank line; goals may wrap onto indented lines.
    goals = [line for line in match.group(1).splitlines() if re.match(r"[-*] |\d+\. ", line)]
    if MIN_GOALS <= len(goals) <= MAX_GOALS:
        return []
    return [f"{MIN_GOALS}-{MAX_GOALS} learning goals, found {len(goals)}"]


def banner_problems(cells: Cells) -> list[str]:
    """A call of ``helpers.environment_banner()`` in the code."""
    if any("environment_banner(" in _source(c) for c in _code_cells(cells)):
        return []
    return ["no call of environment_banner() (print it under the imports)"]


def pytorch_note_problems(cells: Cells) -> list[str]:
    """At least one "Coming from PyTorch" note."""
    if "Coming from PyTorch" in _markdown(cells):
        return []
    return ["no 'Coming from PyTorch' note"]


def exercise_problems(cells: Cells) -> list[str]:
    """At least three exercises, titles without backticks, each with a collapsed solution
    (``:class: dropdown``) that has a code cell before its ``{solution-end}``."""
    text = _markdown(cells)
    problems = []
    labels = re.findall(r"```\{exercise\}[^\n]*\n:label: ([\w-]+)", text)
    if len(labels) < MIN_EXERCISES:
        problems.append(f"at least three exercises, found {len(labels)}")
    # A backtick in a backtick fence's info string ends the fence early (CommonMark), which
    # silently breaks the exercise and every directive after it.
    titles = re.findall(r"^`{3,}\{exercise\}(.*)$", text, flags=re.MULTILINE)
    if any("`" in title for title in titles):
        problems.append(f"backticks in exercise titles: {titles}")
    sources = [_source(c) if c["cell_type"] == "markdown" else "" for c in cells]
    for label in labels:
        start = next((i for i, s in enumerate(sources) if f"{{solution-start}} {label}" in s), None)
        if start is None:
            problems.append(f"exercise {label} has no solution-start")
            continue
        end = next((i for i in range(start + 1, len(cells)) if "{solution-end}" in sources[i]),
                   None)
        if end is None:
            problems.append(f"the solution of {label} has no solution-end")
        elif not any(cells[i]["cell_type"] == "code" for i in range(start, end)):
            problems.append(f"the solution of {label} has no code cell")
        if ":class: dropdown" not in sources[start]:
            problems.append(f"the solution of {label} is not collapsed")
    return problems


def summary_problems(cells: Cells) -> list[str]:
    """``## Summary`` is the last ``##`` section."""
    headings = re.findall(r"^## (.+)$", _markdown(cells), flags=re.MULTILINE)
    if headings and headings[-1].strip() == "Summary":
        return []
    return [f"last section is {headings[-1:]}"]


# A cell that measures time with a clock (the processor's too) and prints: what it prints
# changes from run to run.
CLOCKS = re.compile(r"(perf_counter|process_time)\(|timeit(_interleaved)?\(")


def timing_cell_problems(cells: Cells) -> list[str]:
    """A code cell tagged ``timing`` times something (``helpers.timeit``, ``perf_counter``,
    ``process_time``...), and a cell that times with a clock and prints is tagged ``timing``
    (unless its output is removed), so that the reproducibility test does not compare its
    measurements."""
    problems = []
    for i, cell in enumerate(_code_cells(cells)):
        source, tags = _source(cell), _tags(cell)
        if "timing" in tags and not TIMERS.search(source):
            problems.append(f"code cell {i} is tagged timing")
        elif ("timing" not in tags and "remove-output" not in tags and CLOCKS.search(source)
              and "print(" in source):
            problems.append(f"code cell {i} prints a time it measured but is not tagged timing")
    return problems


def catch_all_problems(cells: Cells) -> list[str]:
    """Expected errors name their type: no ``except:``, ``except Exception``,
    ``raises(Exception)``, nor ``expect_error(Exception)`` without ``match=``."""
    return [
        f"code cell {i} accepts any exception" for i, cell in enumerate(_code_cells(cells))
        if CATCH_ALL.search(_source(cell))
    ]


def catch_alls_in_test_source(name: str, text: str) -> list[str]:
    """The lines of a test file that accept any exception, as ``name:line``; lines that
    define or use a pattern for catch-alls (a raw string, ``CATCH_ALL``) are not code."""
    return [
        f"{name}:{number} accepts any exception"
        for number, line in enumerate(text.splitlines(), 1)
        if "CATCH_ALL" not in line and 'r"' not in line.lstrip()[:3] and CATCH_ALL.search(line)
    ]


def sections(cells: Cells) -> list[tuple[str, str, str]]:
    """(heading, prose, code) for each ``##``/``###`` section, the exercises' solutions
    included; the first has the heading ``""`` (what comes before the first section)."""
    found, heading, prose, code = [], "", [], []
    for cell in cells:
        source = _source(cell)
        if cell["cell_type"] == "code":
            code.append(source)
            continue
        for line in source.splitlines():
            if re.match(r"#{2,3} ", line):
                found.append((heading, "\n".join(prose), "\n".join(code)))
                heading, prose, code = line, [], []
            else:
                prose.append(line)
    found.append((heading, "\n".join(prose), "\n".join(code)))
    return found


def stated_numbers(prose: str) -> list[str]:
    """Numbers that prose states as results: decimals, percentages, factors and counts."""
    prose = re.sub(r"```.*?```", "", prose, flags=re.DOTALL)  # fenced examples
    prose = re.sub(r"`[^`]*`|\$[^$]*\$", "", prose)  # inline code and maths
    prose = re.sub(r"\]\([^)]*\)", "]", prose)  # link targets
    return re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?:%|x\b| times\b)|(?<![\w.])\d+\.\d+\b", prose)


def unchecked_number_problems(cells: Cells) -> list[str]:
    """A section whose prose states a number has an ``assert`` (or ``expect_error``) in its
    code; a section without code states nothing it could check."""
    return [
        f"{heading or '(before the first section)'} states {numbers}, and no code in it checks"
        for heading, prose, code in sections(cells)
        if (numbers := stated_numbers(prose)) and code and not _CHECKED.search(code)
    ]
