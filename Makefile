# The two commands: `make demo` runs the main job on the embedded default, `make test` runs the test suite.
# Both set up (or reuse) ./.venv first.
SHELL := /bin/bash
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

# every bench once, one after the other; what they print also goes to bench/output/make-bench.txt (the run's date,
# commit and load first, then each bench's start, load and duration; ignored by git: a run the README's table is
# taken from is kept under docs/bench-runs/). annotation_browser is not named: annotation_latency runs it at its end
# (its --pages), and running it again took six minutes more for the same rows
BENCHES = command_overhead catalog_write progress_build explore_quality annotation_latency \
          login_attack eval_throughput vic_build webplan_build scale_build

bench: setup
	@mkdir -p bench/output
	@{ echo "make bench: $$(date -u '+%Y-%m-%d %H:%M UTC'), commit $$(git rev-parse --short HEAD 2>/dev/null), \
	$$(nproc) cores, load $$(cut -d' ' -f1-3 /proc/loadavg)"; } | tee bench/output/make-bench.txt
	@set -o pipefail; for name in $(BENCHES); do \
		echo "== bench/$$name.py ($$(date -u +%H:%M:%S), load $$(cut -d' ' -f1 /proc/loadavg))"; \
		SECONDS=0; .venv/bin/python bench/$$name.py 2>&1 || exit 1; echo "== $$name took $$SECONDS s"; \
	done | tee -a bench/output/make-bench.txt
