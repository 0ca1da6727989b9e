"""Rules every chapter notebook follows (static checks: nothing is executed here).

Each rule is a function of ``tools/policy.py``; ``tests/test_policy.py`` shows each one a
notebook that breaks it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from site_checks import toc_pages

from tools import policy
from tools.notebooks import chapter_notebooks, notebook_problems, pinned_versions, repository_url

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
    return policy.read_cells(path)


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
    problems = policy.file_name_problems(path.name)
    assert not problems, "; ".join(problems)


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
    long = policy.long_code_lines(_cells(path))
    assert not long, f"{len(long)} code lines over 88 characters:\n" + "\n".join(long)


@pytest.mark.parametrize("path", NOTEBOOKS_AND_TEMPLATE, ids=_id)
def test_has_python_kernel_metadata(path):
    problems = policy.kernel_problems(policy.read_notebook(path)["metadata"])
    assert not problems, "; ".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS_AND_TEMPLATE, ids=_id)
def test_starts_with_the_setup_cell_then_the_title(path):
    problems = policy.setup_and_title_problems(_cells(path))
    assert not problems, "; ".join(problems)


@pytest.mark.parametrize("path", CHAPTERS_AND_TEMPLATE, ids=_id)
def test_states_learning_goals(path):
    problems = policy.learning_goal_problems(_cells(path))
    assert not problems, "; ".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS_AND_TEMPLATE, ids=_id)
def test_imports_helpers_and_prints_the_banner(path):
    problems = policy.banner_problems(_cells(path))
    assert not problems, "; ".join(problems)


@pytest.mark.parametrize("path", CHAPTERS_AND_TEMPLATE, ids=_id)
def test_has_pytorch_notes(path):
    problems = policy.pytorch_note_problems(_cells(path))
    assert not problems, "; ".join(problems)


@pytest.mark.parametrize("path", CHAPTERS_AND_TEMPLATE, ids=_id)
def test_has_three_exercises_each_with_an_executed_solution(path):
    problems = policy.exercise_problems(_cells(path))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", CHAPTERS_AND_TEMPLATE, ids=_id)
def test_ends_with_a_summary(path):
    problems = policy.summary_problems(_cells(path))
    assert not problems, "; ".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS_AND_TEMPLATE, ids=_id)
def test_timing_cells_measure_time(path):
    problems = policy.timing_cell_problems(_cells(path))
    assert not problems, "; ".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS_AND_TEMPLATE, ids=_id)
def test_expected_errors_name_their_type(path):
    problems = policy.catch_all_problems(_cells(path))
    assert not problems, "; ".join(problems)


def test_tests_name_the_errors_they_expect():
    problems = [
        problem for test_file in sorted((ROOT / "tests").glob("test_*.py"))
        for problem in policy.catch_alls_in_test_source(
            test_file.name, test_file.read_text(encoding="utf-8"))
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", CHAPTERS_AND_TEMPLATE, ids=_id)
def test_sections_that_state_numbers_check_them(path):
    unchecked = policy.unchecked_number_problems(_cells(path))
    assert not unchecked, (
        "sections state numbers that no code in them checks:\n" + "\n".join(unchecked)
    )
