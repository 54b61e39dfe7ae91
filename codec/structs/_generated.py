"""The run time of generated modules (``python -m codec generate``): their classes, at import.

Strategy: a generated module holds its ``.proto`` file as a serialized
``FileDescriptorProto`` (a module of :mod:`codec.wellknown` holds the name
of one of protobuf's own files instead, whose descriptor protobuf has) and
calls :func:`load` once, after importing the modules of the files it
imports (the :mod:`codec.wellknown` modules of protobuf's files are
imported here too, so their classes are always named after them). The file
goes into the one pool codec keeps for generated modules
(:func:`codec.structs._descriptor_set.add_shared`), so a type a file imports is the
class of the importing file's module too, and :func:`codec.load_structs`
gives the same classes for a descriptor set of the same files. The classes
are made by :func:`codec.struct` and :func:`codec.structs._schema.enum_class`, which
name them after the module, so they pickle by name.
"""

from __future__ import annotations

import importlib
from typing import Any

from google.protobuf import descriptor_pb2

from codec.errors import SchemaError
from codec.structs._descriptor_set import WELL_KNOWN_STRUCTS, add_shared, well_known_file
from codec.structs._schema import enum_class, struct

__all__ = ["load"]


def load(module: str, file: bytes | str) -> dict[str, Any]:
    """The top-level message and enum classes of ``file``, by name, for generated ``module``.

    ``file`` is a serialized ``FileDescriptorProto``, or the name of a file
    protobuf ships (``google/protobuf/timestamp.proto``).
    """
    if isinstance(file, str):
        proto = well_known_file(file)
        if proto is None:
            raise SchemaError(f"{module}: protobuf does not ship {file}")
    else:
        proto = descriptor_pb2.FileDescriptorProto.FromString(file)
    for dependency in proto.dependency:  # in case its module was not imported first
        if dependency in WELL_KNOWN_STRUCTS:  # its classes are named after it
            importlib.import_module(WELL_KNOWN_STRUCTS[dependency])
    descriptor = add_shared(proto, module)
    classes: dict[str, Any] = {}
    for name, message in descriptor.message_types_by_name.items():
        classes[name] = struct(message)
    for name, enum_type in descriptor.enum_types_by_name.items():
        classes[name] = enum_class(enum_type)
    return classes
