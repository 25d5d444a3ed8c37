# The two commands of the README, and the checks CI runs.
VENV ?= .venv
SOURCES := pyproject.toml setup.py scripts/install.sh $(wildcard core/*/*.c core/*/*/*.c tests/interop/package-lock.json)

.PHONY: serve test lint bench openapi

$(VENV)/.installed: $(SOURCES)
	scripts/install.sh --dev
	touch $@

serve: $(VENV)/.installed
	$(VENV)/bin/cipherd serve

test: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/python -m pytest

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

openapi: $(VENV)/.installed
	$(VENV)/bin/cipherd openapi > openapi.yaml
