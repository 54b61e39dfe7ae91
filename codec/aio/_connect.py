"""The connection helpers: :func:`open_connection`, :func:`start_server`, and their Unix twins.

Strategy: each helper has the loop make one :class:`~codec.aio.FramedProtocol`
per connection (``create_connection``, ``create_server`` and the ``unix``
ones). Its keyword arguments that are the protocol's parameters go to the
protocol, the rest to the loop. A client gets the protocol's
``(reader, writer)``; a server's handler is each protocol's
``client_connected_cb``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, overload

from codec.aio._protocol import FramedProtocol
from codec.aio._reader import FramedReader, M
from codec.aio._writer import FramedWriter

if TYPE_CHECKING:
    from codec._generic import Decoder


# A server's handler: run for each connection, as with asyncio.start_server.
Handler = Callable[[FramedReader[M], FramedWriter], Awaitable[None] | None]


# The keyword arguments of the helpers that go to FramedProtocol: its
# parameters but the two that the helpers name; the rest go to
# loop.create_connection / create_server.
_PROTOCOL_OPTIONS = frozenset(inspect.signature(FramedProtocol).parameters) - {
    "message_type",
    "client_connected_cb",
}


def _protocol_factory(
    message_type: Any, kwds: dict[str, Any], handler: Handler[Any] | None = None
) -> tuple[Callable[[], FramedProtocol], dict[str, Any]]:
    """A helper's protocol factory, with FramedProtocol's options of ``kwds``, and the rest."""
    options = {name: kwds.pop(name) for name in list(kwds) if name in _PROTOCOL_OPTIONS}
    factory = functools.partial(
        FramedProtocol, message_type=message_type, client_connected_cb=handler, **options
    )
    return factory, kwds


@overload
async def open_connection(
    host: str | None = None,
    port: int | str | None = None,
    *,
    message_type: type[M] | Decoder[M],
    **kwds: Any,
) -> tuple[FramedReader[M], FramedWriter]: ...
@overload
async def open_connection(
    host: str | None = None,
    port: int | str | None = None,
    *,
    message_type: None = None,
    **kwds: Any,
) -> tuple[FramedReader[Any], FramedWriter]: ...
async def open_connection(
    host: str | None = None,
    port: int | str | None = None,
    *,
    message_type: Any = None,
    **kwds: Any,
) -> tuple[FramedReader[Any], FramedWriter]:
    """Connect over TCP; return ``(reader, writer)``.

    Keyword arguments are :class:`FramedProtocol`'s options; the rest
    (``ssl``, ``local_addr``, ...) go to ``loop.create_connection``.
    """
    factory, loop_kwds = _protocol_factory(message_type, kwds)
    loop = asyncio.get_running_loop()
    # host and port may be None with sock=...; typeshed's overloads say otherwise.
    _, protocol = await loop.create_connection(
        factory,
        host,  # type: ignore[arg-type]
        port,  # type: ignore[arg-type]
        **loop_kwds,
    )
    return protocol.reader, protocol.writer


@overload
async def open_unix_connection(
    path: str | None = None, *, message_type: type[M] | Decoder[M], **kwds: Any
) -> tuple[FramedReader[M], FramedWriter]: ...
@overload
async def open_unix_connection(
    path: str | None = None, *, message_type: None = None, **kwds: Any
) -> tuple[FramedReader[Any], FramedWriter]: ...
async def open_unix_connection(
    path: str | None = None, *, message_type: Any = None, **kwds: Any
) -> tuple[FramedReader[Any], FramedWriter]:
    """Connect to a Unix socket; like :func:`open_connection`."""
    factory, loop_kwds = _protocol_factory(message_type, kwds)
    loop = asyncio.get_running_loop()
    _, protocol = await loop.create_unix_connection(factory, path, **loop_kwds)
    return protocol.reader, protocol.writer


@overload
async def start_server(
    handler: Handler[M],
    host: str | None = None,
    port: int | str | None = None,
    *,
    message_type: type[M] | Decoder[M],
    **kwds: Any,
) -> asyncio.Server: ...
@overload
async def start_server(
    handler: Handler[Any],
    host: str | None = None,
    port: int | str | None = None,
    *,
    message_type: None = None,
    **kwds: Any,
) -> asyncio.Server: ...
async def start_server(
    handler: Handler[Any],
    host: str | None = None,
    port: int | str | None = None,
    *,
    message_type: Any = None,
    **kwds: Any,
) -> asyncio.Server:
    """Serve TCP: ``handler(reader, writer)`` runs for each connection, as with asyncio.

    When a coroutine handler returns, its connection is closed after the
    frames it sent (see :class:`FramedProtocol`). Keyword arguments are
    :class:`FramedProtocol`'s options; the rest (``ssl``, ``backlog``,
    ``reuse_port``, ...) go to ``loop.create_server``.
    """
    factory, loop_kwds = _protocol_factory(message_type, kwds, handler)
    loop = asyncio.get_running_loop()
    return await loop.create_server(
        factory,
        host,
        port,  # type: ignore[arg-type]  # a service name is accepted too
        **loop_kwds,
    )


@overload
async def start_unix_server(
    handler: Handler[M], path: str | None = None, *, message_type: type[M] | Decoder[M], **kwds: Any
) -> asyncio.Server: ...
@overload
async def start_unix_server(
    handler: Handler[Any],
    path: str | None = None,
    *,
    message_type: None = None,
    **kwds: Any,
) -> asyncio.Server: ...
async def start_unix_server(
    handler: Handler[Any], path: str | None = None, *, message_type: Any = None, **kwds: Any
) -> asyncio.Server:
    """Serve a Unix socket; like :func:`start_server`."""
    factory, loop_kwds = _protocol_factory(message_type, kwds, handler)
    loop = asyncio.get_running_loop()
    return await loop.create_unix_server(factory, path, **loop_kwds)
