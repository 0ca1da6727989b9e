# The book's commands. Each creates .venv and installs requirements.txt first if needed.
#   make book   build the website, every notebook executed  -> _build/html/index.html
#   make test   lint, then every test (notebooks executed with nbmake, the website built)
#   make lab    open the chapters in JupyterLab
#   make tidy   refresh the notebooks' set-up cells from _config.yml and strip outputs
#   make install  only create .venv and install requirements.txt

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
JUPYTERLAB := jupyterlab==4.6.6

.PHONY: book test lab tidy install clean

$(INSTALLED): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed: run make with PYTHON=python3.11")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

install: $(INSTALLED)

book: $(INSTALLED)
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo "Open $(CURDIR)/_build/html/index.html in a browser."

test: $(INSTALLED)
	$(BIN)/ruff check helpers tests book
	$(BIN)/python -m pytest

lab: $(INSTALLED)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check $(JUPYTERLAB)
	$(BIN)/jupyter lab book

tidy: $(INSTALLED)
	$(BIN)/python -m helpers.notebooks

clean:
	rm -rf _build
