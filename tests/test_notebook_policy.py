"""Rules every chapter notebook follows (static checks: nothing is executed here)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from site_checks import toc_pages

from tools.notebooks import (
    SETUP_CELL_TAG,
    chapter_notebooks,
    notebook_problems,
    pinned_versions,
    repository_url,
)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = chapter_notebooks(ROOT)
# Chapters (NN_name.ipynb) follow the full pattern; appendix notebooks (appendix_name.ipynb)
# share the set-up cell, title, banner and storage rules but have no exercises or goals.
CHAPTERS = [p for p in NOTEBOOKS if re.match(r"\d\d_", p.name)]
TOC_FILES = [page.docname for page in toc_pages(ROOT)]
# The chapter template (templates/chapter.ipynb, see CONTRIBUTING.md) is held to every rule
# about a chapter's content; only the rules about a chapter's place in the book (its file
# name, _toc.yml, README.md) leave it out. Select its checks with `-k templates`.
TEMPLATE = ROOT / "templates" / "chapter.ipynb"
NOTEBOOKS_AND_TEMPLATE = [*NOTEBOOKS, TEMPLATE]
CHAPTERS_AND_TEMPLATE = [*CHAPTERS, TEMPLATE]


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _markdown(path: Path) -> str:
    return "\n".join("".join(c["source"]) for c in _cells(path) if c["cell_type"] == "markdown")


def _id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_there_are_chapters():
    assert len(CHAPTERS) >= 2


def test_every_toc_entry_exists():
    for entry in TOC_FILES:
        matches = [p for p in ROOT.glob(entry + ".*") if p.suffix in {".md", ".ipynb"}]
        assert matches, f"_toc.yml lists {entry!r}, but no {entry}.md or {entry}.ipynb exists"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_id)
def test_listed_in_toc(path):
    assert path.relative_to(ROOT).with_suffix("").as_posix() in TOC_FILES


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_id)
def test_file_name_carries_the_chapter_number(path):
    assert re.fullmatch(r"(\d\d|appendix)_[a-z0-9_]+\.ipynb", path.name), path.name


@pytest.mark.parametrize("path", CHAPTERS, ids=_id)
def test_readme_lists_the_chapter(path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"]({path.relative_to(ROOT).as_posix()})" in readme, "add the chapter to README.md"


@pytest.mark.parametrize("path", NOTEBOOKS_AND_TEMPLATE, ids=_id)
def test_tidy_current_set_up_cell_and_no_outputs(path):
    """What the pre-commit hook checks (``python -m tools.notebooks --check``)."""
    problems = notebook_problems(
        path, repository_url(ROOT / "_config.yml"), pinned_versions(ROOT / "requirements.txt")
    )
    assert not problems, "; ".join(problems) + ": run `make tidy`"


@pytest.mark.parametrize("path", NOTEBOOKS_AND_TEMPLATE, ids=_id)
def test_code_fits_the_page_column(path):
    """Code lines longer than 88 characters scroll sideways on the website (and in Colab)."""
    long = [
        f"cell {i}: {line[:60]}..." for i, cell in enumerate(_cells(path))
        if cell["cell_type"] == "code" for line in "".join(cell["source"]).splitlines()
        if len(line) > 88
    ]
    assert not long, f"{len(long)} code lines over 88 characters:\n" + "\n".join(long)


@pytest.mark.parametrize("path", NOTEBOOKS_AND_TEMPLATE, ids=_id)
def test_has_python_kernel_metadata(path):
    meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]
    assert meta.get("kernelspec", {}).get("language") == "python"


@pytest.mark.parametrize("path", NOTEBOOKS_AND_TEMPLATE, ids=_id)
def test_starts_with_the_setup_cell_then_the_title(path):
    cells = _cells(path)
    setup, title = cells[0], cells[1]
    assert title["cell_type"] == "markdown" and "".join(title["source"]).startswith("# "), (
        "the first cell is the chapter's H1 title"
    )
    assert setup["cell_type"] == "code"
    assert SETUP_CELL_TAG in setup.get("metadata", {}).get("tags", [])


@pytest.mark.parametrize("path", CHAPTERS_AND_TEMPLATE, ids=_id)
def test_states_learning_goals(path):
    text = _markdown(path)
    match = re.search(r"Learning goals\W*\n\n?((?:.+\n?)+)", text)
    assert match, "a 'Learning goals' list near the top"
    # The list runs to the first blank line; goals may wrap onto indented lines.
    goals = [line for line in match.group(1).splitlines() if re.match(r"[-*] |\d+\. ", line)]
    assert 2 <= len(goals) <= 4, f"2-4 learning goals, found {len(goals)}"


@pytest.mark.parametrize("path", NOTEBOOKS_AND_TEMPLATE, ids=_id)
def test_imports_helpers_and_prints_the_banner(path):
    code = "\n".join("".join(c["source"]) for c in _cells(path) if c["cell_type"] == "code")
    assert "environment_banner(" in code


@pytest.mark.parametrize("path", CHAPTERS_AND_TEMPLATE, ids=_id)
def test_has_pytorch_notes(path):
    assert re.search(r"Coming from PyTorch", _markdown(path))


@pytest.mark.parametrize("path", CHAPTERS_AND_TEMPLATE, ids=_id)
def test_has_three_exercises_each_with_an_executed_solution(path):
    cells = _cells(path)
    text = _markdown(path)
    labels = re.findall(r"```\{exercise\}[^\n]*\n:label: ([\w-]+)", text)
    assert len(labels) >= 3, f"at least three exercises, found {len(labels)}"
    # A backtick in a backtick fence's info string ends the fence early (CommonMark), which
    # silently breaks the exercise and every directive after it.
    titles = re.findall(r"^`{3,}\{exercise\}(.*)$", text, flags=re.MULTILINE)
    assert not [t for t in titles if "`" in t], f"backticks in exercise titles: {titles}"
    for label in labels:
        sources = ["".join(c["source"]) if c["cell_type"] == "markdown" else "" for c in cells]
        start = next((i for i, s in enumerate(sources) if f"{{solution-start}} {label}" in s), None)
        assert start is not None, f"exercise {label} has no solution-start"
        end = next(i for i in range(start + 1, len(cells)) if "{solution-end}" in sources[i])
        assert any(cells[i]["cell_type"] == "code" for i in range(start, end)), (
            f"the solution of {label} has no code cell"
        )
        assert ":class: dropdown" in "".join(cells[start]["source"]), (
            f"the solution of {label} is not collapsed"
        )


@pytest.mark.parametrize("path", CHAPTERS_AND_TEMPLATE, ids=_id)
def test_ends_with_a_summary(path):
    headings = re.findall(r"^## (.+)$", _markdown(path), flags=re.MULTILINE)
    assert headings and headings[-1].strip() == "Summary", f"last section is {headings[-1:]}"


def _code_cells(path: Path) -> list[dict]:
    return [c for c in _cells(path) if c["cell_type"] == "code"]


# A timing cell's output changes from run to run (a progress bar reports its rate too); the
# tag exempts it from the reproducibility test, so it must really be measuring time and not
# hiding some other nondeterminism.
_TIMERS = re.compile(r"timeit|perf_counter|median_seconds|log_compiles|tqdm")


@pytest.mark.parametrize("path", NOTEBOOKS_AND_TEMPLATE, ids=_id)
def test_timing_cells_measure_time(path):
    for i, cell in enumerate(_code_cells(path)):
        if "timing" in cell.get("metadata", {}).get("tags", []):
            assert _TIMERS.search("".join(cell["source"])), f"code cell {i} is tagged timing"


# Catch-alls would pass whatever went wrong: an expected error must name its type.
_CATCH_ALL = re.compile(
    r"except\s*(\(\s*)?(Exception|BaseException)?\s*(\)\s*)?(as \w+)?\s*:"
    # A plain Exception is accepted when `match=` pins down its message (JAX raises some,
    # such as jax.checking_leaks's report, with no narrower type).
    r"|expect_error\(\s*\(?[^)]*\b(Exception|BaseException)\b(?![^)]*\bmatch=)"
    r"|raises\(\s*\(?[^)]*\b(Exception|BaseException)\b"
)


@pytest.mark.parametrize("path", NOTEBOOKS_AND_TEMPLATE, ids=_id)
def test_expected_errors_name_their_type(path):
    for i, cell in enumerate(_code_cells(path)):
        source = "".join(cell["source"])
        assert not _CATCH_ALL.search(source), f"code cell {i} accepts any exception"


def test_tests_name_the_errors_they_expect():
    for test_file in sorted((ROOT / "tests").glob("test_*.py")):
        for number, line in enumerate(test_file.read_text(encoding="utf-8").splitlines(), 1):
            if "_CATCH_ALL" in line or "r\"" in line.lstrip()[:3]:
                continue  # this file's own pattern
            assert not _CATCH_ALL.search(line), f"{test_file.name}:{number} accepts any exception"


def _sections(path: Path) -> list[tuple[str, str, str]]:
    """(heading, prose, code) for each `##`/`###` section, the exercises' solutions included."""
    sections, heading, prose, code = [], "", [], []
    for cell in _cells(path):
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            code.append(source)
            continue
        for line in source.splitlines():
            if re.match(r"#{2,3} ", line):
                sections.append((heading, "\n".join(prose), "\n".join(code)))
                heading, prose, code = line, [], []
            else:
                prose.append(line)
    sections.append((heading, "\n".join(prose), "\n".join(code)))
    return sections


def _stated_numbers(prose: str) -> list[str]:
    """Numbers that prose states as results: decimals, percentages, factors and counts."""
    prose = re.sub(r"```.*?```", "", prose, flags=re.DOTALL)  # fenced examples
    prose = re.sub(r"`[^`]*`|\$[^$]*\$", "", prose)  # inline code and maths
    prose = re.sub(r"\]\([^)]*\)", "]", prose)  # link targets
    return re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?:%|x\b| times\b)|(?<![\w.])\d+\.\d+\b", prose)


@pytest.mark.parametrize("path", CHAPTERS_AND_TEMPLATE, ids=_id)
def test_sections_that_state_numbers_check_them(path):
    checked = re.compile(r"\bassert\b|expect_error")
    unchecked = [
        (heading, numbers)
        for heading, prose, code in _sections(path)
        if (numbers := _stated_numbers(prose)) and code and not checked.search(code)
    ]
    assert not unchecked, f"sections state numbers that no code in them checks: {unchecked}"
