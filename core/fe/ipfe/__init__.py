"""Function-hiding inner-product encryption: a key for y decrypts a ciphertext of x to ⟨x, y⟩.

Every module offers the same verbs (`setup`, `keygen`, `encrypt`, `prepare`, `decrypt`) and
types (`MasterKey`, `Key`, `PreparedKey`, `Ciphertext`). bjk and kim decrypt with bounds, the
others with a `DlogTable` over their fixed base.
"""

from core.fe.ipfe import bjk, kim, kks, lin, opt, tao

__all__ = ["bjk", "kim", "kks", "lin", "opt", "tao"]
