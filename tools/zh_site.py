"""The Chinese edition's website, built from the English build's executed notebooks.

The Chinese notebooks (``zh/``) hold the English code cells, without outputs. This stages
them with the outputs of the English execution put under their code cells (matched by the
English cell each translates, see ``tools/translation.py``) and the English build's run
records (its ``_static/execution-status.json``), builds them as a second Jupyter Book with
execution off, and puts the result in the English website's ``zh/`` folder. No notebook runs
a second time.

    python -m tools.zh_site _build      # after `jupyter-book build .` (make book does both)
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tools.notebooks import read_config
from tools.translation import RECORD, code_tokens

__all__ = ["build_chinese_site", "stage_sources", "with_english_outputs", "zh_config"]

RUN_RECORD = "book_run"  # as in _ext/execution_status.py and conftest.py
RECORDS_FILE = Path("_static") / "execution-status.json"


def _merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def zh_config(root: Path) -> dict[str, Any]:
    """The English ``_config.yml`` with ``zh/_config.yml`` laid over it, execution off."""
    config = _merged(read_config(root / "_config.yml"), read_config(root / "zh" / "_config.yml"))
    config["execute"]["execute_notebooks"] = "off"
    return config


def with_english_outputs(chinese: dict, executed: dict, run: dict | None) -> dict:
    """A Chinese notebook with the outputs of the executed English notebook under its code
    cells, and ``run`` (the English run's record) in its metadata. Each code cell must be the
    code of the English cell it translates (its comments may differ), or the outputs would
    not be its own."""
    outputs = {cell["id"]: cell for cell in executed["cells"] if cell["cell_type"] == "code"}
    notebook = copy.deepcopy(chinese)
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        english = cell.get("metadata", {}).get(RECORD, {}).get("cell")
        if english not in outputs:
            raise ValueError(f"code cell {cell['id']} translates no code cell of the executed "
                             f"English notebook (records {english!r})")
        if code_tokens("".join(cell["source"])) != code_tokens("".join(outputs[english]["source"])):
            raise ValueError(f"code cell {cell['id']} is not the code of English cell {english} "
                             "(python -m tools.translation sync copies it)")
        cell["outputs"] = copy.deepcopy(outputs[english].get("outputs", []))
        cell["execution_count"] = outputs[english].get("execution_count")
    notebook["metadata"].pop(RUN_RECORD, None)
    if run is not None:
        notebook["metadata"][RUN_RECORD] = run
    return notebook


def stage_sources(root: Path, english_build: Path, stage: Path) -> Path:
    """The Chinese book's sources under ``stage``, ready to build: the pages of ``zh/``
    (notebooks with the outputs of ``english_build/jupyter_execute/book/``), its table of
    contents, the merged configuration and the Sphinx extensions."""
    root, english_build = Path(root), Path(english_build)
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    shutil.copytree(root / "_ext", stage / "_ext",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(root / "zh" / "_toc.yml", stage / "_toc.yml")
    (stage / "_config.yml").write_text(
        yaml.safe_dump(zh_config(root), sort_keys=False, allow_unicode=True), encoding="utf-8")
    records_file = english_build / "html" / RECORDS_FILE
    if not records_file.exists():
        raise FileNotFoundError(f"{records_file} is missing: build the English book first")
    records = json.loads(records_file.read_text(encoding="utf-8"))
    for page in sorted((root / "zh").iterdir()):
        if page.suffix == ".md":
            shutil.copy(page, stage / page.name)
        elif page.suffix == ".ipynb":
            if not (root / "book" / page.name).exists():
                raise FileNotFoundError(f"zh/{page.name} translates no English page (book/"
                                        f"{page.name} is gone): python -m tools.translation "
                                        "check")
            executed = english_build / "jupyter_execute" / "book" / page.name
            if not executed.exists():
                raise FileNotFoundError(f"{executed} is missing: build the English book first")
            try:
                notebook = with_english_outputs(
                    json.loads(page.read_text(encoding="utf-8")),
                    json.loads(executed.read_text(encoding="utf-8")),
                    records.get(f"book/{page.stem}"),
                )
            except ValueError as error:
                raise ValueError(f"zh/{page.name}: {error}") from None
            (stage / page.name).write_text(json.dumps(notebook, ensure_ascii=False),
                                           encoding="utf-8")
    return stage


def build_chinese_site(root: Path, english_build: Path) -> subprocess.CompletedProcess:
    """Build the Chinese website from the English build in ``english_build`` (the folder
    holding its ``html`` and ``jupyter_execute``) into ``english_build/html/zh``, with
    warnings as errors, as the English site is built. Returns the finished build's process
    (its output is the build log)."""
    root, english_build = Path(root).resolve(), Path(english_build).resolve()
    stage = stage_sources(root, english_build, english_build / "zh-source")
    out = english_build / "zh-build"
    shutil.rmtree(out, ignore_errors=True)
    result = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build", str(stage),
         "--path-output", str(out), "-W", "-n", "--keep-going"],
        capture_output=True, text=True, cwd=root,
    )
    target = english_build / "html" / "zh"
    shutil.rmtree(target, ignore_errors=True)
    if (out / "_build" / "html").is_dir():
        shutil.copytree(out / "_build" / "html", target)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("english_build", help="the English build's folder (_build)")
    parser.add_argument("--root", default=".", help="the repository root")
    args = parser.parse_args(argv)
    result = build_chinese_site(Path(args.root), Path(args.english_build))
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode == 0:
        print(f"The Chinese edition: {Path(args.english_build) / 'html' / 'zh' / 'index.html'}")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
