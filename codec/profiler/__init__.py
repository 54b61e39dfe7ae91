"""codec.profiler: timing scopes recorded per thread and streamed frame by frame.

Scope details are registered once under dense ids; each recorded scope then
costs its id, start, duration and depth, written into preallocated columns
and encoded straight from them as packed protobuf columns
(``profiler.proto`` in this package is the format). The modules, in layer
order, one role each:

* ``model``: the registry and frames, as both ends of a stream see them;
* ``_recorder`` (compiled): the per-thread columns a scope is written into;
* ``packets``: the packet layout, its field numbers by name, written and read;
* ``receiver``: the rules of a stream of packets (keyframes, sessions),
  sans-IO;
* ``recording``: the :class:`Profiler`, which encodes a frame per
  ``end_frame()`` and hands it to its sinks;
* ``server``: the profile server, the stream fanned out over TCP to viewers
  (the programs that connect to receive it);
* ``client``: a viewer's connection to a server;
* ``capture``: capture files, written by a sink or from a server, read from
  any keyframe;
* ``analysis``: recent frames, scope trees, Chrome traces and summaries;
* ``perfetto``: native Perfetto traces, streamed; ``flame``: SVG flame
  graphs;
* ``demo``: a profiled workload streamed to a viewer in the same process.
"""

from codec.errors import StreamError
from codec.profiler._recorder import COMPILED, Scope
from codec.profiler.analysis import (
    FrameStore,
    chrome_trace,
    format_summary,
    summary,
    write_chrome_trace,
)
from codec.profiler.capture import FileSink, RecordStats, find_keyframe, read_capture, record
from codec.profiler.client import ViewerClient, connect_viewer
from codec.profiler.flame import (
    FlameNode,
    FlameTrack,
    flame_graph_svg,
    flame_tracks,
    write_flame_graph,
)
from codec.profiler.model import (
    Frame,
    Registry,
    ScopeDef,
    ScopeKind,
    TrackColumns,
    TrackDef,
    TrackKind,
    TrackScopes,
)
from codec.profiler.packets import PacketWriter, Session
from codec.profiler.perfetto import (
    PerfettoStats,
    PerfettoWriter,
    write_perfetto_capture,
    write_perfetto_trace,
)
from codec.profiler.receiver import Receiver
from codec.profiler.recording import Profiler, Sink
from codec.profiler.server import ProfileServer, ViewerStats

# What each name is for. The rest of each module is there for tools built on
# the stream (codec.profiler.packets, .receiver, .model, ...).
__all__ = [  # noqa: RUF022  (grouped by purpose, not sorted)
    # Recording: scopes into per-thread columns, a frame per end_frame(), to sinks.
    "Profiler",
    "Scope",
    "Sink",
    "COMPILED",
    # Streaming to viewers over TCP, and a viewer's end.
    "ProfileServer",
    "ViewerStats",
    "ViewerClient",
    "connect_viewer",
    # Capture files: written by a sink or from a server, read from any keyframe.
    "FileSink",
    "RecordStats",
    "record",
    "read_capture",
    "find_keyframe",
    # What frames are, on both ends: the registry of scopes and tracks, and the columns.
    "Frame",
    "Registry",
    "ScopeDef",
    "ScopeKind",
    "TrackDef",
    "TrackKind",
    "TrackColumns",
    "TrackScopes",
    "Session",
    # A stream's two ends below the Profiler and the viewer: packets out, packets in.
    "PacketWriter",
    "Receiver",
    "StreamError",
    # Looking at frames: recent frames, summaries, Chrome and Perfetto traces, flame graphs.
    "FrameStore",
    "summary",
    "format_summary",
    "chrome_trace",
    "write_chrome_trace",
    "PerfettoWriter",
    "PerfettoStats",
    "write_perfetto_trace",
    "write_perfetto_capture",
    "FlameNode",
    "FlameTrack",
    "flame_tracks",
    "flame_graph_svg",
    "write_flame_graph",
]
