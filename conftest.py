"""Shared fixtures and the session set-up for every test, notebooks included.

It lives at the repository root so that every pytest run loads it, whatever it runs: `make
test`, one chapter (`pytest book/NN_name.ipynb`) or `make test-under-load` (`pytest
--under-load book`).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import nbformat
import pytest
import yaml
from colab import ColabRuntime
from colab import colab_runtime as make_colab_runtime
from nbmake.nb_run import NotebookRun

from tools.notebooks import cell_timeout, chapter_notebooks, read_config
from tools.zh_site import build_chinese_site

ROOT = Path(__file__).resolve().parent
CELL_TIMEOUT = cell_timeout(ROOT / "_config.yml")
# Each notebook as nbmake executed it in this test session; the website is built from these.
EXECUTED = ROOT / "_build" / "executed"
# What the executor records in an executed notebook's metadata: run time, when, and whether
# it ran through (read by the execution-status page, `_ext/execution_status.py`).
RUN_RECORD = "book_run"

# Warnings that fail a notebook run: deprecations raised by the libraries the book teaches,
# and any deprecation triggered directly by a notebook's own code (`__main__`), which is
# where JAX attributes the use of a deprecated API.
_KERNEL_STARTUP = '''\
import os
import warnings

# Figures are shown inline, as in Jupyter and on the website, whatever backend this test
# process draws with (Agg, below): the website build and every notebook test see the same
# outputs.
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"

for _category in (DeprecationWarning, FutureWarning):
    warnings.filterwarnings(
        "error", category=_category, module=r"(jax|jaxlib|flax|optax|orbax)(\\.|$)"
    )
    warnings.filterwarnings("error", category=_category, module="__main__")
'''


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--under-load", action="store_true",
        help="keep one busy process per CPU core running for the whole session (make "
             "test-under-load): every notebook's asserts must hold on a busy machine",
    )


def _keep_the_cores_busy(config: pytest.Config) -> None:
    """One process per core that computes forever, stopped when the session ends."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(cores or 1)]

    def stop() -> None:
        for process in busy:
            process.kill()
            process.wait()

    config.add_cleanup(stop)


def pytest_configure(config: pytest.Config) -> None:
    """Make every Jupyter kernel this session starts (nbmake's too) apply ``_KERNEL_STARTUP``.

    IPython runs the files in ``$IPYTHONDIR/profile_default/startup`` when a kernel starts, and
    kernels inherit this process's environment. Only the tests do this: a reader's Jupyter is
    left alone.
    """
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has set it up
        return
    if config.getoption("under_load"):
        _keep_the_cores_busy(config)
    if "--nbmake-timeout" not in " ".join(config.invocation_params.args):
        config.option.nbmake_timeout = CELL_TIMEOUT
    shutil.rmtree(EXECUTED, ignore_errors=True)  # only this session's runs count
    NotebookRun.execute = _keeping_the_executed_notebook(NotebookRun.execute)
    ipython_dir = ROOT / "_build" / "test-ipython"
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-fail-on-deprecations.py").write_text(_KERNEL_STARTUP, encoding="utf-8")
    os.environ["IPYTHONDIR"] = str(ipython_dir)
    # This process draws with a non-interactive backend, never a window (kernels: see above).
    os.environ.setdefault("MPLBACKEND", "Agg")
    # On a GPU, JAX reserves most of its memory for the first process that uses it; the tests
    # run kernels one after another while this process has used JAX too, so each takes only
    # what it needs. (No effect on a CPU.)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def _keeping_the_executed_notebook(execute):
    """nbmake's ``NotebookRun.execute``, also saving the executed notebook under ``EXECUTED``.

    The website and the checks that read outputs use that copy, so each notebook is executed
    once per test session (nbmake has no hook for this; its ``--overwrite`` would write outputs
    into ``book/``).
    """
    if getattr(execute, "keeps_executed", False):
        return execute

    @functools.wraps(execute)
    def run(self: NotebookRun):
        start = time.perf_counter()
        result = execute(self)
        result.nb.metadata[RUN_RECORD] = {
            "runtime": round(time.perf_counter() - start, 2),
            "mtime": time.time(),
            "succeeded": result.error is None,
            "error": result.error.summary if result.error else None,
        }
        source = Path(self.filename).resolve()
        if source.is_relative_to(ROOT):
            target = EXECUTED / source.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(result.nb, target)
        return result

    run.keeps_executed = True
    return run


class ExecutedNotebooks:
    """The executed copy of each chapter notebook, by source path, made on first request.

    The notebook tests (nbmake, collected first) leave one for every notebook; a notebook they
    did not run in this session (a test file run on its own) is executed when asked for, by the
    same executor. A notebook that failed fails the test that needs its outputs, naming it.
    """

    def __init__(self, finished_build: Path | None = None):
        self.finished_build = finished_build

    def __getitem__(self, source: Path) -> Path:
        source = Path(source).resolve()
        if self.finished_build is not None:  # BOOK_SITE: the copies that build executed
            return self.finished_build / "jupyter_execute" / source.relative_to(ROOT)
        copy = EXECUTED / source.relative_to(ROOT)
        if not copy.exists():
            NotebookRun(source, CELL_TIMEOUT).execute()
        record = nbformat.read(copy, as_version=4).metadata[RUN_RECORD]
        if not record["succeeded"]:
            pytest.fail(f"{source.relative_to(ROOT)} failed when executed: {record['error']}")
        return copy

    def get(self, source: Path) -> Path | None:
        """The executed copy, or None for a page that is not a chapter notebook."""
        return self[source] if Path(source).resolve() in chapter_notebooks(ROOT) else None

    def every_chapter(self) -> dict[Path, Path]:
        return {path: self[path] for path in chapter_notebooks(ROOT)}


@pytest.fixture(scope="session")
def executed_notebooks() -> ExecutedNotebooks:
    """Each chapter notebook as executed in this session (see ``ExecutedNotebooks``); with
    ``BOOK_SITE`` set (see ``built_site``), as that finished build executed it."""
    if os.environ.get("BOOK_SITE"):
        return ExecutedNotebooks(Path(os.environ["BOOK_SITE"]).resolve().parent)
    return ExecutedNotebooks()


def _site_sources(executed: dict[Path, Path]) -> Path:
    """The book's sources with the executed notebooks in place, and execution turned off."""
    stage = ROOT / "_build" / "test-source"
    shutil.rmtree(stage, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")
    for folder in ("book", "_ext"):
        shutil.copytree(ROOT / folder, stage / folder, ignore=ignore)
    shutil.copy(ROOT / "_toc.yml", stage / "_toc.yml")
    config = read_config(ROOT / "_config.yml")
    config["execute"]["execute_notebooks"] = "off"
    (stage / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    for source, copy in executed.items():
        shutil.copy(copy, stage / source.relative_to(ROOT))
    return stage


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (where ``_config.yml`` and ``_toc.yml`` live)."""
    return ROOT


def _helpers_wheel(out: Path) -> Path:
    """A wheel of this checkout's ``helpers`` package, built offline into ``out``."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(out), str(ROOT)],
        check=True,
    )
    (wheel,) = out.glob("*.whl")
    return wheel


class NotebookLane:
    """Notebooks executed one after another by a process of their own (tests/run_notebooks.py),
    while the tests go on; ``executed(path)`` waits for one notebook's result."""

    def __init__(self, notebooks: list[Path], kernel: str, out: Path,
                 env: dict[str, str] | None = None):
        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        self.log = out / "runner.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(ROOT / "tests" / "run_notebooks.py"), "--kernel", kernel,
                 "--timeout", str(CELL_TIMEOUT), "--out", str(out), *map(str, notebooks)],
                stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
            )

    def executed(self, path: Path) -> nbformat.NotebookNode:
        """The notebook at ``path`` as this lane executed it; the test fails with the cell's
        error if it failed, or with the runner's log if the runner stopped before it."""
        done, failed = self.out / f"{path.stem}.ipynb", self.out / f"{path.stem}.error"
        while True:
            finished = self.process.poll() is not None  # looked at before the files
            if done.exists():
                return nbformat.read(done, as_version=4)
            if failed.exists():
                pytest.fail(f"{path.name} failed:\n{failed.read_text(encoding='utf-8')}")
            if finished:
                log = self.log.read_text(encoding="utf-8")[-3000:]
                pytest.fail(f"the notebook runner stopped (exit status "
                            f"{self.process.returncode}) before {path.name}:\n{log}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


class SecondRun:
    """The second execution of the chapter notebooks, on Colab's runtime (``tests/colab.py``).

    One run serves two tests: ``test_colab.py`` (every notebook runs on Colab's versions, after
    its set-up cell) and ``test_reproducible.py`` (a second execution gives the outputs of the
    first, nbmake's). It starts as soon as the tests are collected (``pytest_collection_finish``)
    and goes on beside nbmake's run, so each notebook competes with another for the cores in
    both runs: their asserts must hold on a busy machine, and their outputs must not depend on
    it. Building the runtime happens first, before any test; an error there fails the tests
    that need the run, with its message.
    """

    def __init__(self, notebooks: list[Path], where: Path):
        self.runtime: ColabRuntime | None = None
        self.lane: NotebookLane | None = None
        self.error: str | None = None
        try:
            wheel = _helpers_wheel(where / "wheel")
            self.runtime = make_colab_runtime(where / "colab", wheel, {})
            if notebooks:
                self.lane = NotebookLane(notebooks, self.runtime.kernel, where / "runs",
                                         self.runtime.env)
        except Exception as error:  # any failure: the tests that need the run report it
            self.error = "".join(traceback.format_exception(error))[-5000:]

    def colab_runtime(self) -> ColabRuntime:
        if self.error is not None:
            pytest.fail(f"Colab's runtime could not be built:\n{self.error}")
        return self.runtime

    def executed(self, path: Path) -> nbformat.NotebookNode:
        """The notebook at ``path`` as the second run executed it (waiting for it)."""
        self.colab_runtime()
        assert self.lane is not None, "no notebook test was collected: the run has no lane"
        return self.lane.executed(path)

    def stop(self) -> None:
        if self.lane is not None:
            self.lane.stop()


_SECOND_RUN = pytest.StashKey[SecondRun]()
# The tests that read the second run: the notebooks of their parameters are the ones it runs.
SECOND_RUN_TESTS = ("test_the_notebook_runs_on_colab", "test_a_second_run_gives_the_same_outputs")


def _collected(session: pytest.Session, test_names: tuple[str, ...]) -> list[Path]:
    """The notebooks of the collected tests called one of ``test_names`` (parametrized by
    ``path``), in reading order."""
    paths = {item.callspec.params["path"] for item in session.items
             if getattr(item, "originalname", None) in test_names}
    return [path for path in chapter_notebooks(ROOT) if path in paths]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the second run (``SecondRun``) if a test that needs it, or Colab's runtime, was
    collected."""
    config = session.config
    wanted = {"test_the_setup_cell_brings_colab_to_the_pinned_versions", *SECOND_RUN_TESTS}
    if hasattr(config, "workerinput") or not any(
        getattr(item, "originalname", None) in wanted for item in session.items
    ):
        return
    where = Path(tempfile.mkdtemp(prefix="second-run-"))
    second_run = SecondRun(_collected(session, SECOND_RUN_TESTS), where)
    config.stash[_SECOND_RUN] = second_run

    def clean_up() -> None:
        second_run.stop()
        shutil.rmtree(where, ignore_errors=True)

    config.add_cleanup(clean_up)



@pytest.fixture(scope="session")
def second_run(request: pytest.FixtureRequest) -> SecondRun:
    """The second execution of the notebooks, on Colab's runtime (see ``SecondRun``)."""
    return request.config.stash[_SECOND_RUN]


@pytest.fixture(scope="session")
def colab_runtime(second_run: SecondRun) -> ColabRuntime:
    """Colab's package versions in a fresh environment, after a set-up cell ran there
    (``tests/colab.py``)."""
    return second_run.colab_runtime()


@pytest.fixture(scope="session")
def built_site(executed_notebooks: ExecutedNotebooks) -> Path:
    """The whole website, built once per test session as `make book` builds it; its HTML folder
    (the Chinese edition in its ``zh/`` folder).

    It is built from the notebooks this session executed (``executed_notebooks``), with
    execution turned off, so no notebook runs twice; warnings are errors (``-W -n
    --keep-going``). It is written under ``_build/test-site``, never a reader's ``_build/html``.

    With ``BOOK_SITE`` set to the HTML folder of a finished build (``_build/html`` after
    ``make book``), that site is tested as it is, without building it again.
    """
    if os.environ.get("BOOK_SITE"):
        site = Path(os.environ["BOOK_SITE"]).resolve()
        if not (site / "index.html").is_file():
            pytest.fail(f"BOOK_SITE={site} is not the HTML folder of a built site")
        return site
    out = ROOT / "_build" / "test-site"
    shutil.rmtree(out, ignore_errors=True)
    sources = _site_sources(executed_notebooks.every_chapter())
    result = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build", str(sources),
         "--path-output", str(out), "-W", "-n", "--keep-going"],
        capture_output=True, text=True, cwd=ROOT,
    )
    _fail_on_build_problems(result, ROOT / "_build" / "test-site.log")
    # The Chinese edition, from the notebooks the English build rendered, into html/zh.
    _fail_on_build_problems(build_chinese_site(ROOT, out / "_build"),
                            ROOT / "_build" / "test-site-zh.log")
    return out / "_build" / "html"


def _fail_on_build_problems(result: subprocess.CompletedProcess, log_file: Path) -> None:
    """Fail the test that needs the website if its build failed or warned (the log is saved
    to ``log_file``)."""
    log = result.stdout + result.stderr
    log_file.write_text(log, encoding="utf-8")
    problems = [
        line for line in log.splitlines()
        if "WARNING: " in line or "ERROR: " in line or "CRITICAL: " in line
    ]
    if result.returncode != 0 or problems:
        details = "\n".join(problems)[-5000:] or log[-5000:]
        pytest.fail(f"jupyter-book build failed (full log: {log_file.relative_to(ROOT)}):"
                    f"\n{details}")
