# codeward: two commands for a newcomer: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TSTAMP := $(VENV)/.installed-test

.PHONY: run test lint bench install-systemd clean system-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# The daemon and the default Python language servers (basedpyright, ruff) from PyPI.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[python]'
	touch $@

$(TSTAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(STAMP)

## run: install into .venv (with the Python servers) and start the daemon in the foreground
run: $(STAMP)
	$(BIN)/codeward daemon

## system-deps: gopls, clangd (Debian packages) for the real-server tests, and socat for
## the README's shell example, when missing
system-deps:
	@missing=""; \
	command -v gopls >/dev/null 2>&1 || missing="$$missing gopls"; \
	command -v clangd >/dev/null 2>&1 || missing="$$missing clangd"; \
	command -v go >/dev/null 2>&1 || missing="$$missing golang-go"; \
	command -v socat >/dev/null 2>&1 || missing="$$missing socat"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing:$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "not root or no apt-get: tests needing$$missing will skip, saying why"; \
	  fi; \
	fi

## test: install everything the tests need, language servers included, then run them
test: $(TSTAMP) system-deps
	$(BIN)/python -m pytest --cov=codeward --cov-report=term --cov-fail-under=85 $(PYTEST_ARGS)

## lint: ruff and basedpyright
lint: $(TSTAMP)
	$(BIN)/ruff check codeward tests bench
	$(BIN)/ruff format --check codeward tests bench
	$(BIN)/basedpyright codeward

## bench: print the benchmark ratios
bench: $(TSTAMP) system-deps
	$(BIN)/python bench/rpc.py
	$(BIN)/python bench/git.py
	$(BIN)/python bench/lsp.py

## install-systemd: user units with ExecStart filled in
install-systemd: $(STAMP)
	mkdir -p $${XDG_CONFIG_HOME:-$$HOME/.config}/systemd/user
	sed "s|@EXEC@|$(abspath $(BIN))/codeward|" systemd/codeward.service > $${XDG_CONFIG_HOME:-$$HOME/.config}/systemd/user/codeward.service
	cp systemd/codeward.socket $${XDG_CONFIG_HOME:-$$HOME/.config}/systemd/user/codeward.socket
	systemctl --user daemon-reload || true
	@echo "enable with: systemctl --user enable --now codeward.socket"

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .coverage .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
