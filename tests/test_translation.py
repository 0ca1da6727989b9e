"""The Chinese edition (zh/) is in step with the English book, and the tools that keep it so.

``test_the_chinese_page_is_in_step`` fails, naming the cells, when an English cell changed after
its translation, when cells were added or removed on one side only, when code differs, or when
a translation lost the English markup. The tests after it run the tools (check, sync, export,
import, the Chinese site's staging) on small pages made here.
CONTRIBUTING.md ("Changing a page in both languages") says how to bring a page back in step.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tools.translation import (
    check_page,
    chinese_only_pages,
    code_tokens,
    digest,
    english_pages,
    export_units,
    import_units,
    markdown_units,
    markup_problems,
    page_problems,
    sync_page,
    translated_units,
)
from tools.zh_site import with_english_outputs, zh_config

ROOT = Path(__file__).resolve().parent.parent
PAGES = english_pages(ROOT)


@pytest.mark.parametrize("english", PAGES, ids=lambda p: p.name)
def test_the_chinese_page_is_in_step(english):
    problems = check_page(ROOT, english)
    assert not problems, (
        f"{len(problems)} translation problems (CONTRIBUTING.md, 'Changing a page in both "
        "languages'):\n" + "\n".join(problems)
    )


@pytest.mark.parametrize("english", [p for p in PAGES if p.suffix == ".ipynb"],
                         ids=lambda p: p.name)
def test_the_chinese_notebook_is_translated(english):
    """Every prose cell is in Chinese (an untranslated cell copied by sync is English), and
    the notebook is stored like the English ones, without outputs."""
    cells = json.loads((ROOT / "zh" / english.name).read_text(encoding="utf-8"))["cells"]
    stored = [c["id"] for c in cells if c.get("outputs") or c.get("execution_count")]
    assert not stored, f"zh/{english.name}: cells stored with outputs: {stored}"
    english_only = [c["id"] for c in cells if c["cell_type"] == "markdown"
                    and not any("\u4e00" <= ch <= "\u9fff" for ch in "".join(c["source"]))]
    assert not english_only, f"zh/{english.name}: cells with no Chinese: {english_only}"


def _toc_files(toc_path: Path) -> list[str]:
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    files = [toc["root"]]
    for part in toc["parts"]:
        files += [entry["file"] for entry in part["chapters"]]
    return [Path(f).name for f in files]


def test_the_chinese_table_of_contents_follows_the_english():
    english = _toc_files(ROOT / "_toc.yml")
    chinese = [f for f in _toc_files(ROOT / "zh" / "_toc.yml")
               if f not in chinese_only_pages(ROOT)]
    assert chinese == english
    english_parts = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))["parts"]
    chinese_parts = yaml.safe_load((ROOT / "zh" / "_toc.yml").read_text(encoding="utf-8"))[
        "parts"]
    assert [p.get("numbered") for p in chinese_parts] == [p.get("numbered")
                                                           for p in english_parts]


def test_the_chinese_site_is_configured_as_chinese_and_opens_the_chinese_notebooks():
    config = zh_config(ROOT)
    assert config["sphinx"]["config"]["language"] == "zh_CN"
    assert config["repository"]["path_to_book"] == "zh"
    assert config["execute"]["execute_notebooks"] == "off"
    english = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["sphinx"]["extra_extensions"] == english["sphinx"]["extra_extensions"]


# The tools, on small pages made here.

def _cell(cell_id: str, kind: str, source: str, tags: list[str] | None = None) -> dict:
    cell = {"cell_type": kind, "id": cell_id, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    if tags:
        cell["metadata"]["tags"] = tags
    return cell


def _write(path: Path, cells: list[dict]) -> Path:
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


@pytest.fixture
def pair(tmp_path):
    """An English notebook and its Chinese translation, in step."""
    english = _write(tmp_path / "en.ipynb", [
        _cell("title", "markdown", "# Arrays\n\nAn array is immutable."),
        _cell("code1", "code", "import jax.numpy as jnp\nx = jnp.ones(3)  # three ones\nx"),
        _cell("prose", "markdown", "Now we double it."),
        _cell("code2", "code", "y = 2 * x\ny", ["hide-output"]),
    ])
    chinese = tmp_path / "zh.ipynb"
    sync_page(english, chinese)
    import_units(english, chinese, "===== title markdown\n# 数组\n\n数组是不可变的。\n"
                                   "===== prose markdown\n现在把它加倍。\n")
    assert page_problems(english, chinese) == []
    return english, chinese


def test_an_english_cell_changed_after_its_translation_is_named(pair):
    english, chinese = pair
    cells = _cells(english)
    cells[2]["source"] = "Now we triple it."
    _write(english, cells)
    assert page_problems(english, chinese) == [
        "zh.ipynb: English unit prose (markdown) changed after it was translated"]
    stale = export_units(english, chinese, stale_only=True)
    assert stale == "===== prose markdown\nNow we triple it.\n"
    import_units(english, chinese, "===== prose markdown\n现在把它变成三倍。\n")
    assert page_problems(english, chinese) == []


def test_cells_added_or_removed_on_one_side_are_named(pair):
    english, chinese = pair
    cells = _cells(english)
    _write(english, cells[:2] + [_cell("new", "markdown", "A new paragraph.")] + cells[2:])
    assert page_problems(english, chinese) == [
        "zh.ipynb: English unit new (markdown) was added and has no translation"]
    _write(english, [cells[0], cells[1], cells[3]])  # "prose" removed in English
    assert page_problems(english, chinese) == [
        "zh.ipynb: unit prose translates English unit prose, which is no longer in the "
        "English page"]
    _write(english, cells)
    translated = _cells(chinese)
    _write(chinese, translated[:3])  # the last cell removed in Chinese
    assert page_problems(english, chinese) == [
        "zh.ipynb: English unit code2 (code) was added and has no translation"]


def _markup_checker(tmp_path: Path, english_text: str):
    """A function that imports a translation of the one-cell page ``english_text`` and
    returns its markup problems."""
    english = _write(tmp_path / "en.ipynb", [_cell("m", "markdown", english_text)])
    chinese = tmp_path / "zh.ipynb"

    def translated(text: str) -> list[str]:
        import_units(english, chinese, f"===== m markdown\n{text}\n")
        return markup_problems(english, chinese)

    return translated


def test_a_translation_that_breaks_the_markup_is_named(tmp_path):
    translated = _markup_checker(tmp_path, (
        "## Keys\n\nA *{term}`key <PRNG key>`* is an array; see [chapter 7](07_jit.ipynb), "
        "where $x^2$ is `jnp.square(x)`."))
    good = ("## 密钥\n\n一个 *{term}`密钥 <PRNG key>`* 是一个数组；参见[第 7 章](07_jit.ipynb)，"
            "那里 $x^2$ 就是 `jnp.square(x)`，而 $x^2$ 还会再出现。")
    assert translated(good) == []
    where = "zh.ipynb: unit m"
    assert translated(good.replace("<PRNG key>", "<key>")) == [
        f"{where}: glossary references ['key'] differ from the English ['PRNG key']"]
    assert translated(good.replace("07_jit", "08_trees")) == [
        f"{where}: links ['08_trees.ipynb'] differ from the English ['07_jit.ipynb']"]
    assert translated(good.replace("## 密钥", "### 密钥")) == [
        f"{where}: headings ['h3'] differ from the English ['h2']"]
    assert translated(good.replace("$x^2$ 就是", "$x^3$ 就是").replace("而 $x^2$ 还", "而")) == [
        f"{where}: mathematics ['x^2', 'x^3'] differs from the English"]
    assert translated(good.replace("`jnp.square(x)`", "jnp.square(x)")) == [
        f"{where}: inline code ['jnp.square(x)'] is missing"]
    assert translated(good.replace("是一个数组；", "是一个\n数组；")) == [
        f"{where}: a line break inside Chinese text shows as a space (write each paragraph "
        "on one line)"]
    assert translated(good.replace("一个 *{term}", "一个*{term}")) == [
        f"{where}: an emphasis marker * shows as text (put a space between it and the "
        "Chinese character next to it)"]


def test_sync_repairs_structure_and_leaves_prose_to_translate(pair):
    english, chinese = pair
    cells = _cells(english)
    cells[1]["source"] = "import jax.numpy as jnp\nx = jnp.zeros(3)"
    _write(english, [cells[0], cells[1], _cell("new", "markdown", "More."), cells[3]])
    sync_page(english, chinese)
    assert [c["id"] for c in _cells(chinese)] == ["title", "code1", "new", "code2"]
    assert page_problems(english, chinese) == [
        "zh.ipynb: unit new records no English unit: not translated yet"]
    assert "".join(_cells(chinese)[1]["source"]) == cells[1]["source"]


def test_sync_again_keeps_the_cells_still_to_translate(pair):
    """A cell sync inserted, still unrecorded, is the cell of its English cell the next time:
    neither dropped nor inserted again, even where someone translated it by hand."""
    english, chinese = pair
    cells = _cells(english)
    _write(english, cells[:2] + [_cell("new", "markdown", "More.")] + cells[2:])
    assert sync_page(english, chinese) == ["zh.ipynb: inserted English cell new"]
    translated = _cells(chinese)
    translated[2]["source"] = "更多。"
    _write(chinese, translated)
    assert sync_page(english, chinese) == []
    assert [("".join(c["source"])) for c in _cells(chinese)][2] == "更多。"


def test_sync_copies_tags_and_kind_and_puts_cells_in_the_english_order(pair):
    english, chinese = pair
    cells = _cells(english)
    cells[0]["metadata"]["tags"] = ["remove-cell"]  # a markdown cell's tags
    cells[1]["metadata"]["tags"] = ["hide-input"]  # a code cell's: its comments stay
    cells[3] = _cell("code2", "markdown", "Now prose.")  # code made markdown, same id
    _write(english, [cells[2], cells[0], cells[1], cells[3]])
    translated = _cells(chinese)
    translated[1]["source"] = "import jax.numpy as jnp\nx = jnp.ones(3)  # 三个一\nx"
    _write(chinese, translated)
    assert sync_page(english, chinese) == [
        "zh.ipynb: cell title takes English cell title's tags ['remove-cell']",
        "zh.ipynb: cell code1 takes English cell code1's tags ['hide-input']",
        "zh.ipynb: markdown cell code2 copied from English",
    ]
    synced = _cells(chinese)
    assert [c["id"] for c in synced] == ["prose", "title", "code1", "code2"]
    assert "三个一" in "".join(synced[2]["source"])
    assert synced[3]["cell_type"] == "markdown" and "translation" not in synced[3]["metadata"]
    assert page_problems(english, chinese) == [
        "zh.ipynb: unit code2 records no English unit: not translated yet"]
    assert sync_page(english, chinese) == []


def test_sync_drops_a_second_translation_of_one_english_cell(pair):
    english, chinese = pair
    cells = _cells(chinese)
    _write(chinese, cells + [{**cells[2], "id": "copy"}])
    assert sync_page(english, chinese) == [
        "zh.ipynb: dropped cell copy (cell prose translates English cell prose too)"]
    assert [c["id"] for c in _cells(chinese)] == ["title", "code1", "prose", "code2"]


def test_import_into_a_notebook_without_the_cell_says_to_sync(pair):
    english, chinese = pair
    cells = _cells(english)
    _write(english, cells + [_cell("new", "markdown", "More.")])
    with pytest.raises(ValueError, match=r"zh.ipynb has no cell for English cell new \(python "
                                         r"-m tools.translation sync inserts it\)"):
        import_units(english, chinese, "===== new markdown\n更多。\n")


def test_a_mistyped_block_header_is_an_error(pair):
    english, chinese = pair
    with pytest.raises(ValueError, match="line 3, '===== prose  markdown': not a block header"):
        import_units(english, chinese, "===== title markdown\n# 数组\n===== prose  markdown\n"
                                       "现在把它加倍。\n")


def test_code_must_match_token_for_token_but_comments_may_be_translated(pair):
    english, chinese = pair
    cells = _cells(chinese)
    cells[1]["source"] = "import jax.numpy as jnp\n# 三个一\nx = jnp.ones(3)  # 三个一\nx"
    _write(chinese, cells)
    assert page_problems(english, chinese) == []
    cells[1]["source"] = "import jax.numpy as jnp\nx = jnp.ones(4)\nx"
    cells[3]["metadata"]["tags"] = []
    _write(chinese, cells)
    assert page_problems(english, chinese) == [
        "zh.ipynb: code cell code1 differs from English cell code1 (only comments may differ)",
        "zh.ipynb: cell code2 has tags [], English cell code2 has ['hide-output']",
    ]
    with pytest.raises(ValueError, match="changes more than comments"):
        import_units(english, chinese, "===== code1 code\nx = 1\n")


def test_code_tokens_ignore_comments_and_compare_magics_as_lines():
    assert code_tokens("a = 1  # one\n\nb = a") == code_tokens("# 注释\na = 1\nb = a  # 二")
    assert code_tokens("a = 1") != code_tokens("a = 2")
    assert code_tokens("a = 'x # y'") != code_tokens("a = 'x'")  # a # in a string is code
    magic = "%%writefile {path}\nimport json  # a worker\nprint(1)\n"
    assert code_tokens(magic) == code_tokens("%%writefile {path}\nimport json  # 工作进程\n"
                                             "print(1)\n")
    assert code_tokens(magic) != code_tokens("%%writefile {path}\nimport json\nprint(2)\n")
    assert code_tokens(magic) != code_tokens("%%writefile {other}\nimport json\nprint(1)\n")
    assert code_tokens("%time a = 1\nb = 2") != code_tokens("b = 2\n%time a = 1")  # in place
    assert code_tokens("%time a = 1\nb = 2") == code_tokens("# 计时\n%time a = 1\n\nb = 2")
    shell = "%%bash\n# list\nls -l  # long\n"  # not Python: compared line by line
    assert code_tokens(shell) == code_tokens("%%bash\n# 列出\nls -l  # long\n")
    assert code_tokens(shell) != code_tokens("%%bash\nls -a  # long\n")


GLOSSARY = """\
# Glossary

Terms.

```{glossary}
abstract value
  What JAX knows.

array
  A grid of numbers. See [a chapter](01_a.ipynb).
```
"""


def test_a_markdown_page_is_cut_into_sections_and_glossary_entries(tmp_path):
    units = markdown_units("(top)=\n# Title\n\nText.\n\n## Part one\n\nMore.\n" + "\n" +
                           GLOSSARY.replace("# Glossary", "## Glossary"))
    assert [u.id for u in units] == ["title", "part-one", "glossary", "term-abstract-value",
                                     "term-array"]
    assert units[0].source.startswith("(top)=\n# Title")
    assert units[3].in_glossary and units[4].source.rstrip().endswith("```")


def test_a_glossary_entry_changed_is_named_and_the_translation_builds_back(tmp_path):
    english = tmp_path / "glossary.md"
    english.write_text(GLOSSARY, encoding="utf-8")
    chinese = tmp_path / "zh" / "glossary.md"
    sync_page(english, chinese)
    assert "records no English unit" in page_problems(english, chinese)[0]
    import_units(english, chinese, (
        "===== glossary markdown\n# 术语表\n\n术语。\n\n```{glossary}\n"
        "===== term-abstract-value markdown\n抽象值\nabstract value\n  JAX 知道的。\n"
        "===== term-array markdown\n数组\narray\n  数字组成的网格。参见[一章](01_a.ipynb)。\n```\n"
    ))
    assert page_problems(english, chinese) == []
    text = chinese.read_text(encoding="utf-8")
    assert f".. translates: term-array {digest(markdown_units(GLOSSARY)[2].source)}\n数组" in text
    assert [u.id for u in translated_units(chinese)] == [
        "glossary", "term-abstract-value", "term-array"]
    english.write_text(GLOSSARY.replace("A grid of numbers.", "A grid of values."),
                       encoding="utf-8")
    assert page_problems(english, chinese) == [
        "glossary.md: English unit term-array (markdown) changed after it was translated"]


def test_the_chinese_pages_get_the_english_outputs():
    chinese = {"metadata": {}, "cells": [
        _cell("a", "markdown", "文字"),
        {**_cell("b", "code", "x"), "metadata": {"translation": {"cell": "b", "digest": "0"}}},
    ]}
    output = {"output_type": "stream", "name": "stdout", "text": "1\n"}
    executed = {"metadata": {"book_run": {"runtime": 1.0}}, "cells": [
        _cell("a", "markdown", "text"), {**_cell("b", "code", "x"), "outputs": [output],
                                         "execution_count": 1}]}
    staged = with_english_outputs(chinese, executed, {"runtime": 2.0})
    assert staged["cells"][1]["outputs"] == [output]
    assert staged["cells"][1]["execution_count"] == 1
    assert staged["metadata"]["book_run"] == {"runtime": 2.0}
    assert chinese["cells"][1]["outputs"] == []  # the source is left as it was
    executed["cells"][1]["id"] = "other"
    with pytest.raises(ValueError, match="translates no code cell"):
        with_english_outputs(chinese, executed, None)


def test_the_check_command_lists_problems_and_fails(tmp_path, capsys):
    from tools.translation import main

    shutil.copytree(ROOT / "book", tmp_path / "book",
                    ignore=shutil.ignore_patterns("*.ipynb_checkpoints"))
    shutil.copytree(ROOT / "zh", tmp_path / "zh")
    assert main(["--root", str(tmp_path), "check"]) == 0
    assert capsys.readouterr().out == ""
    shutil.copy(tmp_path / "zh" / "intro.md", tmp_path / "zh" / "old_name.md")
    page = tmp_path / "book" / "04_random_numbers.ipynb"
    notebook = json.loads(page.read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if c["cell_type"] == "markdown")
    cell["source"] = ["Changed."]
    page.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    assert main(["--root", str(tmp_path), "check"]) == 1
    out = capsys.readouterr().out
    assert f"04_random_numbers.ipynb: English unit {cell['id']} (markdown) changed" in out
    assert out.startswith("old_name.md: a Chinese page without an English page "
                          "book/old_name.md (git mv it to the English page's new name, or "
                          "git rm it)\n")
    assert "terms.md" not in out  # the Chinese edition's own page (language_switch only_here)


def test_the_chinese_sources_are_staged_with_the_english_outputs_and_runs(tmp_path):
    from tools.zh_site import stage_sources

    root = tmp_path / "repo"
    (root / "zh").mkdir(parents=True)
    shutil.copytree(ROOT / "_ext", root / "_ext", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    shutil.copy(ROOT / "zh" / "_config.yml", root / "zh" / "_config.yml")
    (root / "zh" / "_toc.yml").write_text("format: jb-book\nroot: intro\n", encoding="utf-8")
    (root / "zh" / "intro.md").write_text("# 前言\n", encoding="utf-8")
    record = {"translation": {"cell": "b", "digest": "0"}}
    _write(root / "zh" / "01_a.ipynb", [_cell("t", "markdown", "# 标题"),
                                         {**_cell("b", "code", "1  # 一"), "metadata": record}])
    (root / "book").mkdir()
    _write(root / "book" / "01_a.ipynb", [_cell("t", "markdown", "# Title"),
                                           _cell("b", "code", "1  # one")])
    build = tmp_path / "_build"
    (build / "jupyter_execute" / "book").mkdir(parents=True)
    output = {"output_type": "execute_result", "data": {"text/plain": "1"}, "metadata": {},
              "execution_count": 1}
    executed = [_cell("t", "markdown", "# Title"),
                {**_cell("b", "code", "1  # one"), "outputs": [output]}]
    _write(build / "jupyter_execute" / "book" / "01_a.ipynb", executed)
    (build / "html" / "_static").mkdir(parents=True)
    (build / "html" / "_static" / "execution-status.json").write_text(
        json.dumps({"book/01_a": {"runtime": 3.5, "succeeded": True}}), encoding="utf-8")
    stage = stage_sources(root, build, tmp_path / "stage")
    staged = json.loads((stage / "01_a.ipynb").read_text(encoding="utf-8"))
    assert staged["cells"][1]["outputs"] == [output]
    assert staged["metadata"]["book_run"] == {"runtime": 3.5, "succeeded": True}
    assert (stage / "intro.md").read_text(encoding="utf-8") == "# 前言\n"
    assert (stage / "_toc.yml").exists() and (stage / "_ext" / "language_switch.py").exists()
    config = yaml.safe_load((stage / "_config.yml").read_text(encoding="utf-8"))
    assert config["title"] == "可执行的 JAX" and config["execute"]["execute_notebooks"] == "off"
    executed[1]["source"] = "2  # one"  # the English code changed, the Chinese not synced
    _write(build / "jupyter_execute" / "book" / "01_a.ipynb", executed)
    with pytest.raises(ValueError, match=r"zh/01_a.ipynb: code cell b is not the code of "
                                         r"English cell b \(python -m tools.translation sync"):
        stage_sources(root, build, tmp_path / "stage")
    (build / "jupyter_execute" / "book" / "01_a.ipynb").unlink()
    with pytest.raises(FileNotFoundError, match="01_a.ipynb is missing: build the English "
                                                "book first"):
        stage_sources(root, build, tmp_path / "stage")
    (root / "book" / "01_a.ipynb").unlink()
    with pytest.raises(FileNotFoundError, match=r"zh/01_a.ipynb translates no English page"):
        stage_sources(root, build, tmp_path / "stage")
    (build / "html" / "_static" / "execution-status.json").unlink()
    with pytest.raises(FileNotFoundError, match="execution-status.json is missing: build the "
                                                "English book first"):
        stage_sources(root, build, tmp_path / "stage")


def test_translated_comments_keep_code_lines_narrow(pair):
    english, chinese = pair
    assert export_units(english, chinese, comments=True) == (
        "===== code1 code\nimport jax.numpy as jnp\nx = jnp.ones(3)  # three ones\nx\n")
    import_units(english, chinese, "===== code1 code\nimport jax.numpy as jnp\n"
                                   "x = jnp.ones(3)  # 三个一\nx\n")
    assert page_problems(english, chinese) == []
    assert "三个一" in "".join(_cells(chinese)[1]["source"])
    assert export_units(english, chinese, stale_only=True, comments=True) == ""
    sync_copy = _cells(english)[1]  # the English code changed: sync copies it, comments too
    sync_copy["source"] = "import jax.numpy as jnp\nx = jnp.ones(4)  # four ones\nx"
    _write(english, [*_cells(english)[:1], sync_copy, *_cells(english)[2:]])
    sync_page(english, chinese)
    assert export_units(english, chinese, stale_only=True, comments=True) == (
        "===== code1 code\nimport jax.numpy as jnp\nx = jnp.ones(4)  # four ones\nx\n")
    long_comment = "x = jnp.ones(4)  # " + "一" * 35  # 19 + 70 = 89 columns
    import_units(english, chinese, f"===== code1 code\nimport jax.numpy as jnp\n"
                                   f"{long_comment}\nx\n")
    assert page_problems(english, chinese) == [
        "zh.ipynb: code cell code1 has lines wider than 88 columns (a Chinese character takes "
        f"two): {long_comment!r}"]


PAGE = "# Title\n\nText a.\n\n## Part b\n\nText b.\n\n## Part c\n\nText c.\n"


def test_a_markdown_page_keeps_its_untranslated_units_once(tmp_path):
    """Units left in English are headed as such, so importing again neither repeats them nor
    leaves English inside the translated unit before them."""
    english, chinese = tmp_path / "page.md", tmp_path / "zh" / "page.md"
    english.write_text(PAGE, encoding="utf-8")
    import_units(english, chinese, "===== title markdown\n# 标题\n\n文字甲。\n"
                                   "===== part-c markdown\n## 丙\n\n文字丙。\n")
    import_units(english, chinese, "===== part-c markdown\n## 丙\n\n文字丙。\n")
    assert chinese.read_text(encoding="utf-8") == (
        f"% translates: title {digest('# Title\n\nText a.\n\n')}\n# 标题\n\n文字甲。\n\n"
        "% untranslated: part-b\n## Part b\n\nText b.\n\n"
        f"% translates: part-c {digest('## Part c\n\nText c.\n')}\n## 丙\n\n文字丙。\n")
    assert page_problems(english, chinese) == [
        "page.md: unit part-b records no English unit: not translated yet"]
    assert export_units(english, chinese, stale_only=True) == (
        "===== part-b markdown\n## Part b\n\nText b.\n")
    import_units(english, chinese, "===== part-b markdown\n## 乙\n\n文字乙。\n")
    assert "Text" not in chinese.read_text(encoding="utf-8")
    assert page_problems(english, chinese) == []


def test_sync_brings_a_markdown_page_to_the_english_sections(tmp_path):
    english, chinese = tmp_path / "page.md", tmp_path / "zh" / "page.md"
    english.write_text(PAGE, encoding="utf-8")
    assert sync_page(english, chinese) == [f"created {chinese} (English text, to translate)"]
    assert [u.id for u in translated_units(chinese)] == ["title", "part-b", "part-c"]
    import_units(english, chinese, "===== title markdown\n# 标题\n\n文字甲。\n"
                                   "===== part-b markdown\n## 乙\n\n文字乙。\n"
                                   "===== part-c markdown\n## 丙\n\n文字丙。\n")
    assert sync_page(english, chinese) == []
    english.write_text(PAGE.replace("## Part b\n\nText b.", "## Part d\n\nText d."),
                       encoding="utf-8")
    assert sync_page(english, chinese) == ["page.md: inserted English unit part-d",
                                           "page.md: dropped unit part-b (its English unit is "
                                           "gone)"]
    assert [(u.id, u.recorded is not None) for u in translated_units(chinese)] == [
        ("title", True), ("part-d", False), ("part-c", True)]
    assert page_problems(english, chinese) == [
        "page.md: unit part-d records no English unit: not translated yet"]
    english.write_text("# Title\n\nText a.\n\n## Part c\n\nText c.\n\n## Part d\n\nText d.\n\n",
                       encoding="utf-8")
    assert sync_page(english, chinese) == ["page.md: rewritten in the English order"]
    assert [u.id for u in translated_units(chinese)] == ["title", "part-c", "part-d"]


def test_markdown_units_of_fences_duplicate_headings_and_glossary_entries():
    text = ("# Intro\n\n```python\n# not a heading\n````\n\n## Example\n\n````md\n```\n"
            "# still code\n```\n````\n\n## Example\n\n## Example 2\n\n```{glossary}\n"
            ".. a comment\narray\nndarray\n  A grid.\n\nkey\n  A seed.\n```\n")
    units = markdown_units(text)
    assert [u.id for u in units] == ["intro", "example", "example-2", "example-2-2",
                                     "term-array", "term-key"]
    assert units[4].source == "array\nndarray\n  A grid.\n\n"
    assert "# not a heading" in units[0].source and "# still code" in units[1].source


def test_the_markup_inside_directives_and_code_blocks_is_held_to_the_english(tmp_path):
    translated = _markup_checker(tmp_path, (
        "Text.\n\n```{admonition} Coming from PyTorch\n:class: tip\nUse `jax.grad`, see "
        "[chapter 7](07_jit.ipynb).\n```\n\n```{exercise} Clip\n:label: clip\nClip it.\n```\n\n"
        "```{solution-start} clip\n:class: dropdown\n```\n\n```python\nx = 1  # one\n```\n"))
    good = ("文字。\n\n```{admonition} 写给 PyTorch 用户\n:class: tip\n用 `jax.grad`，参见[第 7 章]"
            "(07_jit.ipynb)。\n```\n\n```{exercise} 裁剪\n:label: clip\n裁剪它。\n```\n\n"
            "```{solution-start} clip\n:class: dropdown\n```\n\n```python\nx = 1  # 一\n```\n")
    assert translated(good) == []
    where = "zh.ipynb: unit m"
    assert translated(good.replace("用 `jax.grad`", "用 jax.grad")) == [
        f"{where}: inline code ['jax.grad'] is missing"]
    assert translated(good.replace("(07_jit", "(08_jit")) == [
        f"{where}: links ['08_jit.ipynb'] differ from the English ['07_jit.ipynb']"]
    assert translated(good.replace("用 `jax.grad`，", "用 `jax.grad`，\n")) == [
        f"{where}: a line break inside Chinese text shows as a space (write each paragraph "
        "on one line)"]
    directives = ["{admonition} :class: tip", "{exercise} :label: clip",
                  "{solution-start} clip :class: dropdown", "python"]
    assert translated(good.replace(":class: tip", ":class: note")) == [
        f"{where}: directives {[d.replace('tip', 'note') for d in directives]} differ from "
        f"the English {directives}"]
    assert translated(good.replace("start} clip", "start} clip-2")) == [
        f"{where}: directives {[d.replace('} clip', '} clip-2') for d in directives]} differ "
        f"from the English {directives}"]
    assert translated(good.replace("x = 1  # 一", "x = 2  # 一")) == [
        f"{where}: code blocks differ from the English (only comments may differ)"]


def test_markup_problems_of_labels_emphasis_glossary_terms_and_stale_units(tmp_path):
    english = tmp_path / "glossary.md"
    english.write_text("(terms)=\n# Terms\n\nSay `a * b` or 2 * 3, 4 * 5.\n\n```{glossary}\narray\n"
                       "  A grid.\n```\n", encoding="utf-8")
    chinese = tmp_path / "zh" / "glossary.md"
    top = "(terms)=\n# 术语\n\n写作 `a * b` 或 2 * 3，**以及** 4 * 5。\n\n```{glossary}"
    entry = "数组\narray\n  网格。\n```"

    def translated(title: str, term: str) -> list[str]:
        import_units(english, chinese, f"===== terms markdown\n{title}\n"
                                       f"===== term-array markdown\n{term}\n")
        return markup_problems(english, chinese)

    assert translated(top, entry) == []
    assert translated(top.replace("(terms)=", "(terms-zh)="), entry) == [
        "glossary.md: unit terms: labels ['terms-zh'] differ from the English ['terms']"]
    assert translated(top.replace("或 2 * 3", "或 `2 * 3`"), entry) == []  # fewer *, rendered
    assert translated(top.replace("或 2 * 3", "或*`2 * 3`*"), entry) == [
        "glossary.md: unit terms: an emphasis marker * shows as text (put a space between it "
        "and the Chinese character next to it)"]
    assert translated(top, entry.replace("array\n", "")) == [
        "glossary.md: unit term-array: glossary terms ['array'] are missing (keep each "
        "English term line, under the Chinese one)"]
    assert translated(top.replace("写作 `a * b`", "写作 a * b"), entry)  # loses code, shows a *
    english.write_text(english.read_text(encoding="utf-8").replace("Say `a * b`", "Say a"),
                       encoding="utf-8")
    assert markup_problems(english, chinese) == []  # the unit is stale: page_problems names it
    assert page_problems(english, chinese) == [
        "glossary.md: English unit terms (markdown) changed after it was translated"]


def test_blank_lines_after_a_section_do_not_make_its_translation_stale(tmp_path):
    english, chinese = tmp_path / "page.md", tmp_path / "zh" / "page.md"
    english.write_text(PAGE, encoding="utf-8")
    import_units(english, chinese, "===== title markdown\n# 标题\n\n文字甲。\n"
                                   "===== part-b markdown\n## 乙\n\n文字乙。\n"
                                   "===== part-c markdown\n## 丙\n\n文字丙。\n")
    english.write_text(PAGE + "\n\n## Part d\n\nText d.\n", encoding="utf-8")  # part c + 2 lines
    assert page_problems(english, chinese) == [
        "page.md: English unit part-d (markdown) was added and has no translation"]
    english.write_text(PAGE.replace("Text c.", "Text c, changed."), encoding="utf-8")
    assert page_problems(english, chinese) == [
        "page.md: English unit part-c (markdown) changed after it was translated"]


def test_sync_copies_a_code_cell_whose_english_or_chinese_code_changed(pair):
    english, chinese = pair
    cells = _cells(english)
    cells[1]["source"] = "import jax.numpy as jnp\nx = jnp.ones(3)  # 3 ones\nx"  # a comment
    _write(english, cells)
    assert sync_page(english, chinese) == ["zh.ipynb: code cell code1 copied from English"]
    assert page_problems(english, chinese) == []
    translated = _cells(chinese)
    translated[3]["source"] = "y = 3 * x\ny"  # the Chinese code edited by hand
    _write(chinese, translated)
    assert sync_page(english, chinese) == ["zh.ipynb: code cell code2 copied from English"]
    assert "".join(_cells(chinese)[3]["source"]) == "y = 2 * x\ny"
    _write(english, [cells[0], cells[2], cells[1], cells[3]])
    assert sync_page(english, chinese) == ["zh.ipynb: cells put in the English order"]
    assert [c["id"] for c in _cells(chinese)] == ["title", "prose", "code1", "code2"]


def test_sync_replaces_an_english_copy_without_records(tmp_path):
    english, chinese = tmp_path / "page.md", tmp_path / "zh" / "page.md"
    english.write_text(PAGE, encoding="utf-8")
    chinese.parent.mkdir()
    chinese.write_text(PAGE, encoding="utf-8")  # as an earlier sync made it
    assert sync_page(english, chinese) == [
        "page.md: inserted English unit title", "page.md: inserted English unit part-b",
        "page.md: inserted English unit part-c",
        "page.md: replaced the text before the first record with the English units"]
    assert chinese.read_text(encoding="utf-8").startswith("% untranslated: title\n# Title\n")


def test_the_import_command_names_what_is_wrong_and_imports_nothing(tmp_path, capsys):
    from tools.translation import main

    (tmp_path / "book").mkdir()
    english = _write(tmp_path / "book" / "01_a.ipynb", [_cell("p", "markdown", "Prose."),
                                                         _cell("c", "code", "x = 1")])
    chinese = tmp_path / "zh" / "01_a.ipynb"
    sync_page(english, chinese)
    before = chinese.read_text(encoding="utf-8")
    todo = tmp_path / "todo.txt"
    todo.write_text("===== p markdown\n散文。\n===== c code\nx = 2\n", encoding="utf-8")
    assert main(["--root", str(tmp_path), "import", "01_a.ipynb", str(todo)]) == 1
    assert capsys.readouterr().err == "nothing imported: code block c changes more than comments\n"
    assert chinese.read_text(encoding="utf-8") == before
    todo.write_text("===== p markdown\n散文。\n", encoding="utf-8")
    assert main(["--root", str(tmp_path), "import", "01_a.ipynb", str(todo)]) == 0
    assert capsys.readouterr().out == "imported p\n"
    assert page_problems(english, chinese) == []
