"""Output buffers that become `bytes` without a copy.

`bytes(bytearray)` copies: for a 200 MiB payload that is about 0.1 s and 200 MiB more memory,
which alone would double the cost of AES-256-GCM (measured on the development machine:
100 MiB through AES-GCM into a fresh buffer 0.056 s; into a `bytearray` 0.067 s because the
bytearray is zero-filled first; a `bytes()` copy of it another 0.05 s). So the payload is
written straight into a new, uninitialised `bytes` object made with the CPython C API
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
