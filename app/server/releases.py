"""The releases of the libraries whose internals cipherd reaches into, checked at start.

FastAPI's and Starlette's internals are used in `app.http.framework` only, uvicorn's in
`app.server.uvicorn_internals` only, and each was written and tested against the releases
TESTED names. Another release may have changed what they reach into without notice (a private
function renamed, a method no longer called), and would not fail at once but answer wrongly.
So outside those releases the service refuses to start, with a message that names the package,
the releases tested and the one installed. The table is here rather than in the adapters so
that `cipherd serve` checks it before it starts any worker, without importing FastAPI.
"""

import re
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version


class UnsupportedRelease(RuntimeError):
    """An installed release outside what an adapter module was tested against."""


@dataclass(frozen=True)
class Releases:
    """Releases `lowest` up to, not including, `below` of `package`."""

    package: str
    lowest: str
    below: str

    def admits(self, release: str) -> bool:
        return _numbers(self.lowest) <= _numbers(release) < _numbers(self.below)

    def __str__(self) -> str:
        return f"{self.package} >={self.lowest},<{self.below}"


def _numbers(release: str) -> tuple[int, ...]:
    """The numeric part of a release, for ordering: `0.165.0rc1` is (0, 165, 0)."""
    found = re.match(r"\d+(?:\.\d+)*", release)
    return tuple(int(part) for part in found.group().split(".")) if found else ()


# What each adapter module was written and tested against.
TESTED = {
    "app.http.framework": (
        Releases("fastapi", "0.165.0", "0.166"),
        Releases("starlette", "1.10.0", "1.11"),
    ),
    "app.server.uvicorn_internals": (Releases("uvicorn", "0.54.0", "0.55"),),
}


@cache
def installed(package: str) -> str | None:
    """The installed release of `package` (None if it is not installed)."""
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def require(adapter: str) -> None:
    """Raise UnsupportedRelease unless every package `adapter` was tested against (TESTED) is
    installed at a release in its range."""
    tested = TESTED[adapter]
    wrong = [
        f"{range_.package} {release or 'not installed'}"
        for range_ in tested
        if (release := installed(range_.package)) is None or not range_.admits(release)
    ]
    if wrong:
        raise UnsupportedRelease(
            f"{adapter} was written and tested against {', '.join(map(str, tested))}; "
            f"installed: {', '.join(wrong)}. Install the releases in constraints.txt."
        )


def require_all() -> None:
    """`require` for every adapter."""
    for adapter in TESTED:
        require(adapter)
