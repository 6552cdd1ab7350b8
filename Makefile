# Two commands do all the set-up on a fresh machine:
#   make demo   set up, capture the add_relu sample (CPU or GPU) and print what torch.compile did
#   make test   set up, lint, run the test suite (CPU)
VPY := .venv/bin/python
PYTEST_ARGS ?=

.PHONY: setup demo test lint ui gpu-test

setup:
	./scripts/setup.sh

demo: setup
	$(VPY) -m kernelscope capture add_relu -o kernelscope-captures/add_relu-demo --force
	$(VPY) -m kernelscope show kernelscope-captures/add_relu-demo

ui: setup
	$(VPY) -m kernelscope

lint: setup
	$(VPY) -m ruff check kernelscope tests benchmarks samples scripts
	.venv/bin/lint-imports

test: lint
	$(VPY) -m pytest -q $(PYTEST_ARGS)

gpu-test: setup
	$(VPY) -m pytest -q tests/gpu
