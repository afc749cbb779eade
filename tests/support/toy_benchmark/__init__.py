"""A toy benchmark that lives in the test folder alone: it proves a benchmark joins through the registry, with no
edit to the shared rooms (tests/test_toy_benchmark.py), and that the doors' attack kits reach a new benchmark
(tests/test_output_door.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def registered() -> Iterator[None]:
    """The toy benchmark in the registry while the block runs; the registry as it was afterwards."""
    from schemas import registry

    registry.register("toy", "tests.support.toy_benchmark.plugin:PLUGIN")
    try:
        yield
    finally:
        registry.forget("toy")
