"""Key material made elsewhere: how a key type takes it (`taken`), and Transit's mark of a key
imported through it (`app.ops.transit.imports`), which the service then rotates only when the
import allowed it (`refuse_rotation`), as Vault does."""

from typing import Any

from app.ops.errors import Problem, invalid_input
from app.ops.keytypes import KEY_TYPES
from app.store import KeyInfo

# A key's parameters that mark its material as imported through Transit, and whether the
# service may still rotate it (`refuse_rotation`).
IMPORTED, IMPORTED_ROTATES = "imported", "imported_rotation"


def taken(key_type: str, material: bytes, params: dict[str, Any]) -> tuple[bytes, bytes | None]:
    """Material made elsewhere as a key of `key_type` stores it (400 if the type could not
    have drawn it)."""
    try:
        return KEY_TYPES[key_type].take(material, params)
    except ValueError as exc:  # InvalidKeyError and EncodingError too
        raise invalid_input(f"the material is not a {key_type} key: {exc}") from None


class RotationRefusedError(Problem):
    """A rotation of a key imported through Transit without `allow_rotation`: its versions come
    only from its owner (`import_version`), as in Vault; an automatic one is skipped."""

    def __init__(self, name: str) -> None:
        super().__init__(
            409,
            "rotation-refused",
            "Rotation refused",
            f"imported key {name} does not allow rotation within the service",
        )


def refuse_rotation(key: KeyInfo) -> None:
    """RotationRefusedError for a key imported through Transit without `allow_rotation`."""
    if key.params.get(IMPORTED) and not key.params.get(IMPORTED_ROTATES):
        raise RotationRefusedError(key.name)
