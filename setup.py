"""Build the compiled core: Cython pure-Python-mode modules compiled in place.

The modules listed in ``COMPILED_MODULES`` are ordinary ``.py`` files with
augmenting ``.pxd`` files. Setting ``CODEC_PURE_PYTHON=1`` skips the build, so
the package runs uncompiled; ``CODEC_REQUIRE_COMPILED=1`` turns a failed
compile into a build error instead of a fallback to pure Python (which
``import codec`` reports with a warning).

Next to each extension built, a file records the SHA-256 of the ``.py`` and
``.pxd`` it was compiled from, hashed before Cython reads them: ``import
codec`` loads an extension only while its sources still hash to that.
"""

import os
import runpy
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

# One list and one digest, shared with the import-time switch in codec/_pure.py.
_PURE = runpy.run_path("codec/_pure.py")
COMPILED_MODULES = _PURE["COMPILED_MODULES"]
_DIGESTS: dict[str, str] = {}  # of each module's sources, as cythonize found them


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


class OptionalBuildExt(build_ext):
    """Fall back to the pure-Python build when no compiler is available.

    Records the sources of each extension built, where it ends up (in place,
    or in the build directory a wheel is made from).
    """

    def run(self) -> None:
        self._built: list[str] = []
        try:
            super().run()
        except Exception as exc:  # any compiler or toolchain failure
            if _flag("CODEC_REQUIRE_COMPILED"):
                raise
            print(f"codec: compiled core not built ({exc}); using pure Python")
            return
        for name in self._built:
            record = _PURE["record_path"](Path(self.get_ext_fullpath(name)))
            record.write_text(_DIGESTS[name] + "\n")

    def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
        try:
            super().build_extension(ext)
        except Exception as exc:
            if _flag("CODEC_REQUIRE_COMPILED"):
                raise
            print(f"codec: {ext.name} not compiled ({exc}); using pure Python")
            return
        self._built.append(ext.name)


# The struct engines' and the Arrow walk's hot helpers are C inline functions too large for
# the compiler to inline by itself (each call costs more than the work it does): there,
# Cython's inline functions are always inlined, where the compiler knows how (GCC and Clang).
_ALWAYS_INLINE = [("CYTHON_INLINE", "inline __attribute__((always_inline))")]
_INLINE_MACROS = (
    {}
    if os.name == "nt"
    else {
        name: _ALWAYS_INLINE
        for name in (
            "codec.structs._plan",
            "codec.structs._struct",
            "codec.structs._encode",
            "codec.structs._decode",
            "codec.arrow._builders",
        )
    }
)


def _extensions() -> list:  # type: ignore[type-arg]
    if _flag("CODEC_PURE_PYTHON"):
        return []
    from Cython.Build import cythonize
    from setuptools import Extension

    _DIGESTS.update((name, _PURE["source_digest"](name)) for name in COMPILED_MODULES)
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
            # Docstrings are as written: inspect reads functions' signatures (binding);
            # a class's __init__ embeds its own, for codec._introspection.
            "embedsignature": False,
            "embedsignature.format": "python",
            "warn.unreachable": False,
            # No object is rebuilt from state it does not check: a class that may be
            # copied or pickled says how itself (__reduce__), and the others refuse.
            "auto_pickle": False,
            # Types come from the .pxd files; annotations are for type checkers.
            "annotation_typing": False,
        },
    )


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
