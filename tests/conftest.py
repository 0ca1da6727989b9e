"""Shared fixtures and the session set-up for every test, notebooks included."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

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


def pytest_configure(config: pytest.Config) -> None:
    """Make every Jupyter kernel this session starts (nbmake's too) apply ``_KERNEL_STARTUP``.

    IPython runs the files in ``$IPYTHONDIR/profile_default/startup`` when a kernel starts, and
    kernels inherit this process's environment. Only the tests do this: a reader's Jupyter is
    left alone.
    """
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has set it up
        return
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


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (where ``_config.yml`` and ``_toc.yml`` live)."""
    return ROOT


@pytest.fixture(scope="session")
def helpers_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel of this checkout's ``helpers`` package, built offline."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(out), str(ROOT)],
        check=True,
    )
    (wheel,) = out.glob("*.whl")
    return wheel


@pytest.fixture(scope="session")
def built_site() -> Path:
    """Build the whole website once per test session, as `make book` does; its HTML folder.

    The build executes every notebook, treats warnings as errors (``-W -n --keep-going``) and
    writes under ``_build/test-site`` so that it never touches a reader's ``_build/html``.

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
    result = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), "--path-output",
         str(out), "-W", "-n", "--keep-going"],
        capture_output=True, text=True, cwd=ROOT,
    )
    log = result.stdout + result.stderr
    (ROOT / "_build" / "test-site.log").write_text(log, encoding="utf-8")
    # Sphinx writes its warnings and errors as "WARNING: ..." and "ERROR: ...". The kernels'
    # own log lines are not the book's: ipykernel's "WARNING |" start-up chatter, and a
    # kernel's "ERROR:tornado..." traceback when it shuts down after its notebook has run (a
    # notebook that fails stops the build with a non-zero status, checked first).
    problems = [
        line for line in log.splitlines()
        if "WARNING: " in line or "ERROR: " in line or "CRITICAL: " in line
    ]
    if result.returncode != 0 or problems:
        details = "\n".join(problems)[-5000:] or log[-5000:]
        pytest.fail(f"jupyter-book build failed (full log: _build/test-site.log):\n{details}")
    return out / "_build" / "html"
