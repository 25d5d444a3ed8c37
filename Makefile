# The two commands of the README, and the checks CI runs.
VENV ?= .venv
# `make serve`'s environment: the runtime install alone (no test dependencies, no Node.js).
SERVE_VENV ?= .venv-serve
SOURCES := pyproject.toml client/pyproject.toml client/VERSION constraints.txt setup.py \
	scripts/install.sh $(wildcard core/*/*.c core/*/*/*.c tests/interop/package-lock.json)

.PHONY: serve test lint openapi settings-page lock

$(VENV)/.installed: $(SOURCES)
	scripts/install.sh --dev
	touch $@

$(SERVE_VENV)/.installed: $(SOURCES)
	CIPHERD_VENV=$(SERVE_VENV) scripts/install.sh
	touch $@

# Host and port from CIPHERD_HOST and CIPHERD_PORT (default 127.0.0.1:8000).
serve: $(SERVE_VENV)/.installed
	$(SERVE_VENV)/bin/cipherd serve

# Every test in two processes (both cores): first the functional-encryption library's own, with
# 100 % line coverage of it required, then the others without the coverage tracer (it slowed
# them by about two thirds), then alone the tests marked serial (they stop the machine's
# PostgreSQL). The slowest tests are listed at the end, to see where the run's time goes.
test: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/python -m pytest -n 2 tests/core/fe --cov=core/fe \
		--cov-report=term-missing:skip-covered --cov-fail-under=100
	$(VENV)/bin/python -m pytest -n 2 --dist loadgroup -m "not serial" --ignore=tests/core/fe \
		--durations=30 --no-cov
	$(VENV)/bin/python -m pytest -m serial --no-cov

# ruff (style and lints), mypy (types, configured in pyproject.toml) and the documentation site,
# built offline into build/site: a broken link or anchor fails it (mkdocs.yml).
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir build/site

openapi: $(VENV)/.installed
	$(VENV)/bin/cipherd openapi > openapi.yaml

# docs/configuration.md, from the descriptions of the settings in app/settings/.
settings-page: $(VENV)/.installed
	$(VENV)/bin/python scripts/settings_page.py > docs/configuration.md

# Renews constraints.txt: the newest releases pyproject.toml allows (tests and benchmarks
# included), installed into a scratch environment. Run the tests before committing the result.
lock:
	rm -rf build/lock-venv
	CIPHERD_VENV=build/lock-venv CIPHERD_CONSTRAINTS= scripts/install.sh --dev
	build/lock-venv/bin/python -m pip install -q -e '.[bench]'
	( echo "# Written by \`make lock\`: the versions scripts/install.sh installs."; \
	  build/lock-venv/bin/python -m pip freeze --exclude-editable | grep -v '^petrelic' ) > constraints.txt
	rm -rf build/lock-venv
