"""Pairing-based functional encryption on BLS12-381.

`core.fe.ipfe` holds six private-key, function-hiding inner-product schemes and `core.fe.qfe`
two public-key quadratic schemes; they share one group layer (`core.fe.group`, the only module
that talks to petrelic/RELIC) and one byte encoding (`core.fe.encoding`).
"""
