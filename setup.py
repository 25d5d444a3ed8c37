"""Compiled parts of cipherd: the AEZ kernel, the pairing-group fast paths, FE matrix products.

Everything else is declared in pyproject.toml; setuptools needs this file only for the
C extensions.
"""

from setuptools import Extension, setup

EXTRA_COMPILE_ARGS = ["-O3", "-std=c11", "-Wall", "-Wextra"]

extensions: list[Extension] = []
extensions.append(
    Extension("core.aez._aez", ["core/aez/_aez.c"], extra_compile_args=EXTRA_COMPILE_ARGS)
)
extensions.append(
    Extension(
        "core.fe._pairing",
        ["core/fe/_pairing.c"],
        extra_compile_args=EXTRA_COMPILE_ARGS,
        libraries=["dl"],
    )
)

extensions.append(
    Extension("core.fe._linalg", ["core/fe/_linalg.c"], extra_compile_args=EXTRA_COMPILE_ARGS)
)

setup(ext_modules=extensions)
