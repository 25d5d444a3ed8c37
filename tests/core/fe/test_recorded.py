"""Every scheme, both curves: seeded runs still give the recorded encodings byte for byte."""

from __future__ import annotations

import json

from tests.core.fe import recorded


def test_recorded_encodings() -> None:
    want = json.loads(recorded.RECORDED.read_text())
    got = recorded.encodings()
    assert got.keys() == want.keys()
    for case, objects in want.items():
        assert got[case] == objects, case
