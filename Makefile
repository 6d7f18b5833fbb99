# Two commands do everything on a fresh machine with Python 3.11+:
#   make serve   build the site and serve it at http://127.0.0.1:8000 with live reload
#   make test    run the whole test suite (models, build, errors, browser)
# The tiers of `make test` one at a time (tests/conftest.py sorts every test into one):
#   make test-unit     no browser, no site build: models, parsers, checks; under a minute
#   make test-site     builds: the real site once, and scratch sites for author mistakes
#   make test-browser  the built site in Chromium (see the `chromium` target)
VENV ?= .venv
PY := $(VENV)/bin/python
export NO_MKDOCS_2_WARNING := 1

.PHONY: serve test lint test-unit test-site test-browser chromium build zensical zensical-serve bench clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $@

# The browser tests' Chromium (tests/helpers.py finds it): $EXPLAINER_CHROMIUM if set, else
# Debian's /usr/bin/chromium, else Playwright's own. Only when none is configured or installed,
# and only on a Debian-like system, is Chromium installed with apt-get; elsewhere this says how.
chromium: $(VENV)/.installed
	@$(PY) tests/helpers.py; found=$$?; \
	if [ $$found = 1 ] && [ -f /etc/debian_version ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "Installing Debian's Chromium: apt-get install -y chromium"; \
	  apt-get update -qq && apt-get install -y -qq chromium; \
	else exit $$found; fi

serve: $(VENV)/.installed
	$(VENV)/bin/mkdocs serve --livereload -a 127.0.0.1:8000

# The tests run in one process per core (pytest-xdist; WORKERS=0 runs them all in this one). Each
# process starts on its share of the tests in their order, so a module's tests stay together and
# share its fixtures, and a process that runs out takes tests from the end of another's share.
WORKERS ?= auto
PYTEST := $(PY) -m pytest -n $(WORKERS) --dist worksteal

test: $(VENV)/.installed chromium lint
	$(PYTEST) $(PYTEST_ARGS)

# The pipeline's layers and no import circle (pyproject.toml's [tool.importlinter]); about a second.
lint: $(VENV)/.installed
	$(VENV)/bin/lint-imports

test-unit: $(VENV)/.installed
	$(PYTEST) -m unit $(PYTEST_ARGS)

test-site: $(VENV)/.installed
	$(PYTEST) -m site $(PYTEST_ARGS)

test-browser: $(VENV)/.installed chromium
	$(PYTEST) -m browser $(PYTEST_ARGS)

build: $(VENV)/.installed
	$(VENV)/bin/mkdocs build --strict

# The same site built by Zensical instead of MkDocs (explainer_gen/host_zensical.py), into site/.
zensical: $(VENV)/.installed
	$(PY) -m explainer_gen.host_zensical build

# The same with a server that rebuilds on every edit and reloads open pages, as `make serve` does.
zensical-serve: $(VENV)/.installed
	$(PY) -m explainer_gen.host_zensical serve -a 127.0.0.1:8000

bench: $(VENV)/.installed chromium
	$(PY) benchmarks/bench.py

clean:
	rm -rf site .cache
