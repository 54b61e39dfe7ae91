"""Descriptor sets: a serialized ``FileDescriptorSet`` built into a pool of its own.

Strategy: one loader for every caller that takes a schema as a descriptor
set (:func:`codec.load_structs` and the ``dump`` and ``encode`` commands), so
each rule lives once. The files of a set are added to a new
``DescriptorPool`` in dependency order, whatever order the set lists them
in; an import the set does not hold is taken from the files protobuf ships
(``google/protobuf/*.proto``), so a set written without
``--include_imports`` still loads when it only imports well-known types.
Anything else (a missing import, circular imports, a file the pool refuses)
is a :class:`SchemaError` naming the set and the file. The message types of
a set are those of its own files, nested ones included, map entries left
out (:func:`message_types`, also the rule for a ``_pb2`` module).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import message as pb_message
from google.protobuf.descriptor import Descriptor

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


class SchemaError(ValueError):
    """A descriptor set that cannot be read or built, or a type it does not define."""


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
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as exc:
        raise SchemaError(f"cannot read descriptor set {path}: {exc.strerror or exc}") from None
    try:
        descriptor_set = descriptor_pb2.FileDescriptorSet.FromString(data)
    except pb_message.DecodeError:
        descriptor_set = None
    if descriptor_set is None or not descriptor_set.file:
        raise SchemaError(
            f"{path} is not a serialized FileDescriptorSet "
            "(write one with: protoc --include_imports --descriptor_set_out=FILE ...)"
        )
    return build_schema(descriptor_set, path)


def build_schema(descriptor_set: descriptor_pb2.FileDescriptorSet, source: str) -> Schema:
    """Build the files of ``descriptor_set`` into a new pool, imports first.

    ``source`` names the set in the errors.
    """
    files = {file.name: file for file in descriptor_set.file}
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str, importer: str, chain: tuple[str, ...]) -> None:
        if name in added:
            return
        if name in chain:
            raise SchemaError(f"{source}: circular imports: {' -> '.join((*chain, name))}")
        file = files.get(name) or _well_known_file(name)
        if file is None:
            raise SchemaError(
                f"{source}: {importer} imports {name}, which the set does not hold "
                "(write the set with protoc --include_imports)"
            )
        for dependency in file.dependency:
            add(dependency, name, (*chain, name))
        try:
            pool.Add(file)
        except Exception as exc:  # upb raises TypeError, the Python backend others
            raise SchemaError(f"{source}: cannot build {name}: {exc}") from None
        added.add(name)

    for name in files:
        add(name, source, ())
    tops = (
        top for name in files for top in pool.FindFileByName(name).message_types_by_name.values()
    )
    found = {descriptor.full_name: descriptor for descriptor in message_types(tops)}
    return Schema(source, pool, dict(sorted(found.items())))


def message_types(tops: Iterable[Descriptor]) -> Iterator[Descriptor]:
    """Each of the message types ``tops``, then those nested in it; map entries left out."""
    for descriptor in tops:
        if not descriptor.GetOptions().map_entry:
            yield descriptor
            yield from message_types(descriptor.nested_types)


def _well_known_file(name: str) -> descriptor_pb2.FileDescriptorProto | None:
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
