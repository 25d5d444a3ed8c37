"""Pairing-based functional encryption on BLS12-381 (default) and BN254.

`core.fe.ipfe` holds six private-key, function-hiding inner-product schemes and `core.fe.qfe`
two public-key quadratic schemes; they share one group layer (`core.fe.group`, which with
`_relic` and `_mcl` is the only code that talks to petrelic/RELIC and mcl) and one byte encoding
(`core.fe.encoding`). `group.curve(name)` selects the curve; every object carries its own.
"""
