"""The layers' import rules, read from the source: data flows one way, only `app/http` knows the
web framework (and only one module of it the framework's internals, as one module of
`app/server` knows uvicorn), and the client (`client/cipherd`, its own distribution) stands apart
from the service and the library. And no module of the service grows past 500 lines.

Every `import` and `from ... import` in a module counts, wherever it stands (inside a function
too), and a relative import is resolved against the module's package.
"""

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "client"
WEB = ("fastapi", "starlette", "uvicorn")
# What the service's distribution brings and the client's must not need.
SERVER_ONLY = (
    *WEB,
    "app",
    "core",
    "pydantic",
    "pydantic_settings",
    "psycopg",
    "psycopg_pool",
    "petrelic",
    "mclbn256",
    "numpy",
    "cffi",
    "coincurve",
    "cryptography",
    "nacl",
    "Crypto",
    "pkcs11",
    "prometheus_client",
    "yaml",
)
# The client's module that runs the library, installed with the extra `cipherd-client[fe]`.
FE_EXTRA = CLIENT / "cipherd" / "fe_local.py"


def _modules(package: str, root: Path = ROOT) -> list[Path]:
    return sorted((root / package.replace(".", "/")).rglob("*.py"))


def _imports(path: Path) -> Iterator[str]:
    """The absolute names of the modules `path` imports."""
    root = CLIENT if path.is_relative_to(CLIENT) else ROOT
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
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
        ("core", ("app", "cipherd")),
        ("app.ops", (*WEB, "app.http", "app.routers")),
        ("app.store", (*WEB, "app.http", "app.routers", "app.ops")),
        ("app.routers", ("core", "app.store")),
        # The console is pages that call the public API from the browser: its Python side only
        # serves their files, and reaches into no layer of the service.
        ("app.http.console", ("core", "app.ops", "app.store", "app.routers", "app.server")),
    ],
)
def test_package_imports(package: str, forbidden: tuple[str, ...]) -> None:
    assert _modules(package), package
    assert _violations(_modules(package), forbidden) == []


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        # The audit trail's parts, each on those before it: record, chain, mover, writer.
        ("app/ops/audit/record.py", ("app.ops.audit",)),
        ("app/ops/audit/chain.py", ("app.ops.audit.mover", "app.ops.audit.writer")),
        ("app/ops/audit/mover.py", ("app.ops.audit.writer", "app.ops.audit.query")),
        ("app/ops/audit/query.py", ("app.ops.audit.mover", "app.ops.audit.writer")),
    ],
)
def test_module_imports(module: str, forbidden: tuple[str, ...]) -> None:
    assert _violations([ROOT / module], forbidden) == []


def test_the_settings_import_nothing_else_of_the_service() -> None:
    """The settings' modules import one another and nothing else of app: every layer reads them."""
    assert _modules("app.settings")
    found = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules("app.settings")
        for name in _imports(path)
        if name.split(".")[0] == "app" and name.split(".")[:2] != ["app", "settings"]
    ]
    assert found == []


def test_the_client_needs_nothing_of_the_service() -> None:
    """The client imports no module of the service's distribution, except the library from the
    module of the `fe` extra."""
    modules = _modules("cipherd", CLIENT)
    assert FE_EXTRA in modules
    others = [path for path in modules if path != FE_EXTRA]
    assert _violations(others, SERVER_ONLY) == []
    assert _violations([FE_EXTRA], tuple(m for m in SERVER_ONLY if m != "core")) == []


def test_only_the_command_line_of_the_service_uses_the_client() -> None:
    """The service's layers never call the client: only its commands join the client's."""
    users = [path for path in _modules("app") if _violations([path], ("cipherd",))]
    assert users == [ROOT / "app" / "cli" / "__init__.py"]


def test_the_commands_call_the_verbs_not_the_http_layer() -> None:
    """The service's commands work through app.ops; of app/http they use only the document's
    YAML form, which `cipherd openapi` prints."""
    found = _violations(_modules("app.cli"), ("app.routers", "app.http"))
    assert found == ["app/cli/__init__.py imports app.http.docs"]


def _store_graph() -> dict[str, set[str]]:
    """The modules of `app.store` and, for each, those of them it imports (a name imported
    from the package counts as the module of that name where there is one)."""
    modules = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path
        for path in _modules("app.store")
    }
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        graph[module] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                graph[module] |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom) and node.module in modules:
                named = {f"{node.module}.{a.name}" for a in node.names} & modules.keys()
                graph[module] |= named or {node.module}
    return graph


def test_the_store_has_no_import_circle() -> None:
    """Records and errors stand alone, no repository or backend imports the package's facade,
    and the modules import each other in one direction only."""
    graph = _store_graph()
    assert graph["app.store.errors"] == set()
    assert graph["app.store.records"] == set()
    assert [m for m, imported in graph.items() if "app.store" in imported] == []
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path, module))
        if module not in done:
            for imported in graph[module]:
                visit(imported, (*path, module))
            done.add(module)

    for module in graph:
        visit(module, ())


@pytest.mark.parametrize(
    ("driver", "backend"),
    [("sqlite3", "app/store/sqlite.py"), ("psycopg", "app/store/postgres.py")],
)
def test_only_its_backend_imports_a_database_driver(driver: str, backend: str) -> None:
    paths = [p for p in _modules("app") + _modules("core") if p != ROOT / backend]
    assert _violations(paths, (driver, f"{driver}_pool")) == []
    assert _violations([ROOT / backend], (driver,)) != []


# What FastAPI's and Starlette's documentation teach applications to import. Anything else of
# them (Starlette's `_utils`, FastAPI's `asyncexitstack`, `dependencies`, ...) is an internal.
FRAMEWORK_PUBLIC = (
    "fastapi",
    "fastapi.exceptions",
    "fastapi.openapi.docs",
    "fastapi.openapi.utils",
    "fastapi.responses",
    "fastapi.routing",
    "fastapi.security",
    "fastapi.staticfiles",
    "starlette.datastructures",
    "starlette.exceptions",
    "starlette.requests",
    "starlette.responses",
    "starlette.routing",
    "starlette.types",
)
FRAMEWORK_ADAPTER = "app/http/framework.py"
# What of the frameworks' undocumented attributes the code reaches, named: the layers FastAPI
# builds, the dependency graph of a route, a route's compiled path.
FRAMEWORK_ATTRIBUTES = frozenset(
    {"build_middleware_stack", "user_middleware", "middleware_stack", "dependant", "path_regex"}
)
UVICORN_ADAPTER = "app/server/uvicorn_internals.py"


def _internal_framework_imports(path: Path) -> list[str]:
    return [
        name
        for name in _imports(path)
        if name.split(".")[0] in ("fastapi", "starlette") and name not in FRAMEWORK_PUBLIC
    ]


def _attributes(path: Path) -> set[str]:
    """The attribute names `path` reads or sets, and the names of the functions it defines."""
    return {
        node.attr if isinstance(node, ast.Attribute) else node.name
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Attribute | ast.FunctionDef | ast.AsyncFunctionDef)
    }


def test_framework_internals_only_in_their_adapter() -> None:
    others = [path for path in _modules("app") if path != ROOT / FRAMEWORK_ADAPTER]
    assert [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in others
        for name in _internal_framework_imports(path)
    ] == []
    assert [
        f"{path.relative_to(ROOT)} uses {name}"
        for path in others
        for name in sorted(_attributes(path) & FRAMEWORK_ATTRIBUTES)
    ] == []


def test_uvicorn_only_in_its_adapter() -> None:
    others = [path for path in _modules("app") if path != ROOT / UVICORN_ADAPTER]
    assert _violations(others, ("uvicorn",)) == []


def test_the_adapters_hold_what_the_rules_keep_out() -> None:
    """The rules above are not vacuous: the adapters are where the internals are."""
    assert "starlette._utils" in _internal_framework_imports(ROOT / FRAMEWORK_ADAPTER)
    assert {"build_middleware_stack", "dependant"} <= _attributes(ROOT / FRAMEWORK_ADAPTER)
    uvicorn = [n for n in _imports(ROOT / UVICORN_ADAPTER) if n.split(".")[0] == "uvicorn"]
    assert "uvicorn.protocols.http.httptools_impl" in uvicorn


def test_the_reader_finds_what_it_must() -> None:
    """The rules' reader sees imports inside functions and resolves relative ones."""
    names = set(_imports(ROOT / "app" / "cli" / "store.py"))
    assert {"app.settings", "app.ops", "app.store"} <= names
    assert _violations([ROOT / "app" / "main.py"], ("app.http",)) != []


MAX_MODULE_LINES = 500


def test_no_module_of_the_service_is_over_500_lines() -> None:
    """A module past it holds more than one concern: split it along one (as `app/ops/imported.py`
    and `app/ops/transit/mount_config.py` were) rather than let it grow."""
    long = {
        str(path.relative_to(ROOT)): lines
        for path in (ROOT / "app").rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}
