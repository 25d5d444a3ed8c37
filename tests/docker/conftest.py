"""The `docker` marker, and a summary section with the figures the image tests measured."""

from collections.abc import Callable

import pytest

FIGURES = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "docker: builds and runs the Docker image with podman")
    config.stash[FIGURES] = []


@pytest.fixture(scope="session")
def report_figure(pytestconfig: pytest.Config) -> Callable[[str], None]:
    """Record a line for the end-of-run summary (shown even when every test passes)."""
    return pytestconfig.stash[FIGURES].append


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:  # type: ignore[no-untyped-def]
    figures = config.stash.get(FIGURES, [])
    if figures:
        terminalreporter.section("Docker image")
        for line in figures:
            terminalreporter.write_line(line)
