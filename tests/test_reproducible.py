"""Every page is reproducible: executing a notebook again gives the outputs the website shows.

The tests executed each notebook once (nbmake; the `executed_notebooks` fixture keeps the
copies the website is built from); here each is compared, output by output, with a second
execution: the one on Colab's runtime (`conftest.py`'s `SecondRun`), where the set-up cell has
brought the taught libraries to the pinned versions and matplotlib is the same as here. That
run goes on beside nbmake's, so each notebook competes with another for the cores: its outputs
must not depend on how busy the machine is, and its asserts must hold. Cells tagged `timing`
are skipped, since a measurement differs on every run (the policy tests check that such cells
really time something). Only what legitimately changes between two kernels is normalized:
the temporary file name IPython gives each cell, temporary directories, memory addresses, and
the bytes of a PNG image, compared as its pixels (the image library may compress differently).
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
from PIL import Image

from tools.notebooks import chapter_notebooks

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = chapter_notebooks(ROOT)


def _normalize(text: str) -> str:
    text = re.sub(r"/tmp/ipykernel_\d+/\d+\.py", "<cell>", text)
    text = re.sub(r"/tmp/tmp\w+", "<tmpdir>", text)  # tempfile's random directory names
    return re.sub(r"0x[0-9a-f]{6,}", "0x…", text)


def _pixels(png: str) -> str:
    """A PNG image (base64, as a notebook stores it) as its size and a digest of its pixels."""
    image = np.asarray(Image.open(io.BytesIO(base64.b64decode(png))).convert("RGBA"))
    return f"{image.shape[1]}x{image.shape[0]} pixels, {hashlib.sha256(image).hexdigest()}"


def _outputs(cell: nbformat.NotebookNode) -> list[tuple]:
    """A cell's outputs as comparable tuples; stream chunks are joined (their split varies)."""
    result: list[tuple] = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            if result and result[-1][0] == f"stream:{output.name}":
                result[-1] = (result[-1][0], result[-1][1] + _normalize(output.text))
            else:
                result.append((f"stream:{output.name}", _normalize(output.text)))
        elif output.output_type in ("execute_result", "display_data"):
            for mime, data in sorted(output.data.items()):
                if mime == "image/png":
                    data = _pixels(data)
                result.append((mime, _normalize(data) if isinstance(data, str) else data))
        elif output.output_type == "error":
            result.append(("error", output.ename, _normalize(output.evalue)))
    return result


def _first_difference(a: list[tuple], b: list[tuple]) -> str:
    for x, y in zip(a, b, strict=False):
        if x != y:
            lines = zip(str(x[-1]).splitlines(), str(y[-1]).splitlines(), strict=False)
            first = next(((p, q) for p, q in lines if p != q), (str(x)[:200], str(y)[:200]))
            return f"{x[0]}: {first[0]!r} != {first[1]!r}"
    return f"{len(a)} outputs != {len(b)} outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_second_run_gives_the_same_outputs(path: Path, executed_notebooks, second_run):
    first = nbformat.read(executed_notebooks[path], as_version=4)
    second = second_run.executed(path)

    code = [(a, b) for a, b in zip(first.cells, second.cells, strict=True) if b.cell_type == "code"]
    differences = [
        f"code cell {number}: {_first_difference(_outputs(a), _outputs(b))}"
        for number, (a, b) in enumerate(code)
        if "timing" not in b.metadata.get("tags", []) and _outputs(a) != _outputs(b)
    ]
    assert not differences, f"{path.name} gave other outputs on a second run:\n" + "\n".join(
        differences
    )


def _shown_text(cell: nbformat.NotebookNode) -> str:
    """The text a reader sees of a cell's outputs: streams, and plain text without HTML."""
    texts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            texts.append(output.text)
        elif "data" in output and "text/html" not in output.data:
            texts.append(str(output.data.get("text/plain", "")))
    return "".join(texts)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_outputs_carry_no_colour_codes(path: Path, executed_notebooks):
    # A jaxpr shown by Jupyter's display (a bare expression) or printed without
    # `jax_pprint_use_color=False` comes out with terminal colour codes; outputs stay plain
    # text, as the prose quotes them and as a reader's terminal or Colab shows them.
    executed = nbformat.read(executed_notebooks[path], 4)
    coloured = [
        number for number, cell in enumerate(executed.cells)
        if cell.cell_type == "code" and "\x1b[" in _shown_text(cell)
    ]
    assert not coloured, f"{path.name}: cells {coloured} print terminal colour codes"
