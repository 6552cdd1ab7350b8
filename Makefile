# Two commands do all the set-up on a fresh machine:
#   make demo   set up, capture the add_relu sample (CPU or GPU) and print what torch.compile did
#   make test   set up, lint, run the test suite (CPU); what CI runs
#   make test-fast   set up, lint, the tests that compile nothing and start no torch (-m "not slow"): the edit loop
VPY := .venv/bin/python
PYTEST_ARGS ?=
# Python writes its bytecode (and pytest its assert-rewritten test modules) into __pycache__ as it does by
# default, even where the shell turned that off: otherwise every pytest worker and each of the suite's
# hundreds of kernelscope children compiles the same sources again (8 s of every collection on 2 cores).
unexport PYTHONDONTWRITEBYTECODE
# Every core (pytest-xdist), one test file per worker at a time: a file's module fixtures are made once, and
# the captures several files share are made once per run (tests/conftest.py's built_once). XDIST= runs serially.
XDIST ?= -n auto --dist loadfile --no-loadscope-reorder
# The UI tests once more on Textual's stock widgets (kernelscope/ui/textual_private off), so the path any
# other Textual takes is tested on every change; no torch compiles (-m "not slow"). Only what the fast paths
# change (what is drawn, when, and with which styles): not the tests of a capture's or a run's child process
# seen from the UI, nor of the UI's imports, nor what keys do (test_ui_keys, test_ui_explorer: the same
# actions either way), nor the pure pieces (test_ui_textdoc), nor the bench view's child. Its files are
# few and one is long, so test by test on the workers (--dist loadgroup: test_ui_snapshots's on one).
UI_TESTS := $(filter-out tests/test_ui_imports.py tests/test_ui_run.py tests/test_ui_capture.py \
              tests/test_ui_keys.py tests/test_ui_explorer.py tests/test_ui_textdoc.py tests/test_ui_bench_follows.py, \
              $(wildcard tests/test_ui_*.py)) tests/test_textual_private.py
STOCK_XDIST ?= -n auto --dist loadgroup

.PHONY: setup demo test test-fast lint ui gpu-test

setup:
	./scripts/setup.sh
	@touch $(SETUP_STAMP)

# lint, test and test-fast set up again only when what setup installs changed (its re-check costs ~7 s of
# every run); a fresh clone, or a venv made anew, has no stamp and sets up.
SETUP_STAMP := .venv/.kernelscope-setup
$(SETUP_STAMP): pyproject.toml scripts/setup.sh
	./scripts/setup.sh
	@touch $@

demo: setup
	$(VPY) -m kernelscope capture add_relu -o kernelscope-captures/add_relu-demo --force
	$(VPY) -m kernelscope show kernelscope-captures/add_relu-demo

ui: setup
	$(VPY) -m kernelscope

lint: $(SETUP_STAMP)
	$(VPY) -m ruff check kernelscope tests benchmarks samples scripts
	.venv/bin/lint-imports

test: lint
	$(VPY) -m pytest -q $(XDIST) --durations=15 $(PYTEST_ARGS)
	KERNELSCOPE_TEXTUAL_FAST=0 $(VPY) -m pytest -q $(STOCK_XDIST) -m "not slow" $(UI_TESTS)

test-fast: lint
	$(VPY) -m pytest -q $(XDIST) -m "not slow" $(PYTEST_ARGS)

gpu-test: setup
	$(VPY) -m pytest -q tests/gpu
