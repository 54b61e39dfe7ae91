"""Struct classes of protobuf's well-known types, one module per file, typed.

Strategy: the modules are those ``python -m codec generate`` writes, made
from protobuf's own descriptors of its files (``google/protobuf/any.proto``
is :mod:`codec.wellknown.any_structs`, ``timestamp.proto`` is
:mod:`codec.wellknown.timestamp_structs`, ...) and shipped with codec, so a
generated module that imports one of them uses the class every other one
uses, and a type checker finds it. Importing one adds protobuf's descriptor
of its file to codec's pool of generated files. ``descriptor.proto``, which
changes with protobuf, has no module here. ``tests/test_generate.py``
checks that each module is what the generator writes today; after a change
to the generator, ``python -c "from codec.structs import _generate;
_generate.write_well_known()"`` writes them again.
"""
