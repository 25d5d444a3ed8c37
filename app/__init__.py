"""cipherd's HTTP service: settings, auth, key store, one router per family."""

__version__ = "0.1.0"
