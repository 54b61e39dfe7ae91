"""Shared test settings: hypothesis profiles and the build under test.

``HYPOTHESIS_PROFILE`` picks the example budget: ``ci`` (default, small and
derandomized, for a 2-core CI machine), ``dev`` or ``nightly`` (large, random).
"""

import os

from hypothesis import HealthCheck, settings

import codec

# ci: the same examples on every run and machine (derandomized, no example
# database replaying an earlier run's failures), so a fresh clone's pytest is
# reproducible; dev and nightly explore new examples on every run.
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=500, deadline=None)
settings.register_profile("nightly", max_examples=20_000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_report_header() -> str:
    build = "compiled" if codec.COMPILED else "pure Python"
    return f"codec build: {build}"
