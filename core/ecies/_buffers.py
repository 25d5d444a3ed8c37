"""Output buffers that become `bytes` without a copy.

`bytes(bytearray)` copies: for a large payload that costs as much time as AES-256-GCM itself
and as much memory again as the payload, and a `bytearray` is zero-filled first besides
(docs/performance/choices.md). So the payload is written straight
into a new, uninitialised `bytes` object made with the CPython C API
`PyBytes_FromStringAndSize(NULL, n)`, which is exactly how C extensions build their results:
the object is filled in before any other code can see it, and only then returned. This needs
CPython (`ctypes.pythonapi`), which is what cipherd runs on.
"""

import ctypes

_new_bytes = ctypes.pythonapi.PyBytes_FromStringAndSize
_new_bytes.restype = ctypes.py_object
_new_bytes.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t)

_bytes_data = ctypes.pythonapi.PyBytes_AsString
_bytes_data.restype = ctypes.c_void_p
_bytes_data.argtypes = (ctypes.py_object,)


def new_bytes(length: int) -> tuple[bytes, memoryview]:
    """A fresh `bytes` of `length` (>= 1) uninitialised bytes and a writable view of them.

    The caller must fill every byte and release the view before the `bytes` leaves its hands.
    """
    if length < 1:
        raise ValueError("length must be positive")
    out = _new_bytes(None, length)
    window = (ctypes.c_char * length).from_address(_bytes_data(out))
    return out, memoryview(window).cast("B")
