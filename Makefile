# The book's commands. Each creates .venv and installs requirements.txt first if needed.
#   make book   build the website, every notebook executed  -> _build/html/index.html, with the
#               Chinese edition (zh/) in _build/html/zh/, built from the same executed notebooks
#   make test   lint, then every test (notebooks executed with nbmake, the website built, every
#               notebook run again in an environment with Colab's package versions)
#   make lab    open the chapters in JupyterLab
#   make tidy   refresh the notebooks' set-up cells (book/ and templates/) from _config.yml
#               and requirements.txt, strip outputs, bring the Chinese pages' structure and code
#               in step with the English (tools.translation sync), and list the prose to
#               translate again (tools.translation check)
#   make install  only create .venv and install requirements.txt
#   make chromium  install Debian's Chromium for the website tests if missing (make test does)
#   make test-latest  early warning: the whole suite with the newest releases of every library
#                     the book teaches, jax and jaxlib included, in .venv-latest (not run by CI)
#   make test-under-load  every notebook executed (nbmake) while one busy process per CPU core
#                  competes: the asserts about timings must hold on a busy machine. Not part of
#                  make test (each notebook runs about twice as long).
#   make mutation  mutation testing (mutmut) of helpers/ and tools/ against their unit tests:
#                  the score and every surviving mutant; fails below 90%. Not part of make test:
#                  25 to 40 minutes on 2 busy CPU cores.
#
# Variables: PYTHON=/path/to/python3.13 (found by itself otherwise), TORCH_INDEX_URL=<a PyTorch
# wheel index> to take torch from there (https://download.pytorch.org/whl/cpu: the CPU build).

# The Python that CI and Colab run (.python-version says the same to pyenv and uv): python3.13
# on PATH (pyenv's shim finds it through .python-version), else a pyenv- or uv-installed one.
PYTHON_VERSION := $(shell cat .python-version)
ifeq ($(origin PYTHON),undefined)
PYTHON := $(firstword $(foreach candidate, python$(PYTHON_VERSION) python3 \
  $(wildcard $(HOME)/.pyenv/versions/$(PYTHON_VERSION).*/bin/python$(PYTHON_VERSION)) \
  $(wildcard $(HOME)/.local/share/uv/python/cpython-$(PYTHON_VERSION).*/bin/python$(PYTHON_VERSION)), \
  $(shell $(candidate) -c 'import sys; print(sys.executable) if "%d.%d" % sys.version_info[:2] == "$(PYTHON_VERSION)" else None' 2>/dev/null)))
endif
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
UV_PIN := $(shell grep -E '^uv==' requirements.txt)
TORCH_PIN := $(shell grep -E '^torch==' requirements.txt)
TORCH_INDEX_URL ?=
JUPYTERLAB := jupyterlab==4.6.6
# The browser the website tests drive (Debian's package `chromium`).
CHROMIUM ?= /usr/bin/chromium

define NO_PYTHON
Python $(PYTHON_VERSION) is needed (the version CI and Colab run) and none was found.
Install it (pyenv install $(PYTHON_VERSION), uv python install $(PYTHON_VERSION), or your
system's package), or name one: make PYTHON=/path/to/python$(PYTHON_VERSION) ...
endef
export NO_PYTHON

# Creates (or, when it holds another Python, recreates) the environment $(1) and installs
# requirements.txt into it with uv.
define make_venv
	@test -n "$(PYTHON)" || { echo "$$NO_PYTHON" >&2; exit 1; }
	@$(1)/bin/python -c 'import sys; sys.exit("%d.%d" % sys.version_info[:2] != "$(PYTHON_VERSION)")' \
	  2>/dev/null || { rm -rf $(1) && echo "Creating $(1) with $(PYTHON)" && $(PYTHON) -m venv $(1); }
	$(1)/bin/python -m pip install --quiet --disable-pip-version-check "$(UV_PIN)"
	$(if $(TORCH_INDEX_URL),$(1)/bin/uv pip install --python $(1)/bin/python \
	  --index-url $(TORCH_INDEX_URL) "$(TORCH_PIN)")
	$(1)/bin/uv pip install --quiet --python $(1)/bin/python -r requirements.txt
endef

$(INSTALLED): requirements.txt pyproject.toml .python-version
	$(call make_venv,$(VENV))
	touch $@

install: $(INSTALLED)

.PHONY: book test test-under-load test-latest lab tidy install chromium clean mutation


book: $(INSTALLED)
	$(BIN)/jupyter-book build . -W -n --keep-going
	$(BIN)/python -m tools.zh_site _build
	@echo "Open $(CURDIR)/_build/html/index.html in a browser (the Chinese edition: _build/html/zh/index.html)."

test: $(INSTALLED) chromium
	$(BIN)/ruff check helpers tools tests book _ext benchmarks templates conftest.py
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest

test-under-load: $(INSTALLED)
	$(BIN)/python -m pytest --under-load book

chromium:
	@if [ -x "$(CHROMIUM)" ]; then exit 0; fi; \
	if [ "$(CHROMIUM)" != /usr/bin/chromium ]; then \
	  echo "CHROMIUM=$(CHROMIUM) does not exist." >&2; exit 1; fi; \
	if [ "$$(id -u)" = 0 ]; then SUDO=; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
	else echo "The website tests need Chromium at /usr/bin/chromium, and installing it needs" \
	  "root: run 'sudo apt-get install chromium' (Debian), or make test CHROMIUM=/path/to/it." >&2; \
	  exit 1; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then \
	  echo "No apt-get here: install Chromium yourself and run make test CHROMIUM=/path/to/it." >&2; \
	  exit 1; fi; \
	echo "Installing Debian's chromium for the website tests (apt-get, as root)."; \
	$$SUDO apt-get update -qq && \
	$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core fonts-wqy-microhei && \
	test -x "$(CHROMIUM)" || { echo "Installing chromium did not provide $(CHROMIUM)." >&2; exit 1; }

# The same tests against the newest releases of the libraries the book teaches (jax and jaxlib
# included) and of numpy, matplotlib and torch, so a breaking release shows up here before
# readers meet it.
LATEST := .venv-latest
test-latest: chromium
	$(call make_venv,$(LATEST))
	$(LATEST)/bin/uv pip install --quiet --python $(LATEST)/bin/python --upgrade \
	  jax jaxlib flax optax orbax-checkpoint numpy matplotlib tqdm torch
	$(LATEST)/bin/uv pip list --python $(LATEST)/bin/python 2>/dev/null | \
	  grep -iE '^(jax|jaxlib|flax|optax|orbax-checkpoint|numpy|matplotlib|torch) '
	$(LATEST)/bin/ruff check helpers tools tests book _ext benchmarks templates conftest.py
	CHROMIUM=$(CHROMIUM) $(LATEST)/bin/python -m pytest

# Each mutant of helpers/ (not lm.py) and tools/ against the unit tests that call the mutated
# function (pyproject.toml, [tool.mutmut]); mutants/ is rebuilt from scratch every time.
mutation: $(INSTALLED)
	rm -rf mutants
	$(BIN)/mutmut run --max-children 2
	$(BIN)/mutmut results
	$(BIN)/mutmut export-cicd-stats
	$(BIN)/python -m tools.mutation_score mutants/mutmut-cicd-stats.json --minimum 90

lab: $(INSTALLED)
	$(BIN)/uv pip install --quiet --python $(BIN)/python $(JUPYTERLAB)
	$(BIN)/jupyter lab book

tidy: $(INSTALLED)
	$(BIN)/python -m tools.notebooks
	$(BIN)/python -m tools.translation sync
	-$(BIN)/python -m tools.translation check

clean:
	rm -rf _build
