"""Stand-in for the ``cython`` module when Cython is not installed.

The compiled modules are Cython pure-Python-mode files. Their type
declarations live in augmenting ``.pxd`` files, and C-only code sits behind
``if cython.compiled:``. Uncompiled, that is the only name they need.
"""

compiled = False
