# The two commands of the README, and the checks CI runs.
VENV ?= .venv
SOURCES := pyproject.toml setup.py scripts/install.sh $(wildcard core/*/*.c core/*/*/*.c tests/interop/package-lock.json)

.PHONY: serve test lint openapi

$(VENV)/.installed: $(SOURCES)
	scripts/install.sh --dev
	touch $@

serve: $(VENV)/.installed
	$(VENV)/bin/cipherd serve

# Every test, with 100 % line coverage of the functional-encryption library required.
test: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/python -m pytest --cov=core/fe --cov-report=term-missing:skip-covered \
		--cov-fail-under=100

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

openapi: $(VENV)/.installed
	$(VENV)/bin/cipherd openapi > openapi.yaml
