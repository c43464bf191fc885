# glasstorch: the two commands a newcomer needs are `make demo` and `make test`.
# Both create (or refresh) a virtual environment in .venv and install glasstorch
# into it in editable mode, which also compiles the fast tier's C extension.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# Re-install when the packaging or the C sources change (random.c includes
# fast/cuda/gt_philox.cuh, the Philox generator it shares with the CUDA kernels).
INSTALL_DEPS := pyproject.toml setup.py fast/build.py $(wildcard fast/csrc/*.c fast/csrc/*.h) \
                fast/cuda/gt_philox.cuh
TEST_STAMP   := $(VENV)/.stamp-test
DOCS_STAMP   := $(VENV)/.stamp-docs
LINT_PATHS   := glasstorch reference fast shared_tests docs/conf.py setup.py

.PHONY: help install demo test lint docs clean

help:
	@echo "make install      create .venv and install glasstorch into it (the C kernels are compiled) with"
	@echo "                  the test and distributed extras (pytest, Hypothesis, mpi4py + Open MPI);"
	@echo "                  PyTorch is optional, never installed"
	@echo "make demo         train a LeNet-style CNN on the bundled 8x8 digits (on 'cuda' when"
	@echo "                  torch.cuda.is_available(), e.g. with GLASSTORCH_CUDA=simulator)"
	@echo "make test         ruff, the conformance suite once per complete tier, then the device"
	@echo "                  tests on the CUDA simulator"
	@echo "make bench        time the workloads on both tiers, NumPy and PyTorch (BENCH_ARGS=... adds options)"
	@echo "make docs         build the Sphinx site and run every chapter (warnings are errors)"
	@echo "make gpu-check    on a machine with an NVIDIA GPU: the device tests on CuPy and the GPU benchmarks"
	@echo "make assignments  build the classroom's student repositories and Gradescope autograders"
	@echo "                  into dist/classroom/ (no PyTorch needed; docs/guide/classroom-teachers.md)"
	@echo "make clean        remove .venv and every build output"
	@echo "Pick the tier with GLASSTORCH_TIER=reference|fast (default: fast)."

# ------------------------------------------------------------------ environment
$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' || \
	  { echo "glasstorch needs Python 3.10 or newer; '$(PYTHON)' is older." \
	         "Run e.g. 'make PYTHON=python3.11 test'."; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(TEST_STAMP): $(INSTALL_DEPS) | $(PY)
	$(PY) -m pip install --quiet -e '.[test,distributed]'
	@touch $@

$(DOCS_STAMP): $(INSTALL_DEPS) | $(PY)
	$(PY) -m pip install --quiet -e '.[test,docs,distributed]'
	@touch $@

install: $(TEST_STAMP)

# ------------------------------------------------------------------------ demo
demo: $(TEST_STAMP)
	$(PY) -m glasstorch.demo

# ------------------------------------------------------------------------ test
lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)

# Runs the suite once for every tier that implements the whole kernel contract
# (as `python -m glasstorch.tiers` lists them), and fails if any tier fails.
# Then the tests marked `cuda` run once more with the CUDA simulator as the
# device (GLASSTORCH_CUDA=simulator), and the kernel tests (test_cuda_kernels.py,
# every kernel family) once again with every kernel of fast/cuda built with the
# sanitizer's checks (GLASSTORCH_SIM_CHECK=all: no report may come from
# glasstorch's own kernels; checked kernels run 5-11x slower, so not the whole
# device suite), over the fast tier only: the simulator
# compiles the .cu kernels with the host C++ compiler, which the fast tier needs
# anyway, and the device code is the same whichever CPU tier runs beside it.
# Last, the whole conformance suite runs with its inputs on the simulated device
# (--device=cuda; the tests of host memory are skipped as cpu_only, see
# shared_tests/conftest.py); on a GPU run it with GLASSTORCH_CUDA=cupy.
# The fast tier's C kernels are compiled for several CPU levels (fast/build.py)
# and the suite above runs the best this CPU has; its kernel tests run again on
# each lower level it can run (forced by GLASSTORCH_CPU_CAPABILITY), which
# takes about a minute each, where the whole suite would take many.
LOWER_LEVELS := from glasstorch.fast import CAPABILITIES as c, supported_capability as s; \
                print(*c[: c.index(s())])
LEVEL_TESTS  := $(wildcard shared_tests/test_fast_*.py) shared_tests/test_nn_transformer_kernels.py

test: lint
	@tiers="$$(GLASSTORCH_TIER=reference $(PY) -m glasstorch.tiers)" || exit 1; \
	if [ -z "$$tiers" ]; then echo "no tier implements the whole kernel contract"; exit 1; fi; \
	failed=""; \
	for t in $$tiers; do \
	  echo ""; \
	  echo "=================== conformance suite: GLASSTORCH_TIER=$$t ==================="; \
	  GLASSTORCH_TIER=$$t $(PY) -m pytest shared_tests -q || failed="$$failed $$t"; \
	done; \
	if echo $$tiers | tr ' ' '\n' | grep -qx fast; then \
	  for level in $$(GLASSTORCH_TIER=fast $(PY) -c "$(LOWER_LEVELS)"); do \
	    echo ""; \
	    echo "===== the fast tier's kernel tests on lower CPU levels: GLASSTORCH_CPU_CAPABILITY=$$level ====="; \
	    GLASSTORCH_CPU_CAPABILITY=$$level GLASSTORCH_TIER=fast $(PY) -m pytest $(LEVEL_TESTS) -q \
	      || failed="$$failed fast($$level)"; \
	  done; \
	  echo ""; \
	  echo "========= device tests: GLASSTORCH_TIER=fast GLASSTORCH_CUDA=simulator ========="; \
	  GLASSTORCH_TIER=fast GLASSTORCH_CUDA=simulator $(PY) -m pytest -m cuda shared_tests -q \
	    || failed="$$failed fast+simulator"; \
	  echo ""; \
	  echo "== the kernel tests with every kernel checked by the sanitizer: GLASSTORCH_SIM_CHECK=all =="; \
	  GLASSTORCH_SIM_CHECK=all GLASSTORCH_TIER=fast GLASSTORCH_CUDA=simulator $(PY) -m pytest \
	    -m cuda shared_tests/test_cuda_kernels.py -q || failed="$$failed fast+simulator(checked)"; \
	  echo ""; \
	  echo "== conformance suite on the device: GLASSTORCH_CUDA=simulator --device=cuda =="; \
	  GLASSTORCH_TIER=fast GLASSTORCH_CUDA=simulator $(PY) -m pytest shared_tests -q \
	    --device=cuda || failed="$$failed fast+simulator(device-suite)"; \
	fi; \
	echo ""; \
	if [ -n "$$failed" ]; then echo "FAILED on tier(s):$$failed"; exit 1; fi; \
	echo "conformance suite passed on tier(s):" $$tiers "(and the kernel tests on lower CPU levels, the device tests and the device suite on the simulator)"

# ----------------------------------------------------------------------- bench
# The benchmark harness (docs/bench.md): both tiers, NumPy and PyTorch, each in an
# interpreter of its own, taking turns sample by sample; a table on stdout,
# bench-results.json and .png. Then all-reduce on 2 ranks, MPI against PyTorch's
# gloo (glasstorch/bench/distributed.py): a table and bench-distributed.json; and a
# DDP training step (demo CNN, GPT-mini) on 2 ranks beside PyTorch's DDP
# (glasstorch/bench/ddp.py): a table and bench-ddp.json.
BENCH_STAMP := $(VENV)/.stamp-bench
BENCH_ARGS  ?=

$(BENCH_STAMP): $(INSTALL_DEPS) | $(PY)
	$(PY) -m pip install --quiet -e '.[bench,distributed]'
	@touch $@

.PHONY: bench
bench: $(BENCH_STAMP)
	$(PY) -m glasstorch.bench --other-tier --interleave --json bench-results.json --plot bench-results.png $(BENCH_ARGS)
	$(PY) -m glasstorch.bench.distributed --json bench-distributed.json
	$(PY) -m glasstorch.bench.ddp --json bench-ddp.json

# ------------------------------------------------------------------ GPU check
# On a machine with an NVIDIA GPU: the device tests on the CuPy driver and the
# device benchmarks against PyTorch CUDA, in one run (.ci/gpu-check says what it
# needs). It uses the machine's python3, not .venv, since such machines often
# have no internet to build one.
.PHONY: gpu-check
gpu-check:
	bash .ci/gpu-check

# ------------------------------------------------------------------ classroom
# Every assignment of glasstorch/classroom/course.toml: dist/classroom/<id>/student/
# and autograder.zip (docs/guide/classroom-teachers.md). Not part of `make test`.
.PHONY: assignments
assignments: $(TEST_STAMP)
	$(PY) -m glasstorch.classroom build

# ------------------------------------------------------------------------ docs
docs: $(DOCS_STAMP)
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html
	@echo "open docs/_build/html/index.html"

# ----------------------------------------------------------------------- clean
clean:
	rm -rf $(VENV) build dist *.egg-info docs/_build docs/api/generated docs/tutorials \
	       docs/jupyter_execute .pytest_cache .ruff_cache .hypothesis
	rm -f fast/_native*.so fast/_native*.c
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
