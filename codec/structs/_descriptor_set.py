"""Descriptor sets: a serialized ``FileDescriptorSet`` built into a descriptor pool.

Strategy: one loader for every caller that takes a schema as a descriptor
set (:func:`codec.load_structs`, the ``dump``, ``encode`` and ``generate``
commands), so each rule lives once. The files of a set are put in
dependency order, whatever order the set lists them in; an import the set
does not hold is taken from the files protobuf ships
(``google/protobuf/*.proto``), so a set written without
``--include_imports`` still loads when it only imports well-known types.
Anything else (a missing import, circular imports, a file the pool refuses)
is a :class:`SchemaError` naming the set and the file. The message types of
a set are those of its own files, nested ones included, map entries left
out (:func:`message_types`, also the rule for a ``_pb2`` module).

Generated modules (``python -m codec generate``) add their files to one pool
that codec keeps for them, :data:`SHARED_POOL`, each file once, with the
name of the module it came from. :func:`build_schema` decides, here and
nowhere else, when a set is built into that pool: when every file the set
needs is there already with the same content (source locations and
comments aside), the set's schema is that pool's, so ``load_structs`` gives
the classes of the generated modules; otherwise the set gets a new pool.
The shared pool only grows, and a file in it never changes.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.resources
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import message as pb_message
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FileDescriptor

from codec.errors import SchemaError

# Files a descriptor set may import without holding them: protobuf ships them.
_WELL_KNOWN_MODULES = (
    "any_pb2",
    "api_pb2",
    "descriptor_pb2",
    "duration_pb2",
    "empty_pb2",
    "field_mask_pb2",
    "source_context_pb2",
    "struct_pb2",
    "timestamp_pb2",
    "type_pb2",
    "wrappers_pb2",
)


#: The pool of the files of generated modules, each added once by :func:`add_shared`.
SHARED_POOL = descriptor_pool.DescriptorPool()
_shared: dict[str, tuple[bytes, str | None]] = {}  # file name: (its content, its module)
_adding = threading.RLock()  # held while files are added to SHARED_POOL (imports first)

#: The modules of codec.wellknown, by the file of protobuf's each is made from
#: (descriptor.proto, which changes with protobuf, has none).
WELL_KNOWN_STRUCTS = {
    f"google/protobuf/{name.removesuffix('_pb2')}.proto": (
        f"codec.wellknown.{name.removesuffix('_pb2')}_structs"
    )
    for name in _WELL_KNOWN_MODULES
    if name != "descriptor_pb2"
}


@dataclass
class Schema:
    """The message types of a descriptor set, in a pool of their own."""

    source: str  # where the set came from, as errors name it
    pool: descriptor_pool.DescriptorPool
    messages: dict[str, Descriptor]  # every message type by full name, sorted, nested included

    def message_class(self, type_name: str) -> type[pb_message.Message]:
        """The google.protobuf class of ``type_name``; close matches in the error if unknown."""
        name = type_name.lstrip(".")
        descriptor = self.messages.get(name)
        if descriptor is None:
            raise SchemaError(self._unknown(name))
        return message_factory.GetMessageClass(descriptor)

    def _unknown(self, name: str) -> str:
        where = f"no message type {name!r} in {self.source}"
        names = list(self.messages)
        if not names:
            return f"{where}; it defines no message types"
        # Compare last components, case-insensitively: whole names look alike
        # whenever they share a package, and a package left out or misspelt
        # still finds its type.
        by_short: dict[str, list[str]] = {}
        for n in names:
            by_short.setdefault(n.rpartition(".")[2].lower(), []).append(n)
        short = name.rpartition(".")[2].lower()
        suggestions: list[str] = []
        for key in difflib.get_close_matches(short, by_short, n=5, cutoff=0.7):
            suggestions += by_short[key]  # best first; an exact match scores 1
        suggestions = suggestions[:5]
        if suggestions:
            return f"{where}; close matches: {', '.join(suggestions)}"
        listed = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
        return f"{where}; it defines: {listed}"


def load_schema(path: str) -> Schema:
    """Read a serialized ``FileDescriptorSet`` from a file and build it (:func:`build_schema`)."""
    return build_schema(read_set(path), path)


def read_set(path: str) -> descriptor_pb2.FileDescriptorSet:
    """The ``FileDescriptorSet`` serialized in a file; a :class:`SchemaError` if it is not one."""
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as exc:
        raise SchemaError(f"cannot read descriptor set {path}: {exc.strerror or exc}") from None
    return parse_set(data, path)


def parse_set(data: bytes, source: str) -> descriptor_pb2.FileDescriptorSet:
    """The ``FileDescriptorSet`` serialized in ``data``, read from ``source``; a
    :class:`SchemaError` if it is not one."""
    try:
        descriptor_set = descriptor_pb2.FileDescriptorSet.FromString(data)
    except pb_message.DecodeError:
        descriptor_set = None
    if descriptor_set is None or not descriptor_set.file:
        raise SchemaError(
            f"{source} is not a serialized FileDescriptorSet "
            "(write one with: protoc --include_imports --descriptor_set_out=FILE ...)"
        )
    return descriptor_set


def build_schema(descriptor_set: descriptor_pb2.FileDescriptorSet, source: str) -> Schema:
    """Build the files of ``descriptor_set``, imports first, into a pool.

    That pool is :data:`SHARED_POOL` when every file the set needs is there
    with the same content (:func:`content`), so its classes are those of
    the generated modules; else a new pool. ``source`` names the set in the
    errors.
    """
    files = {file.name: file for file in descriptor_set.file}
    needed: dict[str, descriptor_pb2.FileDescriptorProto] = {}  # in dependency order

    def add(name: str, importer: str, chain: tuple[str, ...]) -> None:
        if name in needed:
            return
        if name in chain:
            raise SchemaError(f"{source}: circular imports: {' -> '.join((*chain, name))}")
        file = files.get(name) or well_known_file(name)
        if file is None:
            raise SchemaError(
                f"{source}: {importer} imports {name}, which the set does not hold "
                "(write the set with protoc --include_imports)"
            )
        for dependency in file.dependency:
            add(dependency, name, (*chain, name))
        needed[name] = file

    for name in files:
        add(name, source, ())
    if all(_shared.get(name, (None,))[0] == content(file) for name, file in needed.items()):
        pool = SHARED_POOL
    else:
        pool = descriptor_pool.DescriptorPool()
        for name, file in needed.items():
            _add_to(pool, file, f"{source}: cannot build {name}")
    tops = (
        top for name in files for top in pool.FindFileByName(name).message_types_by_name.values()
    )
    found = {descriptor.full_name: descriptor for descriptor in message_types(tops)}
    return Schema(source, pool, dict(sorted(found.items())))


def content(file: descriptor_pb2.FileDescriptorProto) -> bytes:
    """What a file says, as bytes to compare: its serialization without source locations."""
    if file.HasField("source_code_info"):
        stripped = descriptor_pb2.FileDescriptorProto()
        stripped.CopyFrom(file)
        stripped.ClearField("source_code_info")
        file = stripped
    return file.SerializeToString(deterministic=True)


def add_shared(file: descriptor_pb2.FileDescriptorProto, module: str | None) -> FileDescriptor:
    """Add the file of generated module ``module`` to :data:`SHARED_POOL`, unless it is there.

    Its imports must be there already (a generated module imports the modules
    of its imports first), or be files protobuf ships, added as they are
    needed. The same name with other content is a :class:`SchemaError`.
    """
    with _adding:
        known = _shared.get(file.name)
        if known is None:
            for dependency in file.dependency:
                if dependency not in _shared:
                    well_known = well_known_file(dependency)
                    if well_known is None:
                        raise SchemaError(
                            f"{module}: {file.name} imports {dependency}, which is in no "
                            "generated module imported before it"
                        )
                    add_shared(well_known, None)
            _add_to(SHARED_POOL, file, f"{module}: cannot add {file.name}")
            _shared[file.name] = (content(file), module)
        elif known[0] != content(file):
            raise SchemaError(
                f"{module}: {file.name} is already in the pool of generated modules, with other "
                f"content (from {known[1] or 'protobuf'}): regenerate the modules of one schema"
            )
    return SHARED_POOL.FindFileByName(file.name)


def path_in_file(descriptor: Descriptor | EnumDescriptor) -> str:
    """A type's name in its file, its package left out: ``ChatMessage.Reaction``."""
    package = descriptor.file.package
    return descriptor.full_name[len(package) + 1 :] if package else descriptor.full_name


def shared_module(file: FileDescriptor) -> str | None:
    """The generated module ``file`` came from, if it is a file of :data:`SHARED_POOL`."""
    if file.pool is not SHARED_POOL:
        return None
    return _shared.get(file.name, (b"", None))[1]


def _add_to(
    pool: descriptor_pool.DescriptorPool, file: descriptor_pb2.FileDescriptorProto, failure: str
) -> None:
    try:
        pool.Add(file)
    except Exception as exc:  # upb raises TypeError, the Python backend others
        raise SchemaError(f"{failure}: {exc}") from None


def compile_protos(proto_files: Sequence[str], include_dirs: Sequence[str]) -> bytes:
    """The serialized ``FileDescriptorSet`` of ``.proto`` files, imports included.

    Compiled in-process by ``grpc_tools.protoc`` (the ``grpcio-tools``
    package), each file named relative to one of ``include_dirs``; the
    well-known files come from the copies that package ships. protoc's own
    messages go to stderr; a failure is a :class:`SchemaError`.
    """
    try:
        from grpc_tools import protoc  # type: ignore[import-untyped]
    except ImportError:
        raise SchemaError(
            "compiling .proto files needs grpcio-tools (pip install grpcio-tools); "
            "or give a descriptor set written by protoc --include_imports --descriptor_set_out"
        ) from None
    well_known = importlib.resources.files("grpc_tools") / "_proto"
    with tempfile.TemporaryDirectory(prefix="codec-protoc-") as tmp:
        out = Path(tmp) / "set.pb"
        args = [
            "grpc_tools.protoc",
            *(f"--proto_path={directory}" for directory in include_dirs),
            f"--proto_path={well_known}",
            f"--descriptor_set_out={out}",
            "--include_imports",
            *proto_files,
        ]
        status = protoc.main(args)
        if status != 0 or not out.exists():
            raise SchemaError(f"protoc failed (status {status}) on {' '.join(proto_files)}")
        return out.read_bytes()


def message_types(tops: Iterable[Descriptor]) -> Iterator[Descriptor]:
    """Each of the message types ``tops``, then those nested in it; map entries left out."""
    for descriptor in tops:
        if not descriptor.GetOptions().map_entry:
            yield descriptor
            yield from message_types(descriptor.nested_types)


def well_known_file(name: str) -> descriptor_pb2.FileDescriptorProto | None:
    """A file that protobuf itself ships (``google/protobuf/*.proto``), or None."""
    if not name.startswith("google/protobuf/"):
        return None
    for module in _WELL_KNOWN_MODULES:  # each registers its file in the default pool
        importlib.import_module(f"google.protobuf.{module}")
    try:
        found = descriptor_pool.Default().FindFileByName(name)
    except KeyError:
        return None
    proto = descriptor_pb2.FileDescriptorProto()
    found.CopyToProto(proto)
    return proto
