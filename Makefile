# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# The CPU build of torch. Elsewhere: TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
# (or a CUDA wheel index) — see README "Installing torch".
TORCH_SPEC ?= torch==2.13.0

.PHONY: demo test test-faults test-models test-deploy test-bisect test-drifts test-triton triton-server install install-dev install-models install-deploy bench fuzz screenshots fixtures tui-check lint clean

# Each step says what it does before it starts: the whole install takes a minute or more, and pip
# runs --quiet, so without these lines `make demo` / `make test` would sit silent.
STEP = @echo "==> "

$(VENV)/.installed: pyproject.toml
	$(STEP)"[1/4] Python venv in $(VENV)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(STEP)"[2/4] upgrading pip"
	@$(PIP) install --quiet --upgrade pip
	$(STEP)"[3/4] installing $(TORCH_SPEC) (the largest download: about a minute)"
	@$(PIP) install --quiet $(TORCH_SPEC)
	$(STEP)"[4/4] installing drifttui and its dependencies (onnx, onnxruntime, textual, ...)"
	@$(PIP) install --quiet -e .
	@touch $@
	$(STEP)"drifttui installed in $(VENV)"

# Bytecode for the installed packages, once: where PYTHONDONTWRITEBYTECODE is set (as on our CI
# machines) nothing writes it, and every test process would compile torch from source (~3 s each,
# ~9 s more when torch._dynamo is imported). A file that does not compile is simply compiled at
# import, so compileall's status is ignored.
$(VENV)/.installed-dev: $(VENV)/.installed
	$(STEP)"[dev 1/4] installing the test tools (pytest, pytest-xdist, syrupy, import-linter, ...)"
	@$(PIP) install --quiet -e ".[dev]"
	$(STEP)"[dev 2/4] installing the real-architecture suite's libraries (transformers, timm)"
	@$(MAKE) --no-print-directory install-models
	$(STEP)"[dev 3/4] installing the deployment tools (onnxsim, onnxslim, float16 converters, diffusers)"
	@$(MAKE) --no-print-directory install-deploy
	$(STEP)"[dev 4/4] compiling the installed packages' bytecode once (about a minute)"
	-@$(PY) -m compileall -q -j 0 $(VENV)/lib > /dev/null 2>&1
	@touch $@

# The real-architecture suite (tests/archs): transformers, and timm WITHOUT torchvision (its PyPI
# wheels are CUDA builds here; tests/archs/tvshim.py stands in for the imports timm makes). A
# constraints file pins the torch already installed, so pip never swaps it for another build.
install-models: $(VENV)/.installed
	@$(PY) -c "import torch; print('torch==' + torch.__version__.split('+')[0])" > $(VENV)/torch-constraint.txt
	$(STEP)"installing transformers (torch pinned by $(VENV)/torch-constraint.txt)"
	@$(PIP) install --quiet -c $(VENV)/torch-constraint.txt -e ".[models]"
	$(STEP)"installing timm without its dependencies (no torchvision)"
	@$(PIP) install --quiet --no-deps timm==1.0.31

# the deployment tools (tests/deploy): simplifiers, float16 converters, diffusers, constrained to the
# installed torch like the models extra
install-deploy: $(VENV)/.installed
	@$(PY) -c "import torch; print('torch==' + torch.__version__.split('+')[0])" > $(VENV)/torch-constraint.txt
	$(STEP)"installing the deployment tools (torch pinned by $(VENV)/torch-constraint.txt)"
	@$(PIP) install --quiet -c $(VENV)/torch-constraint.txt -e ".[deploy]"

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	$(STEP)"starting the debugger on the built-in example resnet18-bf16 (q quits)"
	@$(VENV)/bin/drifttui demo

test: $(VENV)/.installed-dev
	$(STEP)"running the test suite on 2 workers (a few minutes)"
	$(PY) -m pytest -n 2 -q tests
	$(STEP)"checking the import contracts (lint-imports)"
	$(VENV)/bin/lint-imports

test-faults: $(VENV)/.installed-dev
	DRIFTTUI_FAULTS=1 $(PY) -m pytest -q -p no:xdist tests/engine/test_signals.py tests/ci/test_faults.py

# the long tail of tests/archs (every architecture, both exporters), with the coverage table
test-models: $(VENV)/.installed-dev
	rm -f .pytest_cache/arch-table.md
	DRIFTTUI_ARCH_TABLE=.pytest_cache/arch-table.md $(PY) -m pytest -q -p no:xdist -m models tests/archs
	@echo "| model | exporter | calls | mapped | fused | not exported | unmapped | time |"
	@cat .pytest_cache/arch-table.md

# the long tail of tests/deploy (every deployment tool, both exporters, clean and drifted files): about 600
# points, hours on 2 cores; run a selection (-k an architecture or a tool) directly with pytest (docs/deploy.md)
test-deploy: $(VENV)/.installed-dev
	$(PY) -m pytest -q -p no:xdist -m deploy tests/deploy tests/compose

# the pipeline bisect and the tolerance advisor (tests/compose: real simplifiers, ORT passes, the zoo)
test-bisect: $(VENV)/.installed-dev
	$(PY) -m pytest -q -p no:xdist -m "deploy or models or not (deploy or models)" tests/compose

# the long tail of the exporter / ORT drift forms and their controls: every test marked `drifts`, in every test file
# (each batch's forms, what was screened and kept, are in its forms file's docstring and docs/drift-catalogue.md), so
# a new suite runs here without being listed; about 1000 tests, about 30 minutes on 2 cores
test-drifts: $(VENV)/.installed-dev
	$(PY) -m pytest -q -n 2 --dist loadfile -m drifts tests

# the live-server tests (tests/triton/test_live.py, marker triton): a real Triton server from PyTriton
# (nvidia-pytriton bundles tritonserver) in its own venv. It must be the operating system's own
# Python 3.11 (Debian's python3.11 + python3.11-venv): under a newer 3.11 build the Python backend's
# stub fails with "'_thread.RLock' object has no attribute '_recursion_count'" (docs/triton.md).
# The client side (tritonclient) is in the dev install. Servers listen on 127.0.0.1 only.
TRITON_PYTHON ?= /usr/bin/python3.11
TRITON_VENV   ?= .venv-triton-server
$(TRITON_VENV)/.installed:
	$(STEP)"building the PyTriton server venv in $(TRITON_VENV) with $(TRITON_PYTHON)"
	@test -x $(TRITON_PYTHON) || (echo "no $(TRITON_PYTHON): apt-get install python3.11 python3.11-venv" && false)
	@test -x $(TRITON_VENV)/bin/python || $(TRITON_PYTHON) -m venv $(TRITON_VENV)
	@$(TRITON_VENV)/bin/python -m pip install --quiet --upgrade pip
	@$(TRITON_VENV)/bin/python -m pip install --quiet nvidia-pytriton==0.7.0 onnxruntime==1.32.0 "numpy<2"
	@touch $@

triton-server: $(TRITON_VENV)/.installed

test-triton: $(VENV)/.installed-dev $(TRITON_VENV)/.installed
	DRIFTTUI_TRITON_PYTHON=$(TRITON_VENV)/bin/python $(PY) -m pytest -q -rs -p no:xdist -m triton tests/triton

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/run_all.py

# the drift fuzzer (benchmarks/fuzz_drifts.py): random calls in issue 30's six families, scored on the ones that
# drift; FUZZ="--start 5000 --count 100" picks the seed range (tune on one range, judge on another), FUZZ="--pool
# schema" the source-derived pool (benchmarks/fuzz_schema.py: the ATen ops torchlib and TorchScript's symbolics lower)
fuzz: $(VENV)/.installed-dev
	PYTHONPATH=$(CURDIR) $(PY) benchmarks/fuzz_drifts.py $(FUZZ)

screenshots: $(VENV)/.installed-dev
	$(PY) scripts/screenshots.py

# re-record tests/tui/fixtures/ from the real engine (after an engine or report change)
fixtures: $(VENV)/.installed-dev
	$(PY) scripts/record_fixtures.py

# the real TUI in tmux at 80x24: fix visible after `3`, ctrl+p finds determinism, quick `q`
tui-check: $(VENV)/.installed-dev
	$(PY) scripts/tmux_check.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
