"""Build the compiled core: Cython pure-Python-mode modules compiled in place.

The modules listed in ``COMPILED_MODULES`` are ordinary ``.py`` files with
augmenting ``.pxd`` files. Setting ``CODEC_PURE_PYTHON=1`` skips the build, so
the package runs uncompiled; ``CODEC_REQUIRE_COMPILED=1`` turns a failed
compile into a build error instead of a silent fallback to pure Python.
"""

import os
import runpy

from setuptools import setup
from setuptools.command.build_ext import build_ext

# One list, shared with the import-time switch in codec/_pure.py.
COMPILED_MODULES = runpy.run_path("codec/_pure.py")["COMPILED_MODULES"]


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


class OptionalBuildExt(build_ext):
    """Fall back to the pure-Python build when no compiler is available."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # any compiler or toolchain failure
            if _flag("CODEC_REQUIRE_COMPILED"):
                raise
            print(f"codec: compiled core not built ({exc}); using pure Python")

    def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
        try:
            super().build_extension(ext)
        except Exception as exc:
            if _flag("CODEC_REQUIRE_COMPILED"):
                raise
            print(f"codec: {ext.name} not compiled ({exc}); using pure Python")


# The struct encoder's hot helpers are C inline functions too large for the compiler to
# inline by itself (each call costs more than the work it does): there, Cython's inline
# functions are always inlined, where the compiler knows how (GCC and Clang).
_INLINE_MACROS = (
    {}
    if os.name == "nt"
    else {"codec._struct": [("CYTHON_INLINE", "inline __attribute__((always_inline))")]}
)


def _extensions() -> list:  # type: ignore[type-arg]
    if _flag("CODEC_PURE_PYTHON"):
        return []
    from Cython.Build import cythonize
    from setuptools import Extension

    extensions = [
        Extension(
            name,
            [name.replace(".", "/") + ".py"],
            extra_compile_args=["-O2"],
            define_macros=_INLINE_MACROS.get(name, []),
        )
        for name in COMPILED_MODULES
    ]
    return cythonize(
        extensions,
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "embedsignature": True,
            "warn.unreachable": False,
            # Types come from the .pxd files; annotations are for type checkers.
            "annotation_typing": False,
        },
    )


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
