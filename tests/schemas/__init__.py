"""The test schemas (``everything.proto``, ``legacy.proto``) as google.protobuf classes.

Strategy: the ``.proto`` files beside this module are compiled once per
session by ``grpc_tools.protoc`` (the protoc compiler bundled in the
``grpcio-tools`` wheel, called in-process by
:func:`codec.structs._descriptor_set.compile_protos`) into a ``FileDescriptorSet``;
the classes are then built from that set
with ``descriptor_pool`` + ``message_factory``, the way ``peerbench.py`` (the
benchmark records, at the repository root) builds its own, so no protoc binary
and no generated ``_pb2.py`` file is needed. Each file is also exposed as a
``_pb2``-style module (``DESCRIPTOR`` + one attribute per top-level message
class), the shape ``codec.load_structs`` takes.

The test modules import this package as ``schemas`` (pytest puts ``tests/`` on
``sys.path``); the fuzz targets and figures import it as ``tests.schemas``,
with the repository root on ``sys.path`` (``fuzz/_schemas.py``). So nothing
here may import a module of ``tests/`` by a top-level name (``schemas.*``,
``helpers.*``): ``tests/`` is on no ``sys.path`` of theirs.

``google/protobuf/descriptor.proto`` itself comes from the installed
protobuf package (``google.protobuf.descriptor_pb2``); :data:`DESCRIPTOR_CLASSES`
lists its messages by full name.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FileDescriptor

from codec.structs._descriptor_set import compile_protos

__all__ = [
    "DESCRIPTOR_CLASSES",
    "PROTO_FILES",
    "all_classes",
    "descriptor_pb2",
    "editions_pb2",
    "everything_pb2",
    "extensions_2023_pb2",
    "extensions_pb2",
    "file_descriptor_set",
    "legacy_pb2",
    "message_classes",
    "message_descriptors",
    "pb2_module",
]

SCHEMA_DIR = Path(__file__).resolve().parent
PROTO_FILES = (
    "everything.proto",
    "legacy.proto",
    "editions.proto",
    "extensions.proto",
    "extensions_2023.proto",
)


def _compile(proto_files: tuple[str, ...], proto_dir: Path = SCHEMA_DIR) -> bytes:
    """The serialized FileDescriptorSet of ``proto_files`` of ``proto_dir``, as the
    ``generate`` command compiles ``.proto`` files."""
    return compile_protos(proto_files, [str(proto_dir)])


@functools.cache
def file_descriptor_set_bytes() -> bytes:
    """The serialized ``FileDescriptorSet`` of :data:`PROTO_FILES` (compiled once)."""
    return _compile(PROTO_FILES)


def file_descriptor_set() -> descriptor_pb2.FileDescriptorSet:
    """A fresh ``FileDescriptorSet`` message of :data:`PROTO_FILES`."""
    return descriptor_pb2.FileDescriptorSet.FromString(file_descriptor_set_bytes())


@functools.cache
def _pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    for file in file_descriptor_set().file:  # --include_imports lists dependencies first
        pool.Add(file)
    return pool


def message_descriptors(file: FileDescriptor, *, map_entries: bool = False) -> Iterator[Descriptor]:
    """Every message type of ``file``, nested ones included, parents first."""

    def walk(descriptor: Descriptor) -> Iterator[Descriptor]:
        if descriptor.GetOptions().map_entry and not map_entries:
            return
        yield descriptor
        for nested in descriptor.nested_types:
            yield from walk(nested)

    for top in file.message_types_by_name.values():
        yield from walk(top)


def _module(file_name: str) -> types.ModuleType:
    """A ``_pb2``-style module for one compiled file."""
    return _module_of(_pool().FindFileByName(file_name))


def _module_of(file: FileDescriptor) -> types.ModuleType:
    """A ``_pb2``-style module of a file in a descriptor pool."""
    module = types.ModuleType(file.name.replace(".proto", "_pb2"))
    module.DESCRIPTOR = file  # type: ignore[attr-defined]
    for name, descriptor in file.message_types_by_name.items():
        setattr(module, name, message_factory.GetMessageClass(descriptor))
    for name, enum in file.enum_types_by_name.items():
        setattr(module, name, enum)
    for name, extension in file.extensions_by_name.items():  # as a _pb2 module has them
        setattr(module, name, extension)
    return module


def pb2_module(proto: Path) -> types.ModuleType:
    """A ``_pb2``-style module of a ``.proto`` file anywhere, built in a pool of its own
    (for the schemas a package ships, such as the profiler's)."""
    pool = descriptor_pool.DescriptorPool()
    compiled = _compile((proto.name,), proto.parent)
    for file in descriptor_pb2.FileDescriptorSet.FromString(compiled).file:
        pool.Add(file)
    return _module_of(pool.FindFileByName(proto.name))


everything_pb2 = _module("everything.proto")
legacy_pb2 = _module("legacy.proto")
editions_pb2 = _module("editions.proto")
extensions_pb2 = _module("extensions.proto")
extensions_2023_pb2 = _module("extensions_2023.proto")


def message_classes(module: types.ModuleType) -> dict[str, Any]:
    """Every message class of a ``_pb2``-style module by full name (map entries left out)."""
    return {
        descriptor.full_name: message_factory.GetMessageClass(descriptor)
        for descriptor in message_descriptors(module.DESCRIPTOR)
    }


#: The messages of ``google/protobuf/descriptor.proto``, by full name.
DESCRIPTOR_CLASSES: dict[str, Any] = message_classes(descriptor_pb2)


def all_classes() -> dict[str, Any]:
    """Every message class of the test schemas (but editions.proto) and of descriptor.proto."""
    return {
        **message_classes(everything_pb2),
        **message_classes(legacy_pb2),
        **message_classes(extensions_pb2),
        **message_classes(extensions_2023_pb2),
        **DESCRIPTOR_CLASSES,
    }
