# The two commands of the README, and the checks CI runs.
VENV ?= .venv
# `make serve`'s environment: the runtime install alone (no test dependencies, no Node.js).
SERVE_VENV ?= .venv-serve
SOURCES := pyproject.toml constraints.txt setup.py scripts/install.sh $(wildcard core/*/*.c core/*/*/*.c tests/interop/package-lock.json)

.PHONY: serve test lint openapi lock

$(VENV)/.installed: $(SOURCES)
	scripts/install.sh --dev
	touch $@

$(SERVE_VENV)/.installed: $(SOURCES)
	CIPHERD_VENV=$(SERVE_VENV) scripts/install.sh
	touch $@

# Host and port from CIPHERD_HOST and CIPHERD_PORT (default 127.0.0.1:8000).
serve: $(SERVE_VENV)/.installed
	$(SERVE_VENV)/bin/cipherd serve

# Every test, with 100 % line coverage of the functional-encryption library required.
test: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/python -m pytest --cov=core/fe --cov-report=term-missing:skip-covered \
		--cov-fail-under=100

# ruff (style and lints) and mypy (types, configured in pyproject.toml).
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

openapi: $(VENV)/.installed
	$(VENV)/bin/cipherd openapi > openapi.yaml

# Renews constraints.txt: the newest releases pyproject.toml allows (tests and benchmarks
# included), installed into a scratch environment. Run the tests before committing the result.
lock:
	rm -rf build/lock-venv
	CIPHERD_VENV=build/lock-venv CIPHERD_CONSTRAINTS= scripts/install.sh --dev
	build/lock-venv/bin/python -m pip install -q -e '.[bench]'
	( echo "# Written by \`make lock\`: the versions scripts/install.sh installs."; \
	  build/lock-venv/bin/python -m pip freeze --exclude-editable | grep -v '^petrelic' ) > constraints.txt
	rm -rf build/lock-venv
