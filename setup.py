"""Compiled parts of cipherd: the AEZ kernel and the prepared-pairing loop.

Everything else is declared in pyproject.toml; setuptools needs this file only for the
C extensions.
"""

from setuptools import Extension, setup

EXTRA_COMPILE_ARGS = ["-O3", "-std=c11", "-Wall", "-Wextra"]

extensions: list[Extension] = []

setup(ext_modules=extensions)
