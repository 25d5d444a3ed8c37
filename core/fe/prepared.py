"""What every scheme's `PreparedKey` shares: it stands in for its key.

A prepared key adds precomputed pairing lines to a `Key`; its dimension, curve and encoding are
the key's, so it can be stored, sent and compared as the key itself.
"""

from typing import Any


class PreparedKeyBase:
    key: Any

    @property
    def n(self) -> int:
        return self.key.n

    @property
    def curve(self) -> str:
        return self.key.curve

    @property
    def master_id(self) -> bytes:
        return self.key.master_id

    def to_bytes(self) -> bytes:
        return self.key.to_bytes()
