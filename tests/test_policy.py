"""Each rule of tools.policy shown a notebook that breaks it, and one that follows it.

``tests/test_notebook_policy.py`` runs the rules on the book's chapters, which follow them;
only here can a rule that stopped finding anything fail. Notebooks are built in memory.
"""

from __future__ import annotations

import json

import nbformat
import pytest

from tools import policy
from tools.notebooks import SETUP_CELL_TAG

# Written so that these lines are not themselves catch-alls for test_notebook_policy.py.
ANY = "Exception"


def code(source: str, *tags: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def markdown(source: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(source)


def exercise(label: str, title: str = "Do it", *, collapsed: bool = True) -> list:
    solution_class = ":class: dropdown\n" if collapsed else ""
    return [
        markdown(f"```{{exercise}} {title}\n:label: {label}\n\nDo {label}.\n```"),
        markdown(f"```{{solution-start}} {label}\n{solution_class}```"),
        code(f"answer = {label!r}"),
        markdown("```{solution-end}\n```"),
    ]


def chapter(*, goals: int = 3, exercises: int = 3) -> list:
    """The smallest notebook that follows every rule."""
    goal_lines = "".join(f"- goal {i}\n" for i in range(goals))
    cells = [
        code("# set-up", SETUP_CELL_TAG),
        markdown(f"# A chapter\n\n**Learning goals**\n\n{goal_lines}\nThen the text."),
        code("import helpers\n\nprint(helpers.environment_banner())"),
        markdown("## Speed\n\nIt runs 4x faster, a ratio of 0.25."),
        code("ratio = 0.25\nassert 1 / ratio == 4"),
        code("helpers.timeit(sum, [1, 2])", "timing"),
        markdown("```{admonition} Coming from PyTorch\n:class: tip\nAlike.\n```"),
        markdown("## Exercises"),
    ]
    for i in range(exercises):
        cells += exercise(f"ex-{i}")
    return [*cells, markdown("## Summary\n\nThat was it.")]


RULES = [
    policy.long_code_lines, policy.setup_and_title_problems, policy.learning_goal_problems,
    policy.banner_problems, policy.pytorch_note_problems, policy.exercise_problems,
    policy.summary_problems, policy.timing_cell_problems, policy.catch_all_problems,
    policy.unchecked_number_problems,
]


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.__name__)
def test_a_notebook_that_follows_the_rules_has_no_problems(rule):
    assert rule(chapter()) == []


def test_rules_read_cells_as_stored_in_a_file(tmp_path):
    path = tmp_path / "01_a.ipynb"
    notebook = nbformat.v4.new_notebook(cells=chapter())
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python"}
    nbformat.write(notebook, path)
    cells = policy.read_cells(path)
    assert isinstance(cells[0]["source"], list)  # a file stores sources as lists of lines
    assert all(rule(cells) == [] for rule in RULES)
    assert policy.kernel_problems(policy.read_notebook(path)["metadata"]) == []


# The page column: 88 characters


def test_a_code_line_of_89_characters_is_too_long():
    cells = [code("x = 1"), code("y = 2\n" + "z" * 89 + "\n" + "w" * 88)]
    assert policy.long_code_lines(cells) == [f"cell 1: {'z' * 60}..."]
    assert policy.long_code_lines([code("z" * 88)]) == []
    assert policy.long_code_lines([markdown("z" * 200)]) == []  # prose wraps
    assert policy.long_code_lines([code("z" * 50)], width=40) == [f"cell 0: {'z' * 50}..."]


# Catch-alls


@pytest.mark.parametrize(
    "source",
    [
        f"with pytest.raises({ANY}):\n    f()",
        f"with pytest.raises(({ANY}, ValueError)):\n    f()",
        f"with pytest.raises(Base{ANY}, match='x'):\n    f()",
        f"try:\n    f()\nexcept {ANY}:\n    pass",
        f"try:\n    f()\nexcept ({ANY}) as e:\n    pass",
        f"try:\n    f()\nexcept Base{ANY} as error:\n    pass",
        "try:\n    f()\nexcept" + ":\n    pass",
        f"with expect_error({ANY}):\n    f()",
        f"with helpers.expect_error(({ANY}, TypeError)):\n    f()",
    ],
)
def test_a_catch_all_is_a_problem(source):
    cells = [code("x = 1"), code(source)]
    assert policy.catch_all_problems(cells) == ["code cell 1 accepts any exception"]


@pytest.mark.parametrize(
    "source",
    [
        "with pytest.raises(ValueError):\n    f()",
        "with pytest.raises(ValueError, match='x'):\n    f()",
        "try:\n    f()\nexcept KeyError:\n    pass",
        "try:\n    f()\nexcept (KeyError, TypeError) as e:\n    pass",
        "with expect_error(TypeError, match='bad'):\n    f()",
        # JAX raises some errors with no narrower type: a pinned message makes them precise.
        f"with expect_error({ANY}, match='leaked'):\n    f()",
    ],
)
def test_a_named_error_is_not_a_catch_all(source):
    assert policy.catch_all_problems([code(source)]) == []


def test_catch_alls_are_found_in_test_files_too():
    text = "\n".join([
        "def test_x():",
        f"    with pytest.raises({ANY}):",
        "        f()",
        f"    # _{'CATCH_ALL'} matches raises({ANY}) in prose about the pattern",
        f'    r"raises({ANY})"',
        "    with pytest.raises(KeyError):",
        "        f()",
    ])
    assert policy.catch_alls_in_test_source("test_x.py", text) == [
        "test_x.py:2 accepts any exception"
    ]


# Learning goals


@pytest.mark.parametrize("goals", [2, 3, 4])
def test_two_to_four_learning_goals(goals):
    assert policy.learning_goal_problems(chapter(goals=goals)) == []


@pytest.mark.parametrize("goals", [0, 1, 5])
def test_too_few_or_too_many_learning_goals(goals):
    assert policy.learning_goal_problems(chapter(goals=goals)) == [
        f"2-4 learning goals, found {goals}"
    ]


def test_learning_goals_end_at_the_first_blank_line_and_may_be_numbered():
    text = "**Learning goals**\n\n1. one\n   wrapped\n2. two\n\n- not a goal\n- nor this\n- nor"
    assert policy.learning_goal_problems([markdown(text)]) == []
    starred = "**Learning goals**\n* one\n* two\n* three\n* four\n* five"
    assert policy.learning_goal_problems([markdown(starred)]) == ["2-4 learning goals, found 5"]


def test_no_learning_goals():
    cells = [markdown("# A chapter\n\n- one\n- two"), code("# Learning goals\n- a\n- b")]
    assert policy.learning_goal_problems(cells) == ["a 'Learning goals' list near the top"]


# Numbers stated in prose


@pytest.mark.parametrize(
    ("prose", "numbers"),
    [
        ("The loss falls to 0.25 here.", ["0.25"]),
        ("Compiled, it runs 4x faster.", ["4x"]),
        ("The loop is 3 times slower.", ["3 times"]),
        ("It saves 12% of the memory.", ["12%"]),
        ("From 1.5 to 2.75, 10x and 7 times.", ["1.5", "2.75", "10x", "7 times"]),
    ],
)
def test_a_stated_number_in_a_section_without_an_assert_is_a_problem(prose, numbers):
    cells = [markdown(f"## Results\n\n{prose}"), code("print(result)")]
    assert policy.stated_numbers(prose) == numbers
    assert policy.unchecked_number_problems(cells) == [
        f"## Results states {numbers}, and no code in it checks"
    ]


def test_a_stated_number_before_any_section_is_a_problem_too():
    cells = [markdown("# Title\n\nIt is 4x faster."), code("print(1)")]
    assert policy.unchecked_number_problems(cells) == [
        "(before the first section) states ['4x'], and no code in it checks"
    ]


@pytest.mark.parametrize(
    "check", ["assert result == 0.25", "with expect_error(ValueError):\n    f()"]
)
def test_a_stated_number_checked_in_its_section_is_fine(check):
    cells = [markdown("## Results\n\nThe loss is 0.25."), code("print(1)"), code(check)]
    assert policy.unchecked_number_problems(cells) == []


def test_an_assert_in_another_section_does_not_check_a_number():
    cells = [
        markdown("## One\n\nThe loss is 0.25."), code("print(1)"),
        markdown("### Two\n\nNothing stated."), code("assert True"),
    ]
    assert policy.unchecked_number_problems(cells) == [
        "## One states ['0.25'], and no code in it checks"
    ]
    assert [heading for heading, _, _ in policy.sections(cells)] == ["", "## One", "### Two"]


@pytest.mark.parametrize(
    "prose",
    [
        "Chapter 12 has 8 devices and version 3 of it.",  # counts without a unit are not results
        "In code: `x = 0.25` and `4x`.",
        "Maths: $0.25 \\times 4$.",
        "```python\ny = 0.25 * 4\n```",
        "A [link](https://example.com/v0.25/4x.html).",
        "Version v0.12 and a.5x, file_0.25.",
    ],
)
def test_numbers_in_code_maths_and_links_are_not_stated(prose):
    assert policy.stated_numbers(prose) == []
    cells = [markdown(f"## Results\n\n{prose}"), code("print(1)")]
    assert policy.unchecked_number_problems(cells) == []


def test_a_section_without_code_checks_nothing():
    cells = [markdown("## Results\n\nIt is 4x faster."), markdown("## Next\n\nText."), code("1")]
    assert policy.unchecked_number_problems(cells) == []


# Exercises


def test_a_solution_without_dropdown_is_not_collapsed():
    cells = [*chapter()[:-1], *exercise("open", collapsed=False), markdown("## Summary")]
    assert policy.exercise_problems(cells) == ["the solution of open is not collapsed"]


@pytest.mark.parametrize("count", [0, 1, 2])
def test_fewer_than_three_exercises(count):
    assert policy.exercise_problems(chapter(exercises=count)) == [
        f"at least three exercises, found {count}"
    ]


def test_four_exercises_are_fine():
    assert policy.exercise_problems(chapter(exercises=4)) == []


def test_a_backtick_in_an_exercise_title():
    cells = [*chapter(), *exercise("ticked", title="Use `jit`")]
    assert policy.exercise_problems(cells) == [
        "backticks in exercise titles: [' Do it', ' Do it', ' Do it', ' Use `jit`']"
    ]


def test_an_exercise_without_a_solution():
    cells = [*chapter(), markdown("```{exercise} Alone\n:label: alone\n```")]
    assert policy.exercise_problems(cells) == ["exercise alone has no solution-start"]


def test_a_solution_without_code_or_without_an_end():
    no_code = exercise("empty")
    del no_code[2]
    assert policy.exercise_problems([*chapter(), *no_code]) == [
        "the solution of empty has no code cell"
    ]
    no_end = exercise("endless")[:-1]
    assert policy.exercise_problems([*no_end, *chapter()]) == []  # a later end closes it
    assert policy.exercise_problems([*chapter(), *no_end]) == [
        "the solution of endless has no solution-end"
    ]


def test_the_solutions_code_must_come_before_its_end():
    cells = exercise("late")
    cells[2], cells[3] = cells[3], cells[2]  # the code cell after solution-end
    assert policy.exercise_problems([*chapter(), *cells]) == [
        "the solution of late has no code cell"
    ]


# Summary, banner, PyTorch note, timing cells, the first cells


def test_a_summary_that_is_not_last():
    cells = chapter()
    cells[-1], cells[-2] = cells[-2], cells[-1]  # the last exercise's end after the summary
    assert policy.summary_problems(cells) == []  # still the last `##` heading
    cells.append(markdown("## Further reading\n\n### Not a `##` heading"))
    assert policy.summary_problems(cells) == ["last section is ['Further reading']"]


def test_no_sections_at_all():
    assert policy.summary_problems([markdown("# Title")]) == ["last section is []"]
    assert policy.summary_problems([markdown("## Summary of it")]) == [
        "last section is ['Summary of it']"
    ]


def test_a_missing_banner():
    cells = [c for c in chapter() if "environment_banner" not in "".join(c["source"])]
    assert policy.banner_problems(cells) == [
        "no call of environment_banner() (print it under the imports)"
    ]
    prose = [*cells, markdown("Call `environment_banner()`.")]
    assert policy.banner_problems(prose) == policy.banner_problems(cells)  # code only


def test_a_missing_pytorch_note():
    cells = [c for c in chapter() if "PyTorch" not in "".join(c["source"])]
    assert policy.pytorch_note_problems(cells) == ["no 'Coming from PyTorch' note"]
    in_code = [*cells, code("# Coming from PyTorch")]
    assert policy.pytorch_note_problems(in_code) == ["no 'Coming from PyTorch' note"]


def test_a_timing_cell_that_times_nothing():
    cells = [code("x = 1", "timing"), markdown("x"), code("y = random()", "timing", "other")]
    assert policy.timing_cell_problems(cells) == [
        "code cell 0 is tagged timing", "code cell 1 is tagged timing"
    ]
    assert policy.timing_cell_problems([code("y = random()", "other")]) == []


def test_a_cell_that_prints_a_measured_time_is_tagged_timing():
    timed = "start = time.perf_counter()\nf()\nprint(time.perf_counter() - start)"
    processor = timed.replace("perf_counter", "process_time")
    cells = [code(timed), code("print(helpers.timeit(f))", "other"), code(processor),
             code(timed, "timing"), code(timed, "remove-output"),
             code("t = helpers.timeit(f)\nassert t.median > 0")]
    assert policy.timing_cell_problems(cells) == [
        f"code cell {i} prints a time it measured but is not tagged timing" for i in (0, 1, 2)
    ]


@pytest.mark.parametrize(
    "timer", ["helpers.timeit(f)", "time.perf_counter()", "time.process_time()",
              "for _ in tqdm(range(3)): pass"]
)
def test_a_timing_cell_that_times(timer):
    assert policy.timing_cell_problems([code(timer, "timing")]) == []


def test_the_first_cell_is_not_the_setup_cell():
    title = markdown("# Title")
    untagged = [code("# set-up"), title]
    problem = f"the first cell is not the set-up cell (tagged {SETUP_CELL_TAG})"
    assert policy.setup_and_title_problems(untagged) == [problem]
    tagged_markdown = markdown("# set-up")
    tagged_markdown.metadata["tags"] = [SETUP_CELL_TAG]
    assert policy.setup_and_title_problems([tagged_markdown, title]) == [problem]
    assert policy.setup_and_title_problems([title, code("# set-up", SETUP_CELL_TAG)]) == [
        problem, "the first cell is the chapter's H1 title"
    ]


def test_the_title_follows_the_setup_cell():
    setup = code("# set-up", SETUP_CELL_TAG)
    title = "the first cell is the chapter's H1 title"
    assert policy.setup_and_title_problems([setup, markdown("## Not a title")]) == [title]
    assert policy.setup_and_title_problems([setup, code("# Title")]) == [title]
    assert policy.setup_and_title_problems([setup]) == [title]
    assert len(policy.setup_and_title_problems([])) == 2


# The notebook's file name and kernel


@pytest.mark.parametrize("name", ["01_why_jax.ipynb", "appendix_api_drift.ipynb"])
def test_chapter_and_appendix_file_names(name):
    assert policy.file_name_problems(name) == []


@pytest.mark.parametrize(
    "name", ["1_why.ipynb", "01-why.ipynb", "01_Why.ipynb", "why_jax.ipynb", "01_why.py"]
)
def test_bad_file_names(name):
    assert policy.file_name_problems(name) == [
        f"{name}: not NN_name.ipynb or appendix_name.ipynb"
    ]


def test_a_kernel_that_is_not_python():
    assert policy.kernel_problems({"kernelspec": {"language": "julia"}}) == [
        "the kernel's language is 'julia', not python"
    ]
    assert policy.kernel_problems({}) == ["the kernel's language is None, not python"]


def test_read_notebook_reads_json(tmp_path):
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": ["é"]}]}), "utf-8")
    assert policy.read_cells(path) == [{"cell_type": "code", "source": ["é"]}]


def test_every_exercise_is_checked_and_text_in_code_cells_is_not_markup():
    alone = markdown("```{exercise} Alone\n:label: alone\n```")
    mentions = exercise("mentions")
    mentions[2] = code("# the fence {solution-end} closes a solution\nanswer = 1")
    cells = [*chapter(), alone, *exercise("open", collapsed=False), *mentions]
    assert policy.exercise_problems(cells) == [
        "exercise alone has no solution-start", "the solution of open is not collapsed"
    ]


def test_a_cell_without_metadata_has_no_tags():
    bare = {"cell_type": "code", "source": "x = 1"}
    assert policy.timing_cell_problems([bare]) == []
    assert policy.setup_and_title_problems([bare, markdown("# T")]) == [
        f"the first cell is not the set-up cell (tagged {SETUP_CELL_TAG})"
    ]


def test_prose_and_code_of_a_section_are_read_line_by_line():
    cells = [
        markdown("## Results\n\nThe ratio is\n0.25 here."), code("x = 1"), code("assert x == 1"),
    ]
    assert policy.unchecked_number_problems(cells) == []
    cells[2] = code("print(x)")
    assert policy.unchecked_number_problems(cells) == [
        "## Results states ['0.25'], and no code in it checks"
    ]
    cells = [markdown("The ratio is\n0.25."), code("x = 1"), code("assert x"), markdown("## Next")]
    assert policy.unchecked_number_problems(cells) == []
    assert policy.sections(cells)[0] == ("", "The ratio is\n0.25.", "x = 1\nassert x")


@pytest.mark.parametrize(
    ("prose", "numbers"),
    [
        ("```\na ` b 0.25\n```", []),  # a whole fence goes, whatever it holds
        ("```\ncode\n```4x faster", ["4x"]),
        ("`code`4x faster", ["4x"]),
        ("[link](target)4x faster", ["4x"]),
    ],
)
def test_what_is_left_out_leaves_nothing_behind(prose, numbers):
    assert policy.stated_numbers(prose) == numbers
