# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# The CPU build of torch. Elsewhere: TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
# (or a CUDA wheel index) — see README "Installing torch".
TORCH_SPEC ?= torch==2.13.0

.PHONY: demo test test-faults install install-dev bench screenshots fixtures tui-check lint clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet $(TORCH_SPEC)
	$(PIP) install --quiet -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIP) install --quiet -e ".[dev]"
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	$(VENV)/bin/drifttui demo

test: $(VENV)/.installed-dev
	$(PY) -m pytest -n 2 -q tests
	$(VENV)/bin/lint-imports

test-faults: $(VENV)/.installed-dev
	DRIFTTUI_FAULTS=1 $(PY) -m pytest -q -p no:xdist tests/engine/test_signals.py

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/run_all.py

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
