"""``python -m codec demo | record | view``, run as a user runs them: in a subprocess."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from codec import FrameEncoder
from codec.profiler import (
    Frame,
    PacketWriter,
    Registry,
    Session,
    TrackKind,
    TrackScopes,
    read_capture,
)

ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def codec_command(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codec", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
        check=False,
    )


def test_demo_runs_to_completion_and_reports_what_it_measured(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    done = codec_command("demo", "--seconds", "0.5", "--trace", str(trace))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    frames = int(re.search(r"frames sent\s+([\d,]+)", out)[1].replace(",", ""))  # type: ignore[index]
    received = int(re.search(r"frames received\s+([\d,]+)", out)[1].replace(",", ""))  # type: ignore[index]
    assert frames > 10 and 0 < received <= frames
    codec_bytes = float(re.search(r"codec, varint columns\s+([\d.]+) B", out)[1])  # type: ignore[index]
    chrome = float(re.search(r"Chrome trace JSON\s+([\d.]+) B", out)[1])  # type: ignore[index]
    puffin = float(re.search(r"puffin stream layout\s+([\d.]+) B", out)[1])  # type: ignore[index]
    assert codec_bytes < puffin < chrome
    assert re.search(r"encoding a frame of\s+100,000 scopes\s+peak [\d,]+ B", out)
    assert "Top 8 scopes by total time" in out and "Workload.integrate" in out
    assert "serving the stream on 127.0.0.1:" in done.stderr  # progress goes to stderr
    events = json.loads(trace.read_text())["traceEvents"]
    assert str(trace) in out
    assert sum(event["ph"] == "X" for event in events) > 100


def test_record_then_view_a_running_demo(tmp_path: Path) -> None:
    demo = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codec",
            "demo",
            "--seconds",
            "20",
            "--fps",
            "200",
            "--trace",
            str(tmp_path / "demo.json"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert demo.stderr is not None
        first = demo.stderr.readline()
        address = re.search(r"serving the stream on (\S+)", first)
        assert address, first
        capture = tmp_path / "capture.bin"
        recorded = codec_command(
            "record", address[1], str(capture), "--frames", "60", "--keyframe-every", "25"
        )
        assert recorded.returncode == 0, recorded.stderr
        assert re.match(r"recorded 60 frames, 3 keyframes, [\d,]+ bytes", recorded.stdout)
    finally:
        demo.kill()
        demo.communicate()
    frames = [item for _, item in read_capture(capture.read_bytes()) if isinstance(item, Frame)]
    assert len(frames) == 60

    chrome = tmp_path / "view.json"
    viewed = codec_command("view", str(capture), "--chrome", str(chrome), "--top", "5")
    assert viewed.returncode == 0, viewed.stderr
    assert re.search(r"60 frames, [\d,]+ scopes, 1 session", viewed.stdout)
    assert "Top 5 scopes by self time" in viewed.stdout
    assert json.loads(chrome.read_text())["traceEvents"]

    # A copy cut in its first keyframe is read from the next one.
    cut = tmp_path / "cut.bin"
    data = capture.read_bytes()
    cut.write_bytes(data[7 : len(data) - 5])
    viewed = codec_command("view", str(cut))
    assert viewed.returncode == 0, viewed.stderr
    shown = int(re.search(r"([\d,]+) frames", viewed.stdout)[1])  # type: ignore[index]
    assert 0 < shown < 60


def write_capture(path: Path, frames: int) -> None:
    """A capture of ``frames`` frames of three nested scopes on two threads."""
    registry = Registry()
    for name in ("frame", "update", "render"):
        registry.add_scope(name, file="game/loop.py", line=len(name))
    registry.add_track("main", TrackKind.CPU_THREAD, 101)
    registry.add_track("worker", TrackKind.CPU_THREAD, 102)
    writer = PacketWriter(Session.new("cli test"))
    out = FrameEncoder()
    writer.keyframe(out, registry)
    for index in range(1, frames + 1):
        start = 10**12 + index * 10**6
        tracks = tuple(
            TrackScopes.from_sequences(
                ref, [1, 2, 3], [start, start + 10, start + 500], [1000, 400, 300], [0, 1, 1]
            )
            for ref in (1, 2)
        )
        writer.frame(out, index, start, 1000, tracks, 6)
    path.write_bytes(out.getbuffer())


def test_view_exports_a_perfetto_trace_and_an_icicle_graph(tmp_path: Path) -> None:
    capture = tmp_path / "capture.bin"
    write_capture(capture, 50)
    trace, svg = tmp_path / "out.pftrace", tmp_path / "out.svg"
    done = codec_command(
        "view", str(capture), "--frames", "10", "--perfetto", str(trace),
        "--flame", str(svg), "--icicle",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # Perfetto gets every frame (each a slice too), the picture the 10 kept ones.
    assert f"Perfetto trace: {trace} (350 slices, " in done.stdout
    assert f"Icicle graph: {svg}" in done.stdout
    assert trace.read_bytes()[:1] == b"\x0a"  # Trace.packet, field 1, length-delimited
    root = ET.parse(svg).getroot()
    assert "Icicle graph: 60 scopes in 10 frames" in "".join(root.itertext())


def test_demo_exports_a_perfetto_trace_and_a_flame_graph(tmp_path: Path) -> None:
    trace, svg = tmp_path / "demo.pftrace", tmp_path / "demo.svg"
    done = codec_command(
        "demo", "--seconds", "0.3", "--quiet", "--trace", str(tmp_path / "demo.json"),
        "--perfetto", str(trace), "--flame", str(svg),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    reported = re.search(r"Perfetto trace: \S+ \(([\d,]+) slices", done.stdout)
    assert reported, done.stdout
    slices = int(reported[1].replace(",", ""))
    assert slices > 100 and trace.stat().st_size > 20 * slices
    assert f"Flame graph: {svg}" in done.stdout
    assert "Workload.integrate" in "".join(ET.parse(svg).getroot().itertext())


def test_icicle_without_flame_is_an_error(tmp_path: Path) -> None:
    capture = tmp_path / "capture.bin"
    write_capture(capture, 1)
    done = codec_command("view", str(capture), "--icicle")
    assert done.returncode == 1
    assert (
        done.stderr
        == "codec view: --icicle draws the --flame graph upside down: give --flame OUT.svg too\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["view", "{missing}"], "No such file or directory"),
        (["view", "{junk}"], "no keyframe found"),
        (["record", "127.0.0.1:{port}", "{out}", "--frames", "1"], "Connect call failed|refused"),
        (["record", "nonsense", "{out}"], "expected HOST:PORT"),
    ],
)
def test_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x05hello" * 10)
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    filled = [
        a.format(missing=tmp_path / "missing.bin", junk=junk, port=port, out=tmp_path / "o.bin")
        for a in args
    ]
    done = codec_command(*filled)
    assert done.returncode in (1, 2)
    assert re.search(message, done.stderr), done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", "-1"], "--workers: expected 0 or more, got -1"),
        (["--fps", "-5"], "--fps: expected 0 or a positive number, got -5"),
        (["--fps", "nan"], "--fps: expected 0 or a positive number, got nan"),
        (["--seconds", "inf"], "--seconds: expected a positive number, got inf"),
        (["--trace", "{missing}/t.json"], "--trace: cannot write .*: no directory"),
        (["--perfetto", "{missing}/t.pftrace"], "--perfetto: cannot write .*: no directory"),
        (["--flame", "{tmp}"], "--flame: cannot write .*: it is a directory"),
    ],
)
def test_demo_options_are_checked_before_it_runs(
    tmp_path: Path, args: list[str], message: str
) -> None:
    filled = [a.format(missing=tmp_path / "missing", tmp=tmp_path) for a in args]
    done = codec_command("demo", "--seconds", "5", *filled, timeout=30)
    assert done.returncode == 2
    assert re.search(message, done.stderr), done.stderr
    assert "serving the stream" not in done.stderr  # refused before anything ran


def test_demo_names_its_threads(tmp_path: Path) -> None:
    svg = tmp_path / "demo.svg"
    done = codec_command(
        "demo", "--seconds", "0.3", "--quiet", "--workers", "1",
        "--trace", str(tmp_path / "demo.json"), "--flame", str(svg),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = "".join(ET.parse(svg).getroot().itertext())
    assert "main" in text and "job worker 1" in text
    assert "asyncio" not in text  # the frame loop used to run on an executor's thread
