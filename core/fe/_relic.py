"""A second cffi binding (ABI mode) into the RELIC library that petrelic bundles.

petrelic's own module exposes single pairings and plain scalar multiplication only; the same
shared object also exports RELIC's multi-pairing, multi-scalar and fixed-base routines. This
module opens that very object again (`RTLD_NOLOAD`: the mapping petrelic loaded, never a second
copy), so RELIC's global context, initialised by petrelic, is shared. The struct layouts below
are RELIC 0.6's for BLS12-381 on 64-bit limbs; they are checked against petrelic's own FFI at
import, so a petrelic built differently fails loudly here rather than corrupting memory.

RELIC keeps one global context and cffi releases the GIL around every call, so two threads in
RELIC at once can corrupt results. Every call into RELIC from this package holds `LOCK`.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from cffi import FFI
from petrelic.bindings import _C as PETRELIC_LIB
from petrelic.bindings import _FFI as PETRELIC_FFI
from petrelic.multiplicative.pairing import G1

LOCK = threading.RLock()

BN_LIMBS = 34
RLC_OK = 0

_CDEF = """
typedef uint64_t dig_t;
typedef struct { dig_t x[6]; dig_t y[6]; dig_t z[6]; int coord; } ep_st;
typedef struct { dig_t x[2][6]; dig_t y[2][6]; dig_t z[2][6]; int coord; } ep2_st;
typedef struct { int alloc; int used; int sign; dig_t dp[34]; } bn_st;
typedef dig_t fp12_st[2][3][2][6];

int err_get_code(void);
void pp_map_sim_oatep_k12(void *r, void *p, void *q, int m);
void ep_mul_sim_lot(void *r, void *p, void *k, int n);
void ep2_mul_sim_lot(void *r, void *p, void *k, int n);
void ep_mul_pre_combs(void *t, void *p);
void ep_mul_fix_combs(void *r, void *t, void *k);
void ep2_mul_pre_combs(void *t, void *p);
void ep2_mul_fix_combs(void *r, void *t, void *k);
void ep_add_projc(void *r, void *p, void *q);
void ep2_add_projc(void *r, void *p, void *q);
void ep_dbl_projc(void *r, void *p);
void ep2_dbl_projc(void *r, void *p);
void ep_neg(void *r, void *p);
void ep2_neg(void *r, void *p);
void ep_mul_dig(void *r, void *p, uint64_t k);
void ep2_mul_dig(void *r, void *p, uint64_t k);
void ep_read_bin(void *a, const uint8_t *bin, int len);
void ep2_read_bin(void *a, const uint8_t *bin, int len);
void fp12_read_bin(void *a, const uint8_t *bin, int len);
void fp12_mul_lazyr(void *c, void *a, void *b);
"""

# Table sizes of RELIC's comb method with the library's fixed-base depth (EP_DEPTH = 4).
COMB_TABLE = 16

ffi = FFI()
ffi.cdef(_CDEF)


def _library_path() -> str:
    """Path of the librelic that petrelic's extension has already mapped into this process."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and "librelic" in fields[5]:
                return fields[5]
    raise ImportError("petrelic's bundled librelic is not loaded")  # pragma: no cover
    # (petrelic.bindings above always maps it; reaching this means a broken installation)


LIBRELIC_PATH = _library_path()
lib = ffi.dlopen(LIBRELIC_PATH, ffi.RTLD_NOW | ffi.RTLD_NOLOAD)

G1_POINT_SIZE = ffi.sizeof("ep_st")
G2_POINT_SIZE = ffi.sizeof("ep2_st")

for _ours, _theirs in (
    ("ep_st", "g1_t"),
    ("ep2_st", "g2_t"),
    ("bn_st", "bn_t"),
    ("fp12_st", "gt_t"),
):
    if ffi.sizeof(_ours) != PETRELIC_FFI.sizeof(_theirs):  # pragma: no cover
        raise ImportError(f"RELIC layout mismatch: {_ours} is not petrelic's {_theirs}")
if ffi.offsetof("bn_st", "dp") != PETRELIC_FFI.offsetof("bn_st", "dp"):  # pragma: no cover
    raise ImportError("RELIC layout mismatch in bn_st")
if PETRELIC_LIB.get_rlc_ok() != RLC_OK:  # pragma: no cover
    raise ImportError("unexpected RELIC status code")
# (the checks above fail only with a petrelic built for another curve or limb size)

with LOCK:
    ORDER: int = int(G1.order())


def clear_error() -> None:
    """Reset RELIC's error code (reading it resets it)."""
    lib.err_get_code()


def failed() -> bool:
    """True when a RELIC call since the last check raised an error."""
    return lib.err_get_code() != RLC_OK


def bn_array(scalars: Sequence[int]) -> Any:
    """RELIC big numbers holding each scalar reduced mod r, in one contiguous array."""
    out = ffi.new("bn_st[]", max(1, len(scalars)))
    for i, s in enumerate(scalars):
        s %= ORDER
        bn = out[i]
        bn.alloc = BN_LIMBS
        bn.used = max(1, (s.bit_length() + 63) >> 6)
        ffi.memmove(bn.dp, s.to_bytes(32, "little"), 32)
    return out


def point_array(ctype: str, size: int, points: Sequence[Any]) -> Any:
    """Copy petrelic points (their `pt` structs) into one contiguous RELIC array."""
    out = ffi.new(f"{ctype}[]", max(1, len(points)))
    for i, p in enumerate(points):
        ffi.memmove(out + i, p.pt, size)
    return out


def load_compiled(name: str = "core.fe._pairing") -> ModuleType | None:
    """The compiled pairing module bound to this librelic, or None when it cannot load.

    Everything it speeds up has a pure-Python path over `lib` with identical results.
    """
    try:
        module = importlib.import_module(name)
        with LOCK:
            module.init(LIBRELIC_PATH)
    except (ImportError, OSError):
        return None
    return module


pairing_ext = load_compiled()
