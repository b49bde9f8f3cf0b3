# Two commands set up everything on a fresh machine:
#   make run   - install what is missing, prepare the database, load the catalog, serve with a worker
#   make test  - install what is missing and run every test, plus ruff and mypy
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha256sum pyproject.toml | cut -c1-12)
NPM_STAMP := frontend/node_modules/.installed-$(shell sha256sum frontend/package-lock.json | cut -c1-12)
# esbuild bundles frontend/src/ into frontend/static/frontend/build/ (ignored by git).
ASSETS_STAMP := frontend/static/frontend/build/.built

.PHONY: run test deps system-deps python-deps npm-deps serving-deps lint

run: deps
	./scripts/run.sh

test: deps
	./scripts/test.sh

deps: system-deps python-deps npm-deps serving-deps

system-deps:
	./scripts/install-system-deps.sh

python-deps: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

# vLLM's CPU build, in .venv-serving (graders/serving/requirements.lock): serving tasks.
serving-deps:
	./scripts/install-serving-env.sh

npm-deps: $(ASSETS_STAMP)

$(NPM_STAMP): frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund
	touch $@

$(ASSETS_STAMP): $(NPM_STAMP) frontend/package.json $(wildcard frontend/src/*.js)
	cd frontend && npm run --silent build
	touch $@

lint: python-deps
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy .
