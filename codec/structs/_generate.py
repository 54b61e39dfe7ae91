"""The code generator of ``python -m codec generate``: one typed module of structs per file.

Strategy: each file of a descriptor set becomes one module, named after it
(``dropin/chat.proto`` is ``dropin.chat_structs``), that holds the file as a
serialized ``FileDescriptorProto`` and builds its classes when imported
(:mod:`codec.structs._generated`), after importing the modules of the files it
imports. Beside that run-time part, an ``if TYPE_CHECKING:`` block
declares the same classes for type checkers: each message class derives
from :class:`codec.Message` and declares its fields with the types reading
them gives (a message field its struct, never None; a repeated field a
``codec.Repeated``, a map a ``codec.Entries``), as properties whose setters
take what assigning them takes where that differs (:meth:`_Module._types`),
a keyword-only ``__init__`` that takes the same, its nested types and the
values of its nested enums; each enum is a :class:`codec.Enum` (an
``IntEnum`` with pb2's enum-type methods). One file, so the module a
program imports is the one its type checker reads.

Protobuf's own files (``google/protobuf/*.proto``) are not written: their
modules ship in :mod:`codec.wellknown`, made by this generator
(:func:`write_well_known`), so every generated module shares one
``Timestamp`` class. ``descriptor.proto`` has none: a field of one of its
types is declared as a :class:`codec.Message` (or a :class:`codec.Enum`).
A file's extensions are module attributes, as in its pb2 module: ``http``
is the extension's ``FieldDescriptor`` (from the pool of generated
modules), ``HTTP_FIELD_NUMBER`` its number.

Packages: no ``__init__.py`` is written, so each directory of the output is
an implicit namespace package (PEP 420), as the directories of a ``.proto``
tree are no packages of their own: ``OUT/google/api`` merges with the
installed ``google`` and ``google.api`` (googleapis-common-protos), whose
``_pb2`` modules keep importing beside the ``_structs`` ones. A regular
package of the same name elsewhere on ``sys.path`` (opentelemetry-proto's
``opentelemetry.proto``) hides the directory, whatever the order, as it
hides any namespace package: a prefix package (``package``, the
``--package`` option) puts the modules under a name of the program's
(``myapp.pb.opentelemetry.proto.trace.v1.trace_structs``), and the modules
import each other from there. A module whose package would be ``codec`` is
refused (:class:`~codec.errors.SchemaError`): the library's package would
hide it, or it the library.

The text is what ``ruff format`` makes of it at its default settings, and
passes ``ruff check``, with ruff's default rules as with ``E`` (line length)
and ``I`` (imports) and ``RUF`` (``RUF100``: a ``noqa`` that is not needed):
a line too long for ruff's is wrapped in a ``# fmt: off`` region, and
marked only when a single name is too long for a line. The imports of
generated modules come in a block per top-level package after an
``# isort: split``, so their order holds whether ruff takes a package for
first or third party. The same set gives the same bytes. The module uses
the names in :data:`RESERVED` and the aliases of the modules it imports
(``_user_structs``); a schema that uses one of them is refused. A field or
type named as a Python keyword, as a struct class's own attribute
(``DESCRIPTOR``, pb2's methods) or with two leading underscores (which a
class body mangles) is left out of the declarations (``getattr`` still
reads a field), as is an enum value named so, or as an ``IntEnum``
attribute, or that has no member (``codec.structs._schema.is_enum_member``), and an
extension named so.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, FileDescriptor

from codec.errors import SchemaError
from codec.structs._descriptor_set import (
    WELL_KNOWN_STRUCTS,
    build_schema,
    content,
    path_in_file,
    well_known_file,
)
from codec.structs._message import Enum
from codec.structs._schema import CLASS_ATTRIBUTES, is_enum_member
from codec.structs._wellknown import bases_of

COMMAND = "python -m codec generate"
#: Names a generated module uses itself, beside the aliases of its imports.
RESERVED = frozenset(
    (
        "TYPE_CHECKING",
        "_FILE",
        "_abc",
        "_builtins",
        "_classes",
        "_codec",
        "_descriptor_set",
        "_extension",
        "_generated",
        "_self",
        "_typing",
        "_wellknown",
    )
)
_WIDTH = 88  # ruff's default line length
_SCALARS = {
    FieldDescriptor.TYPE_DOUBLE: "float",
    FieldDescriptor.TYPE_FLOAT: "float",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_STRING: "str",
    FieldDescriptor.TYPE_BYTES: "bytes",
}
_ENUM_NAMES = frozenset(dir(Enum))
# The library's own package: no generated module may live in a package of that name.
_LIBRARY = __name__.partition(".")[0]


def module_name(file_name: str, package: str = "") -> str | None:
    """The module of a file's structs; None for one of protobuf's files without one.

    ``dropin/chat.proto`` is ``dropin.chat_structs`` (a ``-`` becomes ``_``,
    as protoc's Python modules have it), ``myapp.pb.dropin.chat_structs``
    under the prefix package ``myapp.pb``; ``google/protobuf/timestamp.proto``
    is ``codec.wellknown.timestamp_structs``, whatever the prefix.
    """
    if file_name in WELL_KNOWN_STRUCTS:
        return WELL_KNOWN_STRUCTS[file_name]
    if well_known_file(file_name) is not None:
        return None
    parts = file_name.removesuffix(".proto").replace("-", "_").split("/")
    parts[-1] += "_structs"
    for part in parts:
        if not part.isidentifier() or keyword.iskeyword(part):
            raise SchemaError(f"cannot name a module after {file_name}: {part!r} is no identifier")
    if package:
        parts = [*check_package(package).split("."), *parts]
    if parts[0] == _LIBRARY:
        raise SchemaError(
            f"cannot name a module after {file_name}: its package {_LIBRARY!r} would shadow"
            f" the {_LIBRARY} library, which the generated modules import (or be shadowed by"
            f" it); give the file a path outside {_LIBRARY}/ (the name it is imported by, which"
            " -I sets), or a prefix package (--package)"
        )
    return ".".join(parts)


def check_package(package: str) -> str:
    """``package`` if it is a dotted module name (``myapp.pb``); else a :class:`SchemaError`."""
    for part in package.split("."):
        if not part.isidentifier() or keyword.iskeyword(part):
            raise SchemaError(
                f"cannot put the modules in package {package!r}: {part!r} is no identifier"
            )
    return package


def generate(
    descriptor_set: descriptor_pb2.FileDescriptorSet, source: str, package: str = ""
) -> dict[str, str]:
    """The text of each module to write for the files of a set, by path (``a/b_structs.py``).

    ``source`` names the set in errors; ``package`` is the prefix package
    (:func:`module_name`), under which the modules import each other.
    Protobuf's own files are left out, and no ``__init__.py`` is written
    (see the module docstring).
    """
    written: dict[str, str] = {}
    for file, descriptor, module in files_written(descriptor_set, source, package):
        text = _Module(descriptor, module, package).text(content(file))
        written[module.replace(".", "/") + ".py"] = text
    return written


def files_written(
    descriptor_set: descriptor_pb2.FileDescriptorSet, source: str, package: str
) -> Iterator[tuple[descriptor_pb2.FileDescriptorProto, FileDescriptor, str]]:
    """Each file of a set that has a module written: its proto, its built descriptor and the
    module's name (not protobuf's own files, whose modules are codec's or none)."""
    schema = build_schema(descriptor_set, source)
    for file in descriptor_set.file:
        module = module_name(file.name, package)
        if module is not None and file.name not in WELL_KNOWN_STRUCTS:
            yield file, schema.pool.FindFileByName(file.name), module


def write(modules: dict[str, str], out: Path) -> list[Path]:
    """Write ``modules`` (from :func:`generate`) under ``out``, directories made as needed."""
    paths = []
    for relative, text in modules.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        paths.append(path)
    return paths


def well_known_modules() -> dict[str, str]:
    """The modules of :mod:`codec.wellknown`, by file name (``timestamp_structs.py``)."""
    descriptor_set = descriptor_pb2.FileDescriptorSet()
    for name in WELL_KNOWN_STRUCTS:
        file = well_known_file(name)
        if file is None:  # pragma: no cover - protobuf ships each of them
            raise SchemaError(f"protobuf does not ship {name}")
        descriptor_set.file.append(file)
    schema = build_schema(descriptor_set, "protobuf's well-known files")
    modules = {}
    for name, module in WELL_KNOWN_STRUCTS.items():
        text = render(schema.pool.FindFileByName(name), module, name)
        modules[module.rpartition(".")[2] + ".py"] = text
    return modules


def write_well_known() -> None:
    """Write :func:`well_known_modules` into this package's ``wellknown`` directory."""
    directory = Path(__file__).parent / "wellknown"
    for name, text in well_known_modules().items():
        (directory / name).write_text(text, encoding="utf-8", newline="\n")


def render(file: FileDescriptor, module: str, embedded: bytes | str) -> str:
    """The text of the module of ``file``: ``embedded`` is its content, or its name."""
    return _Module(file, module).text(embedded)


# --- one module ----------------------------------------------------------------------


@dataclass
class _Block:
    """Statements at one indentation: a compound one (a class, a def) is set off by a blank line."""

    items: list[tuple[bool, list[str]]] = field(default_factory=list)  # (compound, lines)

    def add(self, *lines: str, compound: bool = False) -> None:
        self.items.append((compound, list(lines)))

    def nest(self, header: str, body: _Block) -> None:
        self.add(header, *_indent(body.lines() or ["..."]), compound=True)

    def lines(self) -> list[str]:
        out: list[str] = []
        previous: bool | None = None
        for compound, lines in self.items:
            if previous is not None and (compound or previous):
                out.append("")
            out += lines
            previous = compound
        return out


class _Module:
    def __init__(self, file: FileDescriptor, module: str, package: str = "") -> None:
        self.file = file
        self.module = module
        self.extensions = [
            extension for extension in file.extensions_by_name.values() if _declared(extension.name)
        ]
        self.top_names = {
            *file.message_types_by_name,
            *file.enum_types_by_name,
            *(
                value.name
                for enum_type in file.enum_types_by_name.values()
                for value in enum_type.values
            ),
            *file.extensions_by_name,
            *map(_field_number, file.extensions_by_name.values()),
        }
        imported = {dependency.name: dependency for dependency in file.dependencies}
        for referred in self._referred_files():
            imported.setdefault(referred.name, referred)
        modules = {name: module_name(name, package) for name in sorted(imported)}
        self.imports = {name: found for name, found in modules.items() if found is not None}
        self.aliases = _aliases(list(self.imports.values()))
        self.used: set[str] = set()  # the helpers and dependency aliases written
        self._check_names()

    # --- names ----------------------------------------------------------------

    def _referred_files(self) -> Iterator[FileDescriptor]:
        for message in _all_messages(self.file.message_types_by_name.values()):
            for each in message.fields:
                for referred in (each.message_type, each.enum_type):
                    if referred is not None and referred.file.name != self.file.name:
                        yield referred.file

    def _check_names(self) -> None:
        names = set(self.top_names)
        for message in _all_messages(self.file.message_types_by_name.values()):
            names |= _members(message)
        taken = names & (RESERVED | set(self.aliases.values()))
        if taken:
            raise SchemaError(
                f"{self.file.name}: its generated module needs the names {', '.join(sorted(taken))}"
            )

    def _ref(self, descriptor: Descriptor | EnumDescriptor, members: set[str]) -> str:
        """An expression naming the class of ``descriptor`` in a scope with ``members``."""
        path = path_in_file(descriptor)
        if not all(_declared(part) for part in path.split(".")):
            return self._generic(descriptor)
        if descriptor.file.name == self.file.name:
            if path.split(".")[0] in members:
                self.used.add("_self")
                return f"_self.{path}"
            return path
        module = self.imports.get(descriptor.file.name)
        if module is None:  # descriptor.proto's types have no module
            return self._generic(descriptor)
        alias = self.aliases[module]
        self.used.add(alias)
        return f"{alias}.{path}"

    def _generic(self, descriptor: Descriptor | EnumDescriptor) -> str:
        if isinstance(descriptor, Descriptor):
            self.used.add("_codec")
            return "_codec.Message"
        self.used.add("_codec")
        return "_codec.Enum"

    def _builtin(self, name: str, members: set[str]) -> str:
        if name in members or name in self.top_names:
            self.used.add("_builtins")
            return f"_builtins.{name}"
        return name

    def _types(self, each: FieldDescriptor, members: set[str]) -> tuple[str, str]:
        """The annotations of field ``each`` in a class with ``members``: the type reading it
        gives, and the type assigning it (or giving it to ``__init__``) takes.

        A singular message field reads as its struct (an empty one while unset) and takes a
        struct, a dict of its fields or None (which unsets it). A repeated field reads as a
        ``codec.Repeated`` (``codec.RepeatedMessages`` of messages, with ``add``) and takes a
        collection of its elements: a sized iterable, as the run time takes a list, a tuple or
        a numpy array (which no ``Sequence`` annotation admits), but no generator. A map reads
        as a ``codec.Entries`` (``codec.MessageEntries`` of messages, with ``get_or_create``)
        and takes a mapping. Where a message is taken, so is a dict of its fields.
        """
        entry = each.message_type
        if entry is not None and entry.GetOptions().map_entry:
            key_field, value_field = (entry.fields_by_name[n] for n in ("key", "value"))
            key = self._value_type(key_field, members)
            value = self._value_type(value_field, members)
            if value_field.message_type is None:
                return self._generic_of("Entries", key, value), self._abc("Mapping", key, value)
            taken = f"{value} | {self._fields_dict(members)}"
            return self._generic_of("MessageEntries", key, value), self._abc("Mapping", key, taken)
        value = self._value_type(each, members)
        if each.is_repeated:
            if entry is None:
                return self._generic_of("Repeated", value), self._abc("Collection", value)
            taken = f"{value} | {self._fields_dict(members)}"
            return self._generic_of("RepeatedMessages", value), self._abc("Collection", taken)
        if entry is None:
            return value, value
        return value, f"{value} | {self._fields_dict(members)} | None"

    def _generic_of(self, name: str, *arguments: str) -> str:
        """``_codec.Repeated[int]``: a container class of codec's, subscripted."""
        self.used.add("_codec")
        return f"_codec.{name}[{', '.join(arguments)}]"

    def _abc(self, name: str, *arguments: str) -> str:
        """``_abc.Mapping[str, int]``: a class of ``collections.abc``, subscripted."""
        self.used.add("_abc")
        return f"_abc.{name}[{', '.join(arguments)}]"

    def _fields_dict(self, members: set[str]) -> str:
        """The type of a dict of a message's fields, which a message field also takes."""
        self.used.add("_typing")
        return f"{self._builtin('dict', members)}[{self._builtin('str', members)}, _typing.Any]"

    def _value_type(self, each: FieldDescriptor, members: set[str]) -> str:
        if each.message_type is not None:
            return self._ref(each.message_type, members)
        if each.enum_type is not None:
            return self._ref(each.enum_type, members)
        return self._builtin(_SCALARS.get(each.type, "int"), members)

    # --- declarations ---------------------------------------------------------------

    def _message(self, message: Descriptor) -> _Block:
        members = _members(message)
        body = _Block()
        for enum_type in message.enum_types:
            if _declared(enum_type.name):
                body.nest(self._enum_header(enum_type), _enum_body(enum_type))
        for nested in message.nested_types:
            if not nested.GetOptions().map_entry and _declared(nested.name):
                body.nest(self._message_header(nested), self._message(nested))
        for enum_type in message.enum_types:
            if _declared(enum_type.name):
                for value in enum_type.values:
                    if _declared_value(value.name, enum_type) and _declared(value.name):
                        body.add(f"{value.name} = {enum_type.name}.{value.name}")
        fields = [each for each in message.fields if _declared(each.name)]
        parameters = []
        for each in fields:
            read, taken = self._types(each, members)
            if read == taken:
                body.add(f"{each.name}: {read}")
            else:
                lines = self._property(each.name, read, taken, members, _indent_of(message))
                body.add(*lines, compound=True)
            if each.name != "self":
                parameters.append(f"{each.name}: {taken} = ...")
        body.add(*_init(parameters, _indent_of(message)), compound=True)
        return body

    def _property(
        self, name: str, read: str, taken: str, members: set[str], indent: int
    ) -> list[str]:
        """A field whose value reads as one type and is assigned another: a property, its
        setter taking the other type.

        Why a property: it is the form type checkers read as an attribute whose assignment
        takes another type than its reading gives (mypy since 1.16, pyright), with nothing
        but the built-in ``property``; the other form, a generic descriptor class annotated on
        the field (``author: _codec.MessageField[User]``), would add a class to codec that
        exists only for type checkers, and it shows a reader the descriptor, not the type the
        field reads as.
        """
        getter = _signature(name, ["self"], read, indent)
        setter = _signature(name, ["self", f"value: {taken}"], "None", indent)
        decorator = f"@{self._builtin('property', members)}"
        if getter is not None and setter is not None:
            return [decorator, *getter, f"@{name}.setter", *setter]
        return [
            "# fmt: off",
            decorator,
            *_exploded(name, ["self"], read),
            f"@{name}.setter",
            *_exploded(name, ["self", f"value: {taken}"], "None"),
            "# fmt: on",
        ]

    def _message_header(self, message: Descriptor) -> str:
        mixins = bases_of(message.full_name)  # a well-known type's methods (Timestamp.ToDatetime)
        if mixins:
            self.used.add("_wellknown")
            return f"class {message.name}({', '.join(f'_wellknown.{m.__name__}' for m in mixins)}):"
        self.used.add("_codec")
        return f"class {message.name}(_codec.Message):"

    def _enum_header(self, enum_type: EnumDescriptor) -> str:
        self.used.add("_codec")
        return f"class {enum_type.name}(_codec.Enum):"

    # --- the module ------------------------------------------------------------------

    def text(self, embedded: bytes | str) -> str:
        declared = _Block()
        runtime = _Block()
        runtime.add("_classes = _generated.load(__name__, _FILE)")
        for message in self.file.message_types_by_name.values():
            if _declared(message.name):
                declared.nest(self._message_header(message), self._message(message))
                runtime.add(f'{message.name} = _classes["{message.name}"]')
        constants = _Block()
        for enum_type in self.file.enum_types_by_name.values():
            if _declared(enum_type.name):
                declared.nest(self._enum_header(enum_type), _enum_body(enum_type))
                runtime.add(f'{enum_type.name} = _classes["{enum_type.name}"]')
                for value in enum_type.values:
                    if _declared_value(value.name, enum_type):
                        constants.add(f"{value.name} = {enum_type.name}.{value.name}")
        if "_self" in self.used:
            declared.items.insert(0, (False, [f"import {self.module} as _self"]))
        extensions = self._extension_lines() if self.extensions else []

        body = _Block()
        body.add(*self._header(embedded))
        body.add(*self._import_lines(bool(declared.items)), compound=True)
        body.add(*_file_constant(embedded), compound=True)
        if declared.items:
            opening = [""] if declared.items[0][0] else []  # ruff's blank line before a class
            body.add(
                "if TYPE_CHECKING:",
                *_indent([*opening, *declared.lines()]),
                "else:",
                *_indent(runtime.lines()),
                compound=True,
            )
        else:
            body.add("_generated.load(__name__, _FILE)", compound=True)
        if constants.items:
            body.add(*constants.lines(), compound=True)
        if extensions:
            body.add(*extensions, compound=True)
        return "".join(f"{line}\n" for line in _marked(body.lines()))

    def _extension_lines(self) -> list[str]:
        """The file's extensions as pb2 has them: ``http``, the extension's
        ``FieldDescriptor`` (from the pool of generated modules), and ``HTTP_FIELD_NUMBER``."""
        self.used.add("_descriptor_set")
        lines = ["_extension = _descriptor_set.SHARED_POOL.FindExtensionByName"]
        for extension in self.extensions:
            call = f'_extension("{extension.full_name}")'
            if len(f"{extension.name} = {call}") <= _WIDTH:
                lines.append(f"{extension.name} = {call}")
            else:  # as ruff splits a call
                lines += [f"{extension.name} = _extension(", f'    "{extension.full_name}"', ")"]
            lines.append(f"{_field_number(extension)} = {extension.number}")
        return lines

    def _header(self, embedded: bytes | str) -> list[str]:
        held = "protobuf's own descriptor" if isinstance(embedded, str) else "its descriptor below"
        return [
            f"# Generated by `{COMMAND}`: do not edit.",
            f"# Source: {self.file.name}",
            f'"""Struct classes of the .proto file named above, from {held}.',
            "",
            "Importing this module adds the file to codec's pool of generated files,",
            "after the modules of its imports, and makes its classes: those that",
            "codec.load_structs gives for a descriptor set of the same files. The",
            "TYPE_CHECKING block declares them for type checkers.",
            '"""',
            "",
            "from __future__ import annotations",
        ]

    def _import_lines(self, type_checking: bool) -> list[str]:
        """The imports, sorted as ruff sorts them: the standard library's, codec's, then those of
        the generated modules, a block per top-level package after an ``# isort: split``, so that
        the order holds whichever section ruff puts a package in (first or third party)."""
        standard = []
        if "_builtins" in self.used:
            standard.append("import builtins as _builtins")
        if "_abc" in self.used:
            standard.append("import collections.abc as _abc")
        if "_typing" in self.used:
            standard.append("import typing as _typing")
        if type_checking:
            standard.append("from typing import TYPE_CHECKING")
        codec = ["import codec as _codec"] if "_codec" in self.used else []
        own = sorted({"_generated"} | ({"_descriptor_set", "_wellknown"} & self.used))
        codec.append(f"from codec.structs import {', '.join(own)}")
        others: dict[str, list[str]] = {}
        for module in sorted(self.imports.values(), key=_import_order):
            alias = self.aliases[module]
            statement = _import(module, alias, alias in self.used)
            if module.startswith("codec."):
                codec.extend(statement)
            else:
                others.setdefault(module.partition(".")[0], []).extend(statement)
        lines: list[str] = []
        for group in (standard, codec):
            if group:
                lines += [*([""] if lines else []), *group]
        for top in sorted(others, key=_import_order):
            lines += ["", "# isort: split", *others[top]]
        return lines


# --- helpers -----------------------------------------------------------------------------


def _all_messages(tops: Iterable[Descriptor]) -> Iterator[Descriptor]:
    """Each message of ``tops`` and those nested in it, map entries included."""
    for message in tops:
        yield message
        yield from _all_messages(message.nested_types)


def _members(message: Descriptor) -> set[str]:
    """The names a message's class declares."""
    names = {each.name for each in message.fields}
    names |= {nested.name for nested in message.nested_types}
    for enum_type in message.enum_types:
        names.add(enum_type.name)
        names |= {value.name for value in enum_type.values}
    return names


def _declared(name: str) -> bool:
    """Whether a type or field of this name is declared (see the module docstring)."""
    return (
        not keyword.iskeyword(name) and not name.startswith("__") and name not in CLASS_ATTRIBUTES
    )


def _declared_value(name: str, enum_type: EnumDescriptor) -> bool:
    """Whether an enum value of this name is declared (see the module docstring)."""
    return (
        not keyword.iskeyword(name)
        and name not in _ENUM_NAMES
        and not name.startswith("__")
        and is_enum_member(name, enum_type.name)
    )


def _enum_body(enum_type: EnumDescriptor) -> _Block:
    body = _Block()
    for value in enum_type.values:
        if _declared_value(value.name, enum_type):
            body.add(f"{value.name} = {value.number}")
    return body


def _field_number(extension: FieldDescriptor) -> str:
    """The name of the constant of an extension's number, as pb2's: ``HTTP_FIELD_NUMBER``."""
    return f"{extension.name.upper()}_FIELD_NUMBER"


def _indent(lines: list[str]) -> list[str]:
    return [f"    {line}" if line else line for line in lines]


def _indent_of(message: Descriptor) -> int:
    """The indentation of a message's class body: the TYPE_CHECKING block, then nesting."""
    depth = 2
    while message.containing_type is not None:
        message = message.containing_type
        depth += 1
    return 4 * depth


def _marked(lines: list[str]) -> Iterator[str]:
    """The lines, each longer than ruff allows wrapped (:func:`_wrapped`), or marked when it
    cannot be (a comment, a name too long for a line) so that ruff keeps it as it is."""
    kept = False  # inside "# fmt: off"
    for line in lines:
        stripped = line.strip()
        kept = stripped == "# fmt: off" or (kept and stripped != "# fmt: on")
        if len(line) <= _WIDTH or "  # noqa: " in line:  # short, or marked already
            yield line
        elif not stripped.startswith("#") and (wrapped := _wrapped(line)) is not None:
            if kept:
                yield from wrapped
            else:
                indent = line[: len(line) - len(line.lstrip())]
                yield from (f"{indent}# fmt: off", *wrapped, f"{indent}# fmt: on")
        elif kept or stripped.startswith("#"):
            yield f"{line}  # noqa: E501"
        else:
            yield f"{line}  # noqa: E501  # fmt: skip"


# A statement _wrapped wraps: an assignment, a declaration, a parameter (of a def kept from
# ruff, with or without its default), the return type of such a def.
_WRAPPED = re.compile(
    r"(?P<head>\w+(?: =|:)|\) ->) (?P<expression>.+?)(?P<tail>(?: = \.\.\.)?,|: \.\.\.)?"
)
# Where an expression may break: before a dot or a "|", after a "[" or a ", ".
_BREAKS = re.compile(r"(?=\.)|(?<=\[)|(?<=, )|(?= \| )")


def _wrapped(line: str) -> list[str] | None:
    """A long assignment or declaration as lines that fit, for a ``# fmt: off`` region: its
    value or annotation parenthesized, broken where it may break (a piece too long for a line
    on its own is marked); None for a line of another form.

    A type or constant only gets that long through the names of nested types and enum values
    (``TimeSeriesResourceHierarchyLevel.TIME_SERIES_RESOURCE_HIERARCHY_LEVEL_UNSPECIFIED``);
    ruff's own wrapping does not always fit them, and a line left long needs a ``noqa: E501``
    that ruff's default rules (without E501) report as unused (RUF100).
    """
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    match = _WRAPPED.fullmatch(stripped)
    if match is None:
        return None
    room = _WIDTH - len(indent) - 4
    rows: list[str] = []
    for piece in _BREAKS.split(match["expression"]):
        if rows and len(rows[-1]) + len(piece) <= room:
            rows[-1] += piece
        else:
            rows.append(piece.lstrip())
    inner = [f"{indent}    {row}" + ("  # noqa: E501" if len(row) > room else "") for row in rows]
    return [f"{indent}{match['head']} (", *inner, f"{indent}){match['tail'] or ''}"]


def _init(parameters: list[str], indent: int) -> list[str]:
    """``__init__`` at ``indent``: one line when it fits, else a parameter a line, as ruff
    writes it, or kept from ruff when a parameter is too long for a line (:func:`_marked`)."""
    signature = ["self", *(["*"] if parameters else []), *parameters]
    lines = _signature("__init__", signature, "None", indent)
    if lines is not None:
        return lines
    return ["# fmt: off", *_exploded("__init__", signature, "None"), "# fmt: on"]


def _signature(name: str, parameters: list[str], returns: str, indent: int) -> list[str] | None:
    """A def with the body ``...`` at ``indent`` as ruff writes it: one line when it fits,
    else a parameter a line; None when a line of that is too long (ruff would break it)."""
    one_line = f"def {name}({', '.join(parameters)}) -> {returns}: ..."
    if indent + len(one_line) <= _WIDTH:
        return [one_line]
    lines = _exploded(name, parameters, returns)
    return lines if all(indent + len(line) <= _WIDTH for line in lines) else None


def _exploded(name: str, parameters: list[str], returns: str) -> list[str]:
    """A def with the body ``...``, a parameter a line."""
    return [f"def {name}(", *(f"    {p}," for p in parameters), f") -> {returns}: ..."]


def _file_constant(embedded: bytes | str) -> list[str]:
    """``_FILE = ...``: the file's name, or its bytes in lines ruff keeps as they are."""
    if isinstance(embedded, str):
        return [f'_FILE = "{embedded}"']
    escaped = [_escape(byte) for byte in embedded]
    line = f'_FILE = b"{"".join(escaped)}"'
    if len(line) <= _WIDTH:
        return [line]
    chunks, chunk = [], ""
    for piece in escaped:
        if len(chunk) + len(piece) > _WIDTH - 7:  # '    b"' and '"'
            chunks.append(chunk)
            chunk = ""
        chunk += piece
    chunks.append(chunk)
    return ["_FILE = (", *(f'    b"{chunk}"' for chunk in chunks), ")"]


def _escape(byte: int) -> str:
    """A byte in a bytes literal ruff keeps as it is (double quotes, lower-case escapes)."""
    if 0x20 <= byte < 0x7F and byte not in b'"\\':
        return chr(byte)
    return f"\\x{byte:02x}"


def _aliases(modules: list[str]) -> dict[str, str]:
    """The name each imported module goes by: ``_user_structs``, or the whole path if two
    share a last part."""
    last = [module.rpartition(".")[2] for module in modules]
    return {
        module: "_" + (name if last.count(name) == 1 else module.replace(".", "_"))
        for module, name in zip(modules, last, strict=True)
    }


def _import_order(module: str) -> tuple[object, ...]:
    """The order of ruff's import sorting: natural, case-insensitive, then case-sensitive."""
    return (_natural(module.lower()), module)


def _natural(text: str) -> tuple[object, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def _import(module: str, alias: str, used: bool) -> list[str]:
    """The import of a module as ruff's import sorting writes it; an import only made for the
    module's file to go first is marked as such."""
    package, _, name = module.rpartition(".")
    unused = "" if used else "  # noqa: F401 (its file goes first)"
    if not package:
        return [f"import {name} as {alias}{unused}"]
    statement = f"from {package} import {name} as {alias}"
    if len(statement) <= _WIDTH:
        return [statement + unused]
    member = f"    {name} as {alias},"
    if len(member) > _WIDTH:
        member += "  # noqa: E501" + ("" if used else ", F401 (its file goes first)")
    else:
        member += unused
    return [f"from {package} import (", member, ")"]
