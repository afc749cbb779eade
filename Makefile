# The two commands: `make demo` runs the main job on the embedded default, `make test` runs the test suite.
# Both set up (or reuse) ./.venv first.
.PHONY: setup demo test lint bench lock

setup:
	@bash scripts/setup.sh

demo: setup
	.venv/bin/benchwright run --unattended-review accept

test: setup
	.venv/bin/python -m pytest -q

lock:  # re-resolve pyproject.toml's dependencies (and scripts/no-deps.txt) into requirements.lock (then make test)
	@bash scripts/lock.sh

lint: setup
	.venv/bin/ruff check .

bench: setup
	.venv/bin/python bench/command_overhead.py
	.venv/bin/python bench/catalog_write.py
	.venv/bin/python bench/progress_build.py
	.venv/bin/python bench/explore_quality.py
	.venv/bin/python bench/annotation_latency.py
	.venv/bin/python bench/login_attack.py
	.venv/bin/python bench/eval_throughput.py
	.venv/bin/python bench/vic_build.py
	.venv/bin/python bench/webplan_build.py
	.venv/bin/python bench/scale_build.py
