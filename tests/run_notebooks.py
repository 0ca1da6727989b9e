"""Execute notebooks one after another in one kind of kernel, each into a folder.

    python tests/run_notebooks.py --kernel python3 --timeout 300 --out DIR a.ipynb b.ipynb ...

The tests (``conftest.py``'s ``NotebookLane``) start one such process for the reproducibility
run and one for the Colab run, so the two execute side by side. For each notebook it writes
``DIR/<stem>.ipynb`` (executed) or ``DIR/<stem>.error`` (why it failed), each file complete
when it appears (written under another name, then renamed).
"""

from __future__ import annotations

import argparse
import os
import traceback
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def _publish(target: Path, text: str) -> None:
    partial = target.with_name(target.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, target)


def run(path: Path, kernel: str, timeout: int, out: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, kernel_name=kernel, timeout=timeout,
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except CellExecutionError as error:
        _publish(out / f"{path.stem}.error", str(error))
    except Exception:  # a dead kernel, a timeout: the test reports it, the next notebook runs
        _publish(out / f"{path.stem}.error", traceback.format_exc())
    else:
        _publish(out / f"{path.stem}.ipynb", nbformat.writes(notebook))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--timeout", type=int, required=True, help="seconds per cell")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for path in args.notebooks:
        run(path.resolve(), args.kernel, args.timeout, args.out)


if __name__ == "__main__":
    main()
