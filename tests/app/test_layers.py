"""The layers' import rules, read from the source: data flows one way, and only `app/http`
knows the web framework.

Every `import` and `from ... import` in a module counts, wherever it stands (inside a function
too), and a relative import is resolved against the module's package.
"""

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WEB = ("fastapi", "starlette", "uvicorn")


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package.replace(".", "/")).rglob("*.py"))


def _imports(path: Path) -> Iterator[str]:
    """The absolute names of the modules `path` imports."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                yield ".".join([*base, node.module] if node.module else base)
            else:
                assert node.module is not None
                yield node.module


def _violations(paths: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in paths
        for name in _imports(path)
        if any(name == banned or name.startswith(banned + ".") for banned in forbidden)
    ]


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("core", ("app",)),
        ("app.ops", (*WEB, "app.http", "app.routers")),
        ("app.store", (*WEB, "app.http", "app.routers", "app.ops")),
        ("app.routers", ("core", "app.store")),
    ],
)
def test_package_imports(package: str, forbidden: tuple[str, ...]) -> None:
    assert _modules(package), package
    assert _violations(_modules(package), forbidden) == []


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        ("app/settings.py", ("app",)),
        ("app/cli.py", ("app.routers", "app.http")),
    ],
)
def test_module_imports(module: str, forbidden: tuple[str, ...]) -> None:
    assert _violations([ROOT / module], forbidden) == []


def test_the_reader_finds_what_it_must() -> None:
    """The rules' reader sees imports inside functions and resolves relative ones."""
    names = set(_imports(ROOT / "app" / "cli.py"))
    assert {"app.settings", "app.main", "app.ops"} <= names
    assert _violations([ROOT / "app" / "main.py"], ("app.http",)) != []
