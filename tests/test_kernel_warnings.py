"""Deprecations of the libraries the book teaches, and of its own code, are errors.

In notebook kernels started by the tests (`conftest.py`) and in the test process itself
(`pyproject.toml`); other libraries' deprecations stay warnings.
"""

from __future__ import annotations

import warnings

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def _explicit(message: str, category: str, module: str) -> str:
    """Code that raises a warning attributed to ``module``, as if that library had raised it."""
    return (
        "import warnings\n"
        f"warnings.warn_explicit({message!r}, {category}, 'x.py', 1, module={module!r})"
    )


def _run(code: str) -> None:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    NotebookClient(notebook, kernel_name="python3", timeout=60).execute()


@pytest.mark.parametrize(
    "code",
    [
        # A library's own deprecation, attributed to one of its modules.
        _explicit("old API", "DeprecationWarning", "optax._src.alias"),
        _explicit("changes soon", "FutureWarning", "jax.numpy"),
        # A deprecated API called from a notebook cell is attributed to the cell (`__main__`).
        'import warnings\nwarnings.warn("old API", DeprecationWarning)',
    ],
)
def test_deprecations_fail_the_cell(code):
    with pytest.raises(CellExecutionError, match="old API|changes soon"):
        _run(code)


def test_other_warnings_only_print():
    _run('import warnings\nwarnings.warn("just so you know", UserWarning)')
    # A deprecation inside an unrelated library is that library's business, not the book's.
    _run(_explicit("old", "DeprecationWarning", "jaxtyping_like"))


@pytest.mark.parametrize("module", ["jax._src.numpy", "flax.nnx.statelib", "helpers.timing"])
def test_this_process_fails_on_deprecations_of_the_book(module):
    with pytest.raises(DeprecationWarning, match="old API"):
        warnings.warn_explicit("old API", DeprecationWarning, "x.py", 1, module=module)


def test_this_process_only_records_another_librarys_deprecation():
    with warnings.catch_warnings(record=True) as caught:
        warnings.warn_explicit("old API", DeprecationWarning, "x.py", 1, module="jaxtyping_like")
    assert [str(w.message) for w in caught] == ["old API"]
