"""cipherd's cryptographic library: ECIES, AEZ and pairing-based functional encryption.

It has no web, storage or global state beyond caches, and can be used without the service.
"""
