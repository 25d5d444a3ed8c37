"""Versioned bytes of every FE object: round trips, and rejection of every malformed input."""

from __future__ import annotations

import random
from typing import Any

import pytest

from core.errors import EncodingError, KeyMismatchError
from core.fe import encoding, group
from core.fe.ipfe import lin, tao

HEADER = encoding.HEADER_BYTES
F = [[1, 0, 2], [0, -1, 0], [3, 1, 1]]


def ip_objects(ip: Any, rng: random.Random) -> dict[str, Any]:
    msk = ip.setup(4, rng)
    return {
        "msk": msk,
        "sk": ip.keygen(msk, [1, -2, 3, 4], rng),
        "ct": ip.encrypt(msk, [5, 6, 7, 8], rng=rng),
    }


def q_objects(qs: Any, rng: random.Random) -> dict[str, Any]:
    pk, msk = qs.setup(3, rng)
    return {
        "pk": pk,
        "msk": msk,
        "sk": qs.keygen(msk, F, rng),
        "ct": qs.encrypt(pk, [1, -2, 3], [4, 5, -6], rng),
    }


def test_ip_round_trips_reencode_and_decrypt(ip: Any, rng: random.Random) -> None:
    objs = ip_objects(ip, rng)
    restored = {}
    for name, obj in objs.items():
        data = obj.to_bytes()
        again = type(obj).from_bytes(data)
        assert again.to_bytes() == data, name
        assert again == obj and again.n == obj.n
        restored[name] = again
    prepared = ip.module.PreparedKey.from_bytes(objs["sk"].to_bytes())
    assert prepared.to_bytes() == objs["sk"].to_bytes()
    dec = ip.decryptor(-100, 100, restored["msk"])
    assert dec(restored["sk"], restored["ct"]) == 46
    assert dec(prepared, restored["ct"]) == 46
    assert dec(objs["sk"], ip.encrypt(restored["msk"], [5, 6, 7, 8], rng=rng)) == 46


def test_q_round_trips_reencode_and_decrypt(qs: Any, rng: random.Random) -> None:
    objs = q_objects(qs, rng)
    restored = {}
    for name, obj in objs.items():
        data = obj.to_bytes()
        again = type(obj).from_bytes(bytearray(data))
        assert again.to_bytes() == data, name
        restored[name] = again
    prepared = qs.module.PreparedKey.from_bytes(objs["sk"].to_bytes())
    assert prepared.to_bytes() == objs["sk"].to_bytes()
    dec = qs.decryptor(-100, 100)
    assert dec(restored["sk"], restored["ct"]) == 35
    assert dec(prepared, restored["ct"]) == 35
    sk = qs.keygen(restored["msk"], F, rng)
    assert dec(sk, qs.encrypt(restored["pk"], [1, -2, 3], [4, 5, -6], rng)) == 35


def _all_objects(scheme: Any, rng: random.Random) -> dict[str, Any]:
    return ip_objects(scheme, rng) if not scheme.quadratic else q_objects(scheme, rng)


def test_header_layout(any_scheme: Any, rng: random.Random) -> None:
    for obj in _all_objects(any_scheme, rng).values():
        data = obj.to_bytes()
        assert data[:3] == b"CFE"
        assert data[3] == encoding.FORMAT_VERSION
        assert data[4] == encoding.SCHEME_IDS[any_scheme.name]
        assert data[5] == type(obj).KIND
        assert data[6] == encoding.CURVE_IDS[any_scheme.curve]
        assert int.from_bytes(data[7:11], "big") == obj.n
        assert data[11:HEADER] == obj.master_id


def test_every_truncation_rejected(any_scheme: Any, rng: random.Random) -> None:
    for obj in _all_objects(any_scheme, rng).values():
        data = obj.to_bytes()
        cuts = {len(data) - 1, HEADER, HEADER - 1, HEADER + 1, 1, 0}
        cuts |= set(range(0, len(data), max(1, len(data) // 40)))
        for cut in sorted(cuts):
            with pytest.raises(EncodingError):
                type(obj).from_bytes(data[:cut])
        with pytest.raises(EncodingError, match="bytes where"):
            type(obj).from_bytes(data + b"\x00")


def test_wrong_header_fields_rejected(any_scheme: Any, rng: random.Random) -> None:
    for obj in _all_objects(any_scheme, rng).values():
        data = bytearray(obj.to_bytes())
        cls = type(obj)
        for pos, value, message in [
            (0, ord("X"), "not a cipherd"),
            (3, 4, "unsupported format version 4"),
            (4, 0, "not for scheme"),
            (5, 9, "is not a"),
            (6, 7, "unknown curve"),
        ]:
            bad = bytearray(data)
            bad[pos] = value
            with pytest.raises(EncodingError, match=message):
                cls.from_bytes(bytes(bad))
        zero_n = data[:7] + bytes(4) + data[11:]
        with pytest.raises(EncodingError, match="at least 1"):
            cls.from_bytes(bytes(zero_n))
        other_n = data[:7] + (obj.n + 1).to_bytes(4, "big") + data[11:]
        with pytest.raises(EncodingError, match="bytes where"):
            cls.from_bytes(bytes(other_n))


def test_objects_of_another_kind_or_scheme_rejected(ip: Any, rng: random.Random) -> None:
    objs = ip_objects(ip, rng)
    m = ip.module
    with pytest.raises(EncodingError, match="is not a Key"):
        m.Key.from_bytes(objs["ct"].to_bytes())
    with pytest.raises(EncodingError, match="is not a Ciphertext"):
        m.Ciphertext.from_bytes(objs["sk"].to_bytes())
    other = tao if m is lin else lin
    with pytest.raises(EncodingError, match="not for scheme"):
        other.Key.from_bytes(objs["sk"].to_bytes())


def _first_point(obj: Any) -> tuple[int, Any]:
    """Offset and codec of the first group element (QFE keys open with F, 8 bytes an entry)."""
    layout = type(obj).LAYOUT
    if layout[0][0] is encoding.I64:
        return HEADER + 8 * obj.n * obj.n, layout[1][0]
    return HEADER, layout[0][0]


def _splice(data: bytes, at: int, piece: bytes) -> bytes:
    return data[:at] + piece + data[at + len(piece) :]


def test_points_off_curve_or_subgroup_rejected(
    any_scheme: Any, rng: random.Random, bad_points: dict[str, dict[str, bytes]]
) -> None:
    objs = _all_objects(any_scheme, rng)
    for name, obj in objs.items():
        if name == "msk":
            continue
        cls = type(obj)
        data = obj.to_bytes()
        at, codec = _first_point(obj)
        bad = bad_points[any_scheme.curve]
        if codec is encoding.G1:
            replacements = [v for k, v in bad.items() if k.startswith("g1")]
        else:
            replacements = [bad["g2 off subgroup"]]
        for piece in replacements:
            with pytest.raises(EncodingError):
                cls.from_bytes(_splice(data, at, piece))
        if any_scheme.curve == group.BN254 and codec is encoding.G1:
            continue  # cofactor 1: a flipped x is either off the curve or another valid point
        flipped = bytearray(data)
        flipped[at + 7] ^= 0x40
        with pytest.raises(EncodingError):
            cls.from_bytes(bytes(flipped))


def test_unreduced_scalars_rejected(any_scheme: Any, rng: random.Random) -> None:
    msk = _all_objects(any_scheme, rng)["msk"]
    data = msk.to_bytes()
    for bad in (group.curve(any_scheme.curve).order, 2**256 - 1):
        with pytest.raises(EncodingError):
            type(msk).from_bytes(_splice(data, HEADER, bad.to_bytes(32, "big")))


def test_version_1_encodings_read_as_bls12_381(rng: random.Random) -> None:
    """The 10-byte header of format 1 (no curve byte, no master id) still decodes, as
    BLS12-381 with an unknown master."""
    msk = lin.setup(2, rng)
    ct = lin.encrypt(msk, [3, 4], rng)
    data = ct.to_bytes()
    old = data[:3] + b"\x01" + data[4:6] + data[7:11] + data[HEADER:]
    again = lin.Ciphertext.from_bytes(old)
    assert again.to_bytes()[HEADER:] == data[HEADER:]
    assert again.curve == group.BLS12_381
    assert again.master_id == encoding.UNKNOWN_MASTER
    with pytest.raises(EncodingError, match="truncated header"):
        lin.Ciphertext.from_bytes(data[:10])
    with pytest.raises(EncodingError, match="truncated header"):
        lin.Ciphertext.from_bytes(old[:9])


def test_version_2_encodings_read_with_an_unknown_master(
    any_scheme: Any, rng: random.Random
) -> None:
    """The 11-byte header of format 2 (no master id) still decodes; such a key or ciphertext
    decrypts beside any other, as before ids existed, and a master key's id is restored."""
    objs = _all_objects(any_scheme, rng)
    old = {}
    for name, obj in objs.items():
        data = obj.to_bytes()
        v2 = data[:3] + b"\x02" + data[4:11] + data[HEADER:]
        old[name] = type(obj).from_bytes(v2)
        # A master key gets back the id its setup gave it; what it made stays unknown.
        known = obj.master_id if name == "msk" else encoding.UNKNOWN_MASTER
        assert old[name].master_id == known
        assert old[name].to_bytes()[HEADER:] == data[HEADER:]
        assert old[name].curve == obj.curve
        with pytest.raises(EncodingError, match="truncated header"):
            type(obj).from_bytes(v2[:10])
    if "pk" in objs:
        decrypt, expected = any_scheme.decryptor(-100, 100), 35
    else:
        decrypt, expected = any_scheme.decryptor(-100, 100, objs["msk"]), 46
    assert decrypt(old["sk"], objs["ct"]) == expected
    assert decrypt(objs["sk"], old["ct"]) == expected


def test_objects_name_the_master_key_they_come_from(any_scheme: Any) -> None:
    """One id for a master key and all that is made from it, the same for the same seed, and
    another for another key; a key and a ciphertext of different masters are refused."""
    first = _all_objects(any_scheme, random.Random(7))
    again = _all_objects(any_scheme, random.Random(7))
    other = _all_objects(any_scheme, random.Random(8))
    ids = {obj.master_id for obj in first.values()}
    assert len(ids) == 1 and encoding.UNKNOWN_MASTER not in ids
    assert {obj.master_id for obj in again.values()} == ids
    assert other["msk"].master_id not in ids
    if "pk" in first:
        decrypt = any_scheme.decryptor(-100, 100)
    else:
        decrypt = any_scheme.decryptor(-100, 100, first["msk"])
    for sk, ct in ((first["sk"], other["ct"]), (other["sk"], first["ct"])):
        for key in (sk, any_scheme.prepare(sk)):
            with pytest.raises(KeyMismatchError, match="different master keys"):
                decrypt(key, ct)


def test_curve_byte_decides_the_element_sizes(rng: random.Random) -> None:
    """The same scheme's objects differ in size by curve; relabelling the curve is rejected."""
    cts = {c: lin.encrypt(lin.setup(2, rng, curve=c), [1, 2], rng) for c in group.CURVES}
    bls, bn = cts[group.BLS12_381].to_bytes(), cts[group.BN254].to_bytes()
    assert len(bls) == HEADER + 6 * group.curve(group.BLS12_381).g1_bytes
    assert len(bn) == HEADER + 6 * group.curve(group.BN254).g1_bytes
    relabelled = bn[:6] + bytes([encoding.CURVE_IDS[group.BLS12_381]]) + bn[7:]
    with pytest.raises(EncodingError, match="bytes where"):
        lin.Ciphertext.from_bytes(relabelled)
    assert lin.Ciphertext.from_bytes(bn).curve == group.BN254


def test_the_master_id_is_read_from_the_header_alone(rng: random.Random) -> None:
    msk = tao.setup(2, rng)
    data = msk.to_bytes()
    assert encoding.read_master_id(data) == msk.master_id != encoding.UNKNOWN_MASTER
    v2 = data[:3] + b"\x02" + data[4:11] + data[HEADER:]
    for other in (v2, data[: HEADER - 1], b"XYZ" + data[3:], b""):
        assert encoding.read_master_id(other) == encoding.UNKNOWN_MASTER
    assert encoding.same_id(msk.master_id, encoding.UNKNOWN_MASTER)
    assert not encoding.same_id(msk.master_id, tao.setup(2, rng).master_id)


def test_the_header_and_length_are_read_without_decoding_a_point(rng: random.Random) -> None:
    """A ciphertext header claiming n = 100,000 with that many bytes of junk where its points
    should be: `header_of` answers n, curve and master id from the header alone (no point is
    decoded, so junk passes), and refuses a length other than the one n fixes."""
    msk = lin.setup(4, rng)
    data = lin.encrypt(msk, [1, 2, 3, 4], rng=rng).to_bytes()
    header = lin.Ciphertext.header_of(data)
    assert (header.curve, header.n, header.master_id, header.size) == (
        group.BLS12_381,
        4,
        msk.master_id,
        HEADER,
    )
    longer = lin.encrypt(lin.setup(5, rng), [1, 2, 3, 4, 5], rng=rng).to_bytes()
    per_n = len(longer) - len(data)
    fixed = len(data) - HEADER - 4 * per_n
    claim = bytearray(data[:HEADER])
    claim[7:11] = (100_000).to_bytes(4, "big")
    junk = b"\xff" * (fixed + per_n * 100_000)
    assert lin.Ciphertext.header_of(bytes(claim) + junk).n == 100_000
    with pytest.raises(EncodingError, match="bytes where"):
        lin.Ciphertext.header_of(bytes(claim) + junk[:-1])
    with pytest.raises(EncodingError, match="bytes where"):
        lin.Ciphertext.from_bytes(bytes(claim) + junk[:-1])
    with pytest.raises(EncodingError, match="not a Key"):
        lin.Key.header_of(data)


def test_the_stored_public_part_is_computed_again_from_the_master_key(any_scheme: Any) -> None:
    """What `setup_bytes` stores beside a master key (QFE's public key, tao's decryption base,
    nothing for the other inner-product schemes) is what `public_bytes` computes from it."""
    secret, public = any_scheme.setup_bytes(2)
    assert any_scheme.public_bytes(any_scheme.master_key(secret)) == public
    assert (public is None) == (not any_scheme.quadratic and any_scheme.name != "tao")
