"""The documentation stays where readers and the code look for it: README.md and bench/README.md
short, and every page a code comment names (with its section, when it names one) there."""

import re
from pathlib import Path

REPO = Path(__file__).parents[2]
# A page of docs/ or a README, then optionally `, "Section"`, as comments cite them.
REFERENCE = re.compile(r'((?:docs/[\w./-]+|bench/README)\.md)(?:, "([^"]+)")?')
SNIPPET = re.compile(r'^--8<-- "([^"]+)"$', re.MULTILINE)
CITING = ("app", "core", "client", "bench", "scripts", "tests", "docker", ".ci")


def _headings(page: Path) -> set[str]:
    text = page.read_text()
    # The performance page includes bench/README.md: its headings are the page's.
    for included in SNIPPET.findall(text):
        text += "\n" + (REPO / included).read_text()
    return {
        re.sub(r"\s*\{#[^}]*\}$", "", line.lstrip("#").strip())
        for line in text.splitlines()
        if line.startswith("#")
    }


def _citing_files() -> list[Path]:
    found = [REPO / "Dockerfile", REPO / "Makefile", REPO / "pyproject.toml"]
    for top in CITING:
        for path in (REPO / top).rglob("*"):
            if (
                path.is_file()
                and "node_modules" not in path.parts
                and "vectors" not in path.parts
                and path.suffix in (".py", ".c", ".h", ".yaml", ".yml", ".toml", "")
            ):
                found.append(path)
    return found


def test_the_readmes_stay_short() -> None:
    assert len((REPO / "README.md").read_bytes()) <= 12 * 1024
    assert len((REPO / "bench" / "README.md").read_bytes()) <= 30 * 1024


def test_every_page_the_code_cites_exists_with_its_section() -> None:
    cited = 0
    for path in _citing_files():
        for page, section in REFERENCE.findall(path.read_text(errors="replace")):
            where = f"{path.relative_to(REPO)} cites {page}"
            target = REPO / page
            assert target.is_file(), where
            if section:
                assert section in _headings(target), f'{where}, "{section}"'
            cited += 1
    # The figures behind design choices are cited from more than a dozen places.
    assert cited >= 12


def test_a_missing_section_is_found() -> None:
    headings = _headings(REPO / "docs" / "performance" / "index.md")
    assert "Signatures" in headings  # from bench/README.md, included
    assert "No such section" not in headings


def test_the_command_line_page_lists_every_client_command() -> None:
    """Each command `cipherd` offers stands in docs/clients/cli.md's synopsis (the aead, hpke
    and rsa commands were missing from it)."""
    from cipherd._commands import COMMANDS

    synopsis = (REPO / "docs" / "clients" / "cli.md").read_text()
    missing = [
        " ".join(declared.words)
        for declared in COMMANDS
        if not re.search(
            rf"^cipherd {re.escape(declared.words[0])}\b"
            + "".join(rf".*\b{re.escape(word)}\b" for word in declared.words[1:]),
            synopsis,
            re.MULTILINE,
        )
    ]
    assert missing == []
