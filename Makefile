# The book's commands. Each creates .venv and installs requirements.txt first if needed.
#   make book   build the website, every notebook executed  -> _build/html/index.html
#   make test   lint, then every test (notebooks executed with nbmake, the website built)
#   make lab    open the chapters in JupyterLab
#   make tidy   refresh the notebooks' set-up cells from _config.yml and strip outputs
#   make install  only create .venv and install requirements.txt
#   make chromium  install Debian's Chromium for the website tests if missing (make test does)
#   make test-latest  early warning: the whole suite with the newest flax, optax, orbax and
#                     matplotlib that the pinned jax allows, in .venv-latest (not run by CI)

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
JUPYTERLAB := jupyterlab==4.6.6
# The browser the website tests drive (Debian's package `chromium`).
CHROMIUM ?= /usr/bin/chromium

.PHONY: book test test-latest lab tidy install chromium clean

$(INSTALLED): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed: run make with PYTHON=python3.11")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

install: $(INSTALLED)

book: $(INSTALLED)
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo "Open $(CURDIR)/_build/html/index.html in a browser."

test: $(INSTALLED) chromium
	$(BIN)/ruff check helpers tests book _ext benchmarks
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest

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
	$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core && \
	test -x "$(CHROMIUM)" || { echo "Installing chromium did not provide $(CHROMIUM)." >&2; exit 1; }

# The same tests against the newest releases of the libraries the book teaches, with jax and
# jaxlib held at their pins, so a breaking release shows up here before readers meet it.
LATEST := .venv-latest
test-latest: chromium
	test -x $(LATEST)/bin/python || $(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	grep -E '^(jax|jaxlib)==' requirements.txt > $(LATEST)/jax-pins.txt
	$(LATEST)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade \
	  -c $(LATEST)/jax-pins.txt flax optax orbax-checkpoint matplotlib
	$(LATEST)/bin/python -m pip list 2>/dev/null | grep -iE '^(jax|jaxlib|flax|optax|orbax-checkpoint|matplotlib) '
	$(LATEST)/bin/ruff check helpers tests book _ext benchmarks
	CHROMIUM=$(CHROMIUM) $(LATEST)/bin/python -m pytest

lab: $(INSTALLED)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check $(JUPYTERLAB)
	$(BIN)/jupyter lab book

tidy: $(INSTALLED)
	$(BIN)/python -m helpers.notebooks

clean:
	rm -rf _build
