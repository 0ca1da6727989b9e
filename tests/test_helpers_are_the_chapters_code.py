"""Where a helper is a chapter's code, saved for the chapters after it, the two are the same.

A reader who opens ``helpers/`` from a chapter finds the code the chapter wrote: the same
definition, compared as Python syntax trees with docstrings left out (a helper's docstring may
say where it comes from). Each helper's module docstring names its chapter.
"""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import pytest

from helpers import data, lm, timing, tracing
from helpers import models as models_module

ROOT = Path(__file__).resolve().parent.parent

# (module, name, the chapter that defines it)
CHAPTER_CODE = [
    (timing, "faults_per_call", "book/01_why_jax.ipynb"),
    (tracing, "count_traces", "book/07_jit_control_flow.ipynb"),
    (timing, "timeit_interleaved", "book/07_jit_control_flow.ipynb"),
    (timing, "median_ratio", "book/07_jit_control_flow.ipynb"),
    (models_module, "MLPClassifier", "book/09_flax_model.ipynb"),
    (data, "XORDataset", "book/10_data_loading.ipynb"),
    (data, "numpy_collate", "book/10_data_loading.ipynb"),
    *[(lm, name, "book/15_language_model.ipynb") for name in (
        "load_corpus", "CharTokenizer", "TokenWindows", "GPTConfig", "_init", "_normal",
        "CausalSelfAttention", "Block", "GPT", "next_token_loss", "decay_mask",
        "adamw_warmup_cosine", "train_step")],
]


def _without_docstrings(node: ast.AST) -> str:
    for child in ast.walk(node):
        body = getattr(child, "body", None)
        if (
            isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and body and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)
        ):
            child.body = body[1:] or [ast.Pass()]
    return ast.dump(node)


def _chapter_definition(notebook: Path, name: str) -> ast.AST:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    found = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        try:
            tree = ast.parse("".join(cell["source"]))
        except SyntaxError:  # IPython syntax (a magic): not a definition of ours
            continue
        found += [
            node for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name
        ]
    assert len(found) == 1, f"{notebook.name} defines {name} {len(found)} times, not once"
    return found[0]


@pytest.mark.parametrize(
    ("module", "name", "chapter"), CHAPTER_CODE, ids=[name for _, name, _ in CHAPTER_CODE]
)
def test_the_helper_is_the_chapters_code(module, name, chapter):
    helper = ast.parse(inspect.getsource(getattr(module, name))).body[0]
    ours = _chapter_definition(ROOT / chapter, name)
    assert _without_docstrings(helper) == _without_docstrings(ours), (
        f"helpers' {name} differs from the one {chapter} writes: change both together"
    )
    assert f"``{chapter}``" in module.__doc__, f"{module.__name__}'s docstring names {chapter}"
