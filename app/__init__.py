"""cipherd's HTTP service: settings, auth, key store, one router per family."""

from importlib.metadata import version

# The distribution's, which it reads from client/VERSION: one version for service and client.
__version__ = version("cipherd")
