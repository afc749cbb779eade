"""A toy benchmark that lives in the test folder alone: it proves a benchmark joins through the registry, with no
edit to the shared rooms (tests/test_toy_benchmark.py)."""
