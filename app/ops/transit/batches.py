"""How Vault writes each Transit verb's `batch_results` and answers a batch: the fields its
response entries always carry, those it leaves out when empty, and when a batch is refused."""

from dataclasses import dataclass
from typing import Any

from app.ops.transit.crypto import TransitItem


@dataclass(frozen=True)
class BatchShape:
    """How Vault writes a verb's `batch_results` (its response entry's JSON tags) and answers a
    batch: one in which items failed, encrypt and decrypt with 400 (or the caller's
    `partial_failure_response_code`), the others with 200; one whose items carry a context
    only in part, encrypt, decrypt and rewrap with 400."""

    always: tuple[tuple[str, Any], ...]  # fields in every entry, with their empty value
    refused_if_failed: bool = False
    omitted_if_false: str | None = None  # HMAC verification's `valid`, tagged omitempty
    contexts_all_or_none: bool = False
    # Fields an entry tags otherwise than the single answer names them.
    tagged: tuple[tuple[str, str], ...] = ()

    def entry(self, result: dict[str, Any], item: TransitItem) -> dict[str, Any]:
        """One item's entry: the result over the empty fields, the item's `reference` echoed."""
        entry = {**dict(self.always), **result}
        for name, tag in self.tagged:
            if name in entry:
                entry[tag] = entry.pop(name)
        if item.reference is not None:
            entry["reference"] = item.reference
        if self.omitted_if_false is not None and not entry.get(self.omitted_if_false, True):
            del entry[self.omitted_if_false]
        return entry


_REFERENCE = ("reference", "")
ENCRYPTED = BatchShape((_REFERENCE,), refused_if_failed=True, contexts_all_or_none=True)
DECRYPTED = BatchShape(
    (("plaintext", ""), _REFERENCE), refused_if_failed=True, contexts_all_or_none=True
)
REWRAPPED = BatchShape((_REFERENCE,), contexts_all_or_none=True)
HMACS = BatchShape((_REFERENCE,))
HMAC_VERDICTS = BatchShape((_REFERENCE,), omitted_if_false="valid")
# A derived Ed25519 key's signature carries the public key the context derives.
SIGNED = BatchShape((("key_version", 0), _REFERENCE), tagged=(("public_key", "publickey"),))
VERDICTS = BatchShape((("valid", False), _REFERENCE))
