# Two commands do everything on a fresh machine with Python 3.11+:
#   make serve   build the site and serve it at http://127.0.0.1:8000 with live reload
#   make test    run the whole test suite (models, build, errors, browser)
VENV ?= .venv
PY := $(VENV)/bin/python
export NO_MKDOCS_2_WARNING := 1

.PHONY: serve test build bench clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $@

# Debian's Chromium drives the browser tests; Playwright cannot download its own here.
/usr/bin/chromium:
	@if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
	else echo "Install Chromium first: sudo apt-get install -y chromium" >&2; exit 1; fi

serve: $(VENV)/.installed
	$(VENV)/bin/mkdocs serve --livereload -a 127.0.0.1:8000

test: $(VENV)/.installed /usr/bin/chromium
	$(PY) -m pytest $(PYTEST_ARGS)

build: $(VENV)/.installed
	$(VENV)/bin/mkdocs build --strict

bench: $(VENV)/.installed /usr/bin/chromium
	$(PY) benchmarks/bench.py

clean:
	rm -rf site .cache
