"""Run protobuf's conformance suite against codec's structs and against upb, and compare.

Usage (from anywhere, with the interpreter that has codec installed)::

    python conformance/run.py             # both engines; exit status 0 when all is well
    python conformance/run.py --logs DIR  # and keep each runner's full output in DIR

Steps: ``build_runner.sh`` builds the runner (or finds it in its cache); the
Python modules of the runner's own ``.proto`` files are generated with
``grpc_tools.protoc`` into a temporary directory; the runner is run with
``--verbose`` once per engine, with ``testee.py`` as the program, and every
test's outcome is read from its output:

- each test it runs is named by a ``conformance test: name=...`` line;
- a failure is an ``ERROR, test=...`` line (a required test) or a
  ``WARNING, test=...`` line (a recommended one): both count as failures here;
- a skip is a ``SKIPPED, test=...`` line;
- every other test passed (checked against the runner's own count of successes).

The run fails when an engine fails a test its ``failure_list_<engine>.txt``
does not name, when a listed test does not fail (fixed, or gone), and when
codec fails or skips a test that upb passes and codec's list does not name.

Tests are counted by the formats they exercise, from their names: *text* when
text format is the input or the output, else *json* when JSON is the input or
the output, else *binary* (protobuf in, protobuf out, or a parse failure).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENGINES = ("upb", "codec")
CATEGORIES = ("binary", "json", "text")

NAME = re.compile(r"^conformance test: name=(\S+?), request=", re.MULTILINE)
FAILURE = re.compile(r"^(?:ERROR|WARNING), test=(\S+?): ", re.MULTILINE)
SKIP = re.compile(r"^SKIPPED, test=(\S+?) request=", re.MULTILINE)
SUMMARY = re.compile(
    r"^CONFORMANCE SUITE (?:PASSED|FAILED): (\d+) successes, (\d+) skipped, "
    r"(\d+) expected failures, (\d+) unexpected failures\.",
    re.MULTILINE,
)
# Not a test: the runner's question for the failures a testee expects.
NOT_TESTS = {"FindFailures"}


@dataclass
class Outcome:
    passed: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    skipped: set[str] = field(default_factory=set)
    seconds: float = 0.0


def category(test: str) -> str:
    parts = test.split(".")
    if "TextFormatInput" in parts or "TextFormatOutput" in parts:
        return "text"
    if "JsonInput" in parts or "JsonOutput" in parts:
        return "json"
    return "binary"


def read_failure_list(path: Path) -> set[str]:
    """Test names, one a line; ``#`` starts a comment (protobuf's format)."""
    names = set()
    for line in path.read_text().splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            names.add(name)
    return names


def parse_output(output: str) -> Outcome:
    names = set(NAME.findall(output)) - NOT_TESTS
    failed = set(FAILURE.findall(output))
    skipped = set(SKIP.findall(output))
    outcome = Outcome(passed=names - failed - skipped, failed=failed, skipped=skipped)
    summaries = SUMMARY.findall(output)
    if not summaries:
        raise RuntimeError("the runner printed no summary: it did not finish")
    successes = sum(int(s[0]) for s in summaries)
    if successes != len(outcome.passed) or not failed <= names or not skipped <= names:
        raise RuntimeError(
            f"cannot account for the runner's output: it counts {successes} successes, "
            f"the test lines give {len(outcome.passed)}"
        )
    return outcome


def build_runner() -> Path:
    """The cache entry of the runner (built on first use): its last line of output."""
    started = time.monotonic()
    result = subprocess.run(
        ["bash", str(HERE / "build_runner.sh")], check=True, stdout=subprocess.PIPE, text=True
    )
    entry = Path(result.stdout.strip().splitlines()[-1])
    print(f"runner: {entry} ({time.monotonic() - started:.1f} s to build or find)", flush=True)
    return entry


def generate_pb2(entry: Path, out: Path) -> None:
    """Python modules of the runner's .proto files, made by grpcio-tools' protoc."""
    import grpc_tools  # type: ignore[import-untyped]

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    protos = entry / "proto"
    files = [
        "conformance/conformance.proto",
        "google/protobuf/test_messages_proto2.proto",
        "google/protobuf/test_messages_proto3.proto",
    ]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{protos}",
            f"-I{well_known}",
            f"--python_out={out}",
            *(str(protos / f) for f in files),
        ],
        check=True,
    )


def run_engine(
    runner: Path, engine: str, pb2_dir: Path, work: Path, timeout: float, logs: Path | None
) -> Outcome:
    # The runner execs its program with no shell and passes it its own path
    # as an argument: a launcher fixes the interpreter and the arguments.
    launcher = work / f"testee-{engine}"
    command = [
        sys.executable,
        str(HERE / "testee.py"),
        "--engine",
        engine,
        "--pb2-dir",
        str(pb2_dir),
    ]
    launcher.write_text(f"#!/bin/sh\nexec {shlex.join(command)}\n")
    launcher.chmod(0o755)
    started = time.monotonic()
    result = subprocess.run(
        [str(runner), "--verbose", str(launcher)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout,
    )
    output = result.stdout.decode("utf-8", "replace")
    if logs is not None:
        logs.mkdir(parents=True, exist_ok=True)
        (logs / f"runner-{engine}.log").write_text(output)
    try:
        outcome = parse_output(output)
    except RuntimeError:
        tail = "\n".join(output.splitlines()[-40:])
        print(
            f"the runner's last lines (exit status {result.returncode}):\n{tail}", file=sys.stderr
        )
        raise
    outcome.seconds = time.monotonic() - started
    return outcome


def counts(outcome: Outcome, cat: str) -> tuple[int, int, int]:
    return (
        sum(category(t) == cat for t in outcome.passed),
        sum(category(t) == cat for t in outcome.failed),
        sum(category(t) == cat for t in outcome.skipped),
    )


def report(outcomes: dict[str, Outcome]) -> None:
    print()
    print(f"{'engine':<8}{'tests':<8}{'passed':>8}{'failed':>8}{'skipped':>9}")
    for engine, outcome in outcomes.items():
        for cat in CATEGORIES:
            passed, failed, skipped = counts(outcome, cat)
            if passed + failed + skipped == 0:  # the runner did not get to them
                print(f"{engine:<8}{cat:<8}{'not run':>8}")
            else:
                print(f"{engine:<8}{cat:<8}{passed:>8}{failed:>8}{skipped:>9}")
        print(f"{engine:<8}{'time':<8}{outcome.seconds:>7.1f}s")
    print()


def check(outcomes: dict[str, Outcome]) -> list[str]:
    """What is wrong, one problem a line (with the tests concerned); empty when all is well."""
    problems = []

    def listed(title: str, tests: set[str]) -> None:
        if tests:
            problems.append(
                f"{title} ({len(tests)}):\n" + "".join(f"  {t}\n" for t in sorted(tests))
            )

    for engine, outcome in outcomes.items():
        name = f"failure_list_{engine}.txt"
        expected = read_failure_list(HERE / name)
        listed(f"{engine}: failed, not in {name}", outcome.failed - expected)
        listed(f"{engine}: in {name}, but passed (remove them)", expected & outcome.passed)
        listed(f"{engine}: in {name}, but skipped", expected & outcome.skipped)
        ran = outcome.passed | outcome.failed | outcome.skipped
        listed(f"{engine}: in {name}, but not run by this runner", expected - ran)
    if "upb" in outcomes and "codec" in outcomes:
        allowed = read_failure_list(HERE / "failure_list_codec.txt")
        behind = outcomes["upb"].passed - outcomes["codec"].passed - allowed
        listed("codec: passed by upb, not by codec", behind)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--engine", choices=ENGINES, action="append", help="default: both")
    parser.add_argument("--logs", type=Path, help="keep each runner's output in this directory")
    parser.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds per engine (default 1800)"
    )
    args = parser.parse_args(argv)
    engines = [e for e in ENGINES if e in (args.engine or ENGINES)]

    entry = build_runner()
    runner = entry / "bin" / "conformance_test_runner"
    outcomes: dict[str, Outcome] = {}
    with tempfile.TemporaryDirectory(prefix="codec-conformance-") as tmp:
        work = Path(tmp)
        pb2_dir = work / "pb2"
        pb2_dir.mkdir()
        generate_pb2(entry, pb2_dir)
        for engine in engines:
            print(f"running the suite against the {engine} testee", flush=True)
            outcomes[engine] = run_engine(runner, engine, pb2_dir, work, args.timeout, args.logs)
    report(outcomes)
    problems = check(outcomes)
    for problem in problems:
        print(problem, file=sys.stderr)
    print("conformance: " + ("FAILED" if problems else "OK"), flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
