"""``python -m codec generate --grpc``: stubs and servicers that send and receive structs.

The service is ``schemas/grpc/grpc_echo/echo.proto``'s ``Echo``, one method
of each cardinality and one no servicer implements. Its modules are
generated once into a temporary directory put on ``sys.path``. The other
side of each call is pb2's: its classes are built from the same descriptor
set in a pool of their own, and its stub and servicer are made with grpc's
generic API (``channel.unary_unary(...)``, ``method_handlers_generic_handler``)
and the pb2 classes' ``SerializeToString`` and ``FromString``, which is what
a ``_pb2_grpc`` module does; that needs no ``_pb2.py`` written by protoc,
whose generated code checks the protobuf runtime's version. Each test runs
a server on a loopback port the system picks, struct stub against pb2
servicer and pb2 stub against struct servicer, with ``grpc`` and with
``grpc.aio``; every call and every stop has a timeout.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent import futures
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

grpc = pytest.importorskip("grpc")
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402
from grpc import aio  # noqa: E402
from helpers.generated import generated_on_path  # noqa: E402
from schemas import SCHEMA_DIR  # noqa: E402

from codec.structs._descriptor_set import compile_protos  # noqa: E402

SERVICE = "grpc_echo.Echo"
TIMEOUT = 10  # seconds, for each call and each stop
RUFF = [sys.executable, "-m", "ruff"]
KINDS = {
    "Say": "unary_unary",
    "Repeat": "unary_stream",
    "Gather": "stream_unary",
    "Chat": "stream_stream",
    "Missing": "unary_unary",
}


@pytest.fixture(scope="module")
def echo_set() -> bytes:
    return compile_protos(["grpc_echo/echo.proto"], [str(SCHEMA_DIR / "grpc")])


@pytest.fixture(scope="module")
def out(echo_set: bytes, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with generated_on_path(tmp_path_factory.mktemp("grpc"), echo_set, "grpc_echo", "--grpc") as out:
        yield out


@pytest.fixture(scope="module")
def structs(out: Path) -> ModuleType:
    return importlib.import_module("grpc_echo.echo_structs")


@pytest.fixture(scope="module")
def stubs(out: Path) -> ModuleType:
    return importlib.import_module("grpc_echo.echo_structs_grpc")


class Pb2:
    """pb2's side: the classes of the set in a pool of their own."""

    def __init__(self, data: bytes) -> None:
        pool = descriptor_pool.DescriptorPool()
        for file in descriptor_pb2.FileDescriptorSet.FromString(data).file:
            pool.Add(file)
        self.Ping = message_factory.GetMessageClass(pool.FindMessageTypeByName("grpc_echo.Ping"))
        self.Pong = message_factory.GetMessageClass(pool.FindMessageTypeByName("grpc_echo.Pong"))
        empty = pool.FindMessageTypeByName("google.protobuf.Empty")
        self.Empty = message_factory.GetMessageClass(empty)

    def types(self, method: str) -> tuple[Any, Any]:
        return (self.Empty, self.Empty) if method == "Missing" else (self.Ping, self.Pong)

    def stub(self, channel: Any) -> dict[str, Any]:
        """A multi-callable per method, as a _pb2_grpc stub makes them."""
        calls = {}
        for method, kind in KINDS.items():
            request, response = self.types(method)
            calls[method] = getattr(channel, kind)(
                f"/{SERVICE}/{method}",
                request_serializer=request.SerializeToString,
                response_deserializer=response.FromString,
            )
        return calls

    def handler(self, behaviours: dict[str, Callable[..., Any]]) -> Any:
        """The generic handler a _pb2_grpc module's add_..._to_server adds."""
        handlers = {}
        for method, behaviour in behaviours.items():
            request, response = self.types(method)
            handlers[method] = getattr(grpc, f"{KINDS[method]}_rpc_method_handler")(
                behaviour,
                request_deserializer=request.FromString,
                response_serializer=response.SerializeToString,
            )
        return grpc.method_handlers_generic_handler(SERVICE, handlers)


@pytest.fixture(scope="module")
def pb2(echo_set: bytes) -> Pb2:
    return Pb2(echo_set)


# The service, written once for any message classes: Say echoes, Repeat answers `times`
# times, Gather joins the texts of the requests, Chat answers each request as it comes.


def say(pong: Any, ping: Any) -> Any:
    return pong(text=ping.text.upper(), index=ping.times)


def repeat(pong: Any, ping: Any) -> Iterator[Any]:
    for index in range(ping.times):
        yield pong(text=ping.text, index=index)


def gather(pong: Any, pings: list[Any]) -> Any:
    return pong(text="+".join(ping.text for ping in pings), seen=[ping.text for ping in pings])


def chat(pong: Any, ping: Any, index: int) -> Any:
    return pong(text=ping.text[::-1], index=index)


def sync_behaviours(pong: Any) -> dict[str, Callable[..., Any]]:
    return {
        "Say": lambda request, context: say(pong, request),
        "Repeat": lambda request, context: repeat(pong, request),
        "Gather": lambda requests, context: gather(pong, list(requests)),
        "Chat": lambda requests, context: (
            chat(pong, ping, index) for index, ping in enumerate(requests)
        ),
    }


def async_behaviours(pong: Any) -> dict[str, Callable[..., Any]]:
    async def say_(request: Any, context: Any) -> Any:
        return say(pong, request)

    async def repeat_(request: Any, context: Any) -> AsyncIterator[Any]:
        for each in repeat(pong, request):
            yield each

    async def gather_(requests: AsyncIterator[Any], context: Any) -> Any:
        return gather(pong, [ping async for ping in requests])

    async def chat_(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        index = 0
        async for ping in requests:
            yield chat(pong, ping, index)
            index += 1

    return {"Say": say_, "Repeat": repeat_, "Gather": gather_, "Chat": chat_}


def struct_servicer(stubs: ModuleType, structs: ModuleType, asynchronous: bool) -> Any:
    """A subclass of the generated servicer that overrides all methods but Missing."""
    base = stubs.EchoAsyncServicer if asynchronous else stubs.EchoServicer
    behaviours = (async_behaviours if asynchronous else sync_behaviours)(structs.Pong)
    # methods take self: each behaviour is wrapped so as not to bind it
    return type("Servicer", (base,), {name: staticmethod(f) for name, f in behaviours.items()})()


def pings(ping: Any, *texts: str) -> list[Any]:
    return [ping(text=text) for text in texts]


def expected(pong: Any) -> dict[str, Any]:
    """What each call of ``check`` gets back, in ``pong`` messages."""
    return {
        "Say": pong(text="HI", index=3),
        "Repeat": [pong(text="hi", index=index) for index in range(3)],
        "Gather": pong(text="a+b+c", seen=["a", "b", "c"]),
        "Chat": [pong(text="ab", index=0), pong(text="dc", index=1)],
    }


def check_sync(calls: Any, ping: Any, pong: Any, empty: Any) -> None:
    """Call each method through ``calls`` (a stub, or pb2's multi-callables by name)."""
    call = calls.__getitem__ if isinstance(calls, dict) else lambda name: getattr(calls, name)
    want = expected(pong)
    got = call("Say")(ping(text="hi", times=3), timeout=TIMEOUT)
    assert type(got) is pong and got == want["Say"]
    assert list(call("Repeat")(ping(text="hi", times=3), timeout=TIMEOUT)) == want["Repeat"]
    assert call("Gather")(iter(pings(ping, "a", "b", "c")), timeout=TIMEOUT) == want["Gather"]
    assert list(call("Chat")(iter(pings(ping, "ba", "cd")), timeout=TIMEOUT)) == want["Chat"]
    with pytest.raises(grpc.RpcError) as raised:
        call("Missing")(empty(), timeout=TIMEOUT)
    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def check_async(calls: Any, ping: Any, pong: Any, empty: Any) -> None:
    call = calls.__getitem__ if isinstance(calls, dict) else lambda name: getattr(calls, name)
    want = expected(pong)

    async def requests(*texts: str) -> AsyncIterator[Any]:
        for each in pings(ping, *texts):
            yield each

    got = await call("Say")(ping(text="hi", times=3), timeout=TIMEOUT)
    assert type(got) is pong and got == want["Say"]
    repeated = [each async for each in call("Repeat")(ping(text="hi", times=3), timeout=TIMEOUT)]
    assert repeated == want["Repeat"]
    assert await call("Gather")(requests("a", "b", "c"), timeout=TIMEOUT) == want["Gather"]
    chatted = [each async for each in call("Chat")(requests("ba", "cd"), timeout=TIMEOUT)]
    assert chatted == want["Chat"]
    with pytest.raises(aio.AioRpcError) as raised:
        await call("Missing")(empty(), timeout=TIMEOUT)
    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED


def serve_sync(add: Callable[[Any], None], client: Callable[[Any], None]) -> None:
    """A grpc server on a loopback port, ``add`` given it, ``client`` given a channel to it."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    add(server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            client(channel)
    finally:
        server.stop(grace=None).wait(TIMEOUT)


def serve_async(add: Callable[[Any], None], client: Callable[[Any], Any]) -> None:
    async def run() -> None:
        server = aio.server()
        add(server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                await asyncio.wait_for(client(channel), TIMEOUT * 4)
        finally:
            await asyncio.wait_for(server.stop(grace=None), TIMEOUT)

    asyncio.run(run())


# --- sync ------------------------------------------------------------------------------


def test_struct_stub_calls_a_pb2_servicer(pb2: Pb2, structs: ModuleType, stubs: ModuleType) -> None:
    def add(server: Any) -> None:
        server.add_generic_rpc_handlers((pb2.handler(sync_behaviours(pb2.Pong)),))

    def client(channel: Any) -> None:
        check_sync(stubs.EchoStub(channel), structs.Ping, structs.Pong, _empty())

    serve_sync(add, client)


def test_pb2_stub_calls_a_struct_servicer(pb2: Pb2, structs: ModuleType, stubs: ModuleType) -> None:
    def add(server: Any) -> None:
        stubs.add_EchoServicer_to_server(struct_servicer(stubs, structs, False), server)

    def client(channel: Any) -> None:
        check_sync(pb2.stub(channel), pb2.Ping, pb2.Pong, pb2.Empty)

    serve_sync(add, client)


def test_a_pb2_stub_given_a_struct_fails_which_is_why_the_module_is(
    pb2: Pb2, structs: ModuleType, stubs: ModuleType
) -> None:
    def add(server: Any) -> None:
        server.add_generic_rpc_handlers((pb2.handler(sync_behaviours(pb2.Pong)),))

    def client(channel: Any) -> None:
        with pytest.raises(Exception, match="serializ"):
            pb2.stub(channel)["Say"](structs.Ping(text="x"), timeout=TIMEOUT)

    serve_sync(add, client)


# --- grpc.aio --------------------------------------------------------------------------


def test_async_struct_stub_calls_a_pb2_servicer(
    pb2: Pb2, structs: ModuleType, stubs: ModuleType
) -> None:
    def add(server: Any) -> None:
        server.add_generic_rpc_handlers((pb2.handler(async_behaviours(pb2.Pong)),))

    async def client(channel: Any) -> None:
        for stub in (stubs.EchoAsyncStub(channel), stubs.EchoStub(channel)):  # either takes it
            await check_async(stub, structs.Ping, structs.Pong, _empty())

    serve_async(add, client)


def test_async_pb2_stub_calls_a_struct_servicer(
    pb2: Pb2, structs: ModuleType, stubs: ModuleType
) -> None:
    def add(server: Any) -> None:
        stubs.add_EchoServicer_to_server(struct_servicer(stubs, structs, True), server)

    async def client(channel: Any) -> None:
        await check_async(pb2.stub(channel), pb2.Ping, pb2.Pong, pb2.Empty)

    serve_async(add, client)


def test_every_method_of_a_bare_async_servicer_is_unimplemented(
    pb2: Pb2, stubs: ModuleType
) -> None:
    def add(server: Any) -> None:
        stubs.add_EchoServicer_to_server(stubs.EchoAsyncServicer(), server)

    async def client(channel: Any) -> None:
        calls = pb2.stub(channel)

        async def one() -> AsyncIterator[Any]:
            yield pb2.Ping()

        for name, call in (
            ("Say", calls["Say"](pb2.Ping(), timeout=TIMEOUT)),
            ("Gather", calls["Gather"](one(), timeout=TIMEOUT)),
        ):
            with pytest.raises(aio.AioRpcError) as raised:
                await call
            assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED, name
        for name in ("Repeat", "Chat"):
            request = pb2.Ping() if name == "Repeat" else one()
            with pytest.raises(aio.AioRpcError) as raised:
                [each async for each in calls[name](request, timeout=TIMEOUT)]
            assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED, name

    serve_async(add, client)


def _empty() -> Any:
    return importlib.import_module("codec.wellknown.empty_structs").Empty


# --- the module's text -----------------------------------------------------------------


def test_the_grpc_module_is_ruff_clean(out: Path) -> None:
    for command in (
        [*RUFF, "check", "--isolated", "--no-cache", "--select", "E,F,W,I,B,UP,SIM,RUF", "."],
        [*RUFF, "check", "--isolated", "--no-cache", "--extend-select", "I,RUF", "."],
        [*RUFF, "format", "--isolated", "--check", "."],
    ):
        done = subprocess.run(command, cwd=out, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr


# --- mypy ------------------------------------------------------------------------------

PROGRAM = """\
from collections.abc import AsyncIterator, Iterator
from concurrent import futures

import grpc
from grpc import aio
from grpc_echo.echo_structs import Ping, Pong
from grpc_echo.echo_structs_grpc import (
    EchoAsyncServicer,
    EchoAsyncStub,
    EchoServicer,
    EchoStub,
    add_EchoServicer_to_server,
)


class Sync(EchoServicer):
    def Say(self, request: Ping, context: grpc.ServicerContext) -> Pong:
        return Pong(text=request.text)

    def Chat(
        self, request_iterator: Iterator[Ping], context: grpc.ServicerContext
    ) -> Iterator[Pong]:
        for ping in request_iterator:
            yield Pong(text=ping.text)


class Async(EchoAsyncServicer):
    async def Say(self, request: Ping, context: aio.ServicerContext[Ping, Pong]) -> Pong:
        return Pong(text=request.text)

    async def Repeat(
        self, request: Ping, context: aio.ServicerContext[Ping, Pong]
    ) -> AsyncIterator[Pong]:
        yield Pong(text=request.text)


def call(channel: grpc.Channel) -> str:
    return EchoStub(channel).Say(Ping(text="x"), timeout=1).text


async def call_async(channel: aio.Channel) -> int:
    return (await EchoAsyncStub(channel).Say(Ping(text="x"), timeout=1)).index


add_EchoServicer_to_server(Sync(), grpc.server(futures.ThreadPoolExecutor()))
add_EchoServicer_to_server(Async(), aio.server())
"""

BAD = """\
import grpc
from grpc_echo.echo_structs import Ping, Pong
from grpc_echo.echo_structs_grpc import EchoServicer, EchoStub


class Sync(EchoServicer):
    def Say(self, request: Ping, context: grpc.ServicerContext) -> str:
        return ""


def call(channel: grpc.Channel) -> None:
    EchoStub(channel).Say(Pong())
"""


@pytest.mark.mypy
def test_mypy_strict_takes_the_module_and_its_use_and_reports_misuse(
    out: Path, tmp_path: Path
) -> None:
    pytest.importorskip("grpc-stubs", reason="the types of grpc are types-grpcio's")
    root = Path(__file__).resolve().parent.parent
    (tmp_path / "mypy.ini").write_text(
        "[mypy]\nstrict = True\nexplicit_package_bases = True\n"
        f"cache_dir = {tmp_path / '.mypy_cache'}\nmypy_path = {root}{os.pathsep}{out}\n\n"
        "[mypy-codec,codec.*]\nfollow_imports = silent\n"
    )
    (tmp_path / "good.py").write_text(PROGRAM)
    (tmp_path / "bad.py").write_text(BAD)
    command = [sys.executable, "-m", "mypy", "--config-file", "mypy.ini"]
    done = subprocess.run(
        [*command, "good.py", str(out / "grpc_echo")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run(
        [*command, "bad.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    errors = [line.split(":")[1] for line in done.stdout.splitlines() if ": error: " in line]
    assert errors == ["7", "12"], done.stdout
