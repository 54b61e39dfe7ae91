"""The gRPC part of ``python -m codec generate --grpc``: a module of stubs per file of services.

Strategy: a pb2 stub serializes with the pb2 class's method, so it cannot
send a struct; the module written here for ``dropin/chat.proto``
(``dropin.chat_structs_grpc``, beside ``dropin.chat_structs``) binds the
same methods to struct classes: requests and responses are written by
:func:`codec.encode` and read by the struct class's ``FromString``. The
bytes on the wire are protobuf's, so either side may be pb2's.

For each service ``S`` the module holds a table of its methods (name,
cardinality, request and response classes) and, over it:

- ``SStub`` and ``SAsyncStub``: a multi-callable per method over a
  channel, of ``grpc`` and of ``grpc.aio`` (the same object at run time,
  typed for each; ``SStub`` takes either channel, as a pb2 stub does);
- ``SServicer`` and ``SAsyncServicer``: the server side, to subclass, with
  ``def`` methods for a ``grpc`` server and ``async def`` ones for a
  ``grpc.aio`` server; a method left as it is aborts the call with
  ``UNIMPLEMENTED``, as pb2's does;
- ``add_SServicer_to_server(servicer, server)``: serves either servicer on
  either server (``grpc``'s method handlers take plain functions and
  coroutine functions alike).

The text is what ``ruff format`` makes of it, as :mod:`codec.structs._generate`'s
is. A method named as a Python keyword, or with two leading underscores,
cannot be a method of a class and is refused (:class:`SchemaError`), as is
a method whose request or response type has no struct module
(``descriptor.proto``'s types).
"""

from __future__ import annotations

import keyword
from collections.abc import Iterator

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FileDescriptor, MethodDescriptor

from codec.errors import SchemaError
from codec.structs._descriptor_set import path_in_file
from codec.structs._generate import (
    COMMAND,
    _aliases,
    _import,
    _import_order,
    files_written,
    module_name,
)

_WIDTH = 88  # ruff's default line length
#: The names the module uses itself, beside the aliases of its imports.
RESERVED = frozenset(
    ("Any", "_Methods", "_UNIMPLEMENTED", "_abc", "_add", "_aio", "_bind", "_codec", "_grpc")
)


def generate(
    descriptor_set: descriptor_pb2.FileDescriptorSet, source: str, package: str = ""
) -> dict[str, str]:
    """The text of the gRPC module of each file of a set that has services, by path
    (``a/b_structs_grpc.py``); ``package`` is the prefix package, as for the structs."""
    written: dict[str, str] = {}
    for _, descriptor, module in files_written(descriptor_set, source, package):
        if descriptor.services_by_name:
            text = _GrpcModule(descriptor, package).text()
            written[module.replace(".", "/") + "_grpc.py"] = text
    return written


def _kind(method: MethodDescriptor) -> str:
    """The cardinality of a method, as grpc names its multi-callables: ``unary_stream``."""
    streams = (method.client_streaming, method.server_streaming)
    return "_".join("stream" if each else "unary" for each in streams)


class _GrpcModule:
    def __init__(self, file: FileDescriptor, package: str) -> None:
        self.file = file
        types = [
            message
            for service in file.services_by_name.values()
            for method in service.methods
            for message in (method.input_type, method.output_type)
        ]
        modules = {}
        for message in types:
            module = module_name(message.file.name, package)
            if module is None:
                raise SchemaError(
                    f"{file.name}: {message.full_name}, a type of one of its methods, has no "
                    "struct module (descriptor.proto's types have none)"
                )
            modules[message.file.name] = module
        self.modules = modules
        self.aliases = _aliases(sorted(set(modules.values())))
        self._check_names()

    def _check_names(self) -> None:
        names: set[str] = set()
        for service in self.file.services_by_name.values():
            names |= {f"{service.name}{suffix}" for suffix in ("Stub", "AsyncStub")}
            names |= {f"{service.name}{suffix}" for suffix in ("Servicer", "AsyncServicer")}
            names |= {f"add_{service.name}Servicer_to_server", f"_{service.name}_methods"}
            for method in service.methods:
                names.add(method.name)  # class attributes, beside the annotations that use these
                if keyword.iskeyword(method.name) or method.name.startswith("__"):
                    raise SchemaError(
                        f"{self.file.name}: {service.full_name}.{method.name} cannot be the name"
                        " of a Python method"
                    )
        taken = names & (RESERVED | set(self.aliases.values()))
        if taken:
            raise SchemaError(
                f"{self.file.name}: its gRPC module needs the names {', '.join(sorted(taken))}"
            )

    def _streams(self) -> bool:
        """Whether a method of the file streams (its annotations use ``_abc``)."""
        return any(
            method.client_streaming or method.server_streaming
            for service in self.file.services_by_name.values()
            for method in service.methods
        )

    def _ref(self, message: Descriptor) -> str:
        return f"{self.aliases[self.modules[message.file.name]]}.{path_in_file(message)}"

    # --- the module -------------------------------------------------------------------

    def text(self) -> str:
        lines = [
            f"# Generated by `{COMMAND} --grpc`: do not edit.",
            f"# Source: {self.file.name}",
            '"""gRPC stubs and servicers of the services of the .proto file above, in structs.',
            "",
            "For each service S: SStub (of a grpc channel) and SAsyncStub (of a grpc.aio one),",
            "SServicer (for a grpc server) and SAsyncServicer (for a grpc.aio one), whose methods",
            "answer UNIMPLEMENTED until overridden, and add_SServicer_to_server, which serves",
            "either. Messages are written by codec.encode, read by the struct class's FromString.",
            '"""',
            "",
            "from __future__ import annotations",
            "",
            *(["import collections.abc as _abc"] if self._streams() else []),
            "from typing import Any",
            "",
            "import grpc as _grpc",
            "from grpc import aio as _aio",
            "",
            "# isort: split",
            "import codec as _codec",
        ]
        tops: dict[str, list[str]] = {}
        for module in sorted(self.aliases, key=_import_order):
            top = "codec" if module.startswith("codec.") else module.partition(".")[0]
            tops.setdefault(top, []).extend(_import(module, self.aliases[module], True))
        lines += tops.pop("codec", [])
        for top in sorted(tops, key=_import_order):
            lines += ["", "# isort: split", *tops[top]]
        lines += ["", *_HELPERS]
        for service in self.file.services_by_name.values():
            for block in self._service(service.full_name, service.name, list(service.methods)):
                lines += ["", "", *block]
        return "".join(f"{line}\n" for line in _marked(lines))

    def _service(
        self, full_name: str, name: str, methods: list[MethodDescriptor]
    ) -> Iterator[list[str]]:
        table = f"_{name}_methods"
        entries = [f"{table}: _Methods = {{"]
        for method in methods:
            items = [f'"{_kind(method)}"', self._ref(method.input_type)]
            items.append(self._ref(method.output_type))
            entries += _bracketed("    ", f'"{method.name}": (', items, "),", collection=True)
        yield [*entries, "}"]

        bind = _bracketed("        ", "_bind(", ["self", "channel", f'"{full_name}"', table], ")")
        for suffix, where, channel in (("Stub", "_grpc", "_grpc"), ("AsyncStub", "_aio", "_aio")):
            if where == "_aio":
                doc = f'    """Calls {name}\'s methods over a grpc.aio channel."""'
            else:
                doc = f'    """Calls {name}\'s methods over a grpc channel (or a grpc.aio one)."""'
            block = [f"class {name}{suffix}:", doc, ""]
            for method in methods:
                types = [self._ref(method.input_type), self._ref(method.output_type)]
                callable_type = f"{where}.{_callable(method)}["
                block += _bracketed("    ", f"{method.name}: {callable_type}", types, "]")
            block += ["", f"    def __init__(self, channel: {channel}.Channel) -> None:", *bind]
            yield block

        yield self._servicer(name, methods, asynchronous=False)
        yield self._servicer(name, methods, asynchronous=True)
        parameters = [
            f"servicer: {name}Servicer | {name}AsyncServicer",
            "server: _grpc.Server | _aio.Server",
        ]
        yield [
            *_bracketed("", f"def add_{name}Servicer_to_server(", parameters, ") -> None:"),
            f'    """Serve ``servicer``\'s methods of {name} on ``server``."""',
            *_bracketed("    ", "_add(", ["servicer", "server", f'"{full_name}"', table], ")"),
        ]

    def _servicer(
        self, name: str, methods: list[MethodDescriptor], asynchronous: bool
    ) -> list[str]:
        kind, suffix = ("grpc.aio", "AsyncServicer") if asynchronous else ("grpc", "Servicer")
        block = [
            f"class {name}{suffix}:",
            f'    """{name} for a {kind} server, to subclass: a method not overridden',
            f'    answers UNIMPLEMENTED. add_{name}Servicer_to_server serves it."""',
        ]
        iterator = "_abc.AsyncIterator" if asynchronous else "_abc.Iterator"
        for method in methods:
            request, response = self._ref(method.input_type), self._ref(method.output_type)
            context = "_aio.ServicerContext[Any, Any]" if asynchronous else "_grpc.ServicerContext"
            if method.client_streaming:
                argument = f"request_iterator: {iterator}[{request}]"
            else:
                argument = f"request: {request}"
            returns = f"{iterator}[{response}]" if method.server_streaming else response
            define = "async def" if asynchronous else "def"
            abort = "await context.abort" if asynchronous else "context.abort"
            block += [
                "",
                *_bracketed(
                    "    ",
                    f"{define} {method.name}(",
                    ["self", argument, f"context: {context}"],
                    f") -> {returns}:",
                ),
                f"        {abort}(_grpc.StatusCode.UNIMPLEMENTED, _UNIMPLEMENTED)",
            ]
            if asynchronous and method.server_streaming:
                block.append(f"        yield {response}()  # never reached: an async generator")
        return block


# Written once in each module: the binding of a table of methods to a stub and to a server.
_HELPERS = [
    '_UNIMPLEMENTED = "Method not implemented!"  # the details pb2 servicers give',
    "# A service's methods: name: (cardinality, request class, response class).",
    "_Methods = dict[str, tuple[str, type[_codec.Message], type[_codec.Message]]]",
    "",
    "",
    "def _bind(",
    "    stub: object,",
    "    channel: _grpc.Channel | _aio.Channel,",
    "    service: str,",
    "    methods: _Methods,",
    ") -> None:",
    '    """Set a multi-callable on ``stub`` for each method of ``service``."""',
    "    for name, (kind, _request, response) in methods.items():",
    "        multi_callable = getattr(channel, kind)(",
    '            f"/{service}/{name}",',
    "            request_serializer=_codec.encode,",
    "            response_deserializer=response.FromString,",
    "        )",
    "        setattr(stub, name, multi_callable)",
    "",
    "",
    "def _add(",
    "    servicer: object,",
    "    server: _grpc.Server | _aio.Server,",
    "    service: str,",
    "    methods: _Methods,",
    ") -> None:",
    '    """Serve the methods of ``service`` that ``servicer`` has on ``server``."""',
    "    handlers: dict[str, Any] = {",
    '        name: getattr(_grpc, f"{kind}_rpc_method_handler")(',
    "            getattr(servicer, name),",
    "            request_deserializer=request.FromString,",
    "            response_serializer=_codec.encode,",
    "        )",
    "        for name, (kind, request, _response) in methods.items()",
    "    }",
    "    server.add_generic_rpc_handlers(",
    "        (_grpc.method_handlers_generic_handler(service, handlers),)",
    "    )",
]


def _callable(method: MethodDescriptor) -> str:
    """The class of a method's multi-callable: ``UnaryStreamMultiCallable``."""
    return "".join(part.capitalize() for part in _kind(method).split("_")) + "MultiCallable"


def _bracketed(
    indent: str, head: str, items: list[str], tail: str, collection: bool = False
) -> list[str]:
    """``head``, ``items`` joined by commas, ``tail``: on one line when it fits, else as ruff
    splits brackets: the items on a line of their own (not those of a ``collection``), else
    one a line with a trailing comma."""
    one = f"{indent}{head}{', '.join(items)}{tail}"
    if len(one) <= _WIDTH:
        return [one]
    inner = f"{indent}    {', '.join(items)}"
    if len(inner) <= _WIDTH and not collection:
        return [f"{indent}{head}", inner, f"{indent}{tail}"]
    return [f"{indent}{head}", *(f"{indent}    {item}," for item in items), f"{indent}{tail}"]


def _marked(lines: list[str]) -> Iterator[str]:
    """The lines, each still longer than ruff allows (a name too long for one) marked."""
    for line in lines:
        yield line if len(line) <= _WIDTH else f"{line}  # noqa: E501"
