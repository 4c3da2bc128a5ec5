# Two commands do everything on a fresh machine:
#   make serve   create .venv, install, build and serve the site on http://127.0.0.1:8000/qkv/
#   make test    run every test: sybil (docs + docstrings), unit, property,
#                PyTorch cross-checks, strict build, browser, workflow lint
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install serve build test check bench screenshots bench-sql bench-attention bench-kv bench-layout bench-heights lock clean chapter dist plans-sql

$(STAMP): pyproject.toml constraints.txt package.json package-lock.json
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[docs,test]'
	# Browser-side test tools (axe-core, Lighthouse), pinned by package-lock.json.
	npm ci --no-audit --no-fund --loglevel=error
	touch $(STAMP)

install: $(STAMP)

serve: $(STAMP)
	$(VENV)/bin/mkdocs serve --strict --dev-addr 127.0.0.1:8000

build: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --site-dir site

# pytest through a guard that fails the run when pytest ends without its
# summary line (a test that calls os._exit(0) would otherwise end it "green"),
# on JOBS pytest-xdist workers (default: one per core and one more, since a
# worker often waits on Chromium or a subprocess: 373 -> 335 s on 2 cores,
# where 3 workers keep both cores 99% busy); tests that share state
# run on one worker (--dist loadgroup, tests/support/workers.py). JOBS=0 runs
# everything in one process. With workers, each has one BLAS/OpenMP thread
# (unless set): the workers already fill the cores, and a thread pool in each
# spins against the others (measured on 2 cores: 617 -> 543 busy CPU-s,
# 331 -> 304 s). JOBS=0 keeps the machine's default thread count.
JOBS ?= $(shell python3 -c "import os; print((os.cpu_count() or 1) + 1)" 2>/dev/null || echo auto)
ONE_THREAD := $(if $(filter 0,$(JOBS)),,OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-1} OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=$${MKL_NUM_THREADS:-1})
test: $(STAMP)
	$(ONE_THREAD) $(PY) tests/support/pytest_finished.py -n $(JOBS) --dist loadgroup

# One page in seconds: its blocks and output blocks, copy-isolation, prose
# numbers and (for a chapter) its shape, each problem as <page>:<line>: ...
#   make check PAGE=docs/chapters/attention.md
check: $(STAMP)
	@test -n "$(PAGE)" || { echo "usage: make check PAGE=docs/chapters/<name>.md"; exit 2; }
	PYTHONPATH="$(CURDIR)/src$${PYTHONPATH:+:$$PYTHONPATH}" $(PY) tests/support/check_page.py "$(PAGE)"

# The release dry run: build the sdist and wheel into dist/, twine check
# --strict, check-wheel-contents, and every file of src/qkv in the wheel.
# The release workflow runs the same script before it publishes.
dist: $(STAMP)
	$(PY) tests/support/release.py dist

# A new chapter from the template: make chapter NAME=<slug> TITLE="<title>"
chapter: $(STAMP)
	$(PY) docs/hooks/new_chapter.py "$(NAME)" "$(TITLE)"

# Lighthouse budgets of every page: prints a table (not part of make test).
bench: $(STAMP)
	$(PY) benchmarks/budgets.py

# The reader's path: every page's height on a 390 x 844 phone, in screens,
# with its Deeper boxes closed (the main line) and open, and its words on the
# main line and in boxes. Exit 1 when a chapter's main line is over 12 screens.
bench-heights: $(STAMP)
	$(PY) benchmarks/heights.py

# Full-page screenshots of every page in every palette x width, and of each
# widget, into artifacts/ for a reviewer (not part of make test: nothing is
# asserted on a picture). CI keeps them. Optional: PAGES="chapters/attention/ ...".
screenshots: $(STAMP)
	PYTHONPATH="$(CURDIR)/docs/hooks" $(PY) tests/support/screenshots.py $(PAGES)

# One attention head as SQL on SQLite, PostgreSQL and DuckDB against NumPy,
# for growing L: prints a table and writes the committed result file
# benchmarks/results/sql-attention.json (run it on a quiet machine).
bench-sql: $(STAMP)
	$(PY) benchmarks/sql_attention.py

# Attention at scale: qkv's naive and streaming attention against PyTorch's
# CPU SDPA for L = 512 .. 8192, L = 65,536 streamed, KV-cache decoding; prints
# tables and writes benchmarks/results/attention.json (run it on a quiet machine).
bench-attention: $(STAMP)
	$(PY) benchmarks/attention.py

# Serving from a KV cache: bytes per token of MHA, GQA and MQA at the sizes of
# Llama-2-70B and Mistral-7B (configs cited in the script), decode's bytes read
# per token against this machine's measured memory bandwidth, and the prefix
# hit rate of a seeded workload through qkv.PagedKVCache; prints tables and
# writes benchmarks/results/kv-serving.json (run it on a quiet machine).
bench-kv: $(STAMP)
	$(PY) benchmarks/kv_serving.py

# The table layout as a DBA's choice (issue 29): a multi-head attention layer's
# projection and per-head scores in long form (qkv.sql's own files) and one
# vector per row (DuckDB DOUBLE[], PostgreSQL float8[], SQLite JSON), on SQLite,
# PostgreSQL and DuckDB against NumPy for growing L and E, with the row counts
# from the plans; prints a table and writes benchmarks/results/sql-layout.json
# (about a minute; run it on a quiet machine).
bench-layout: $(STAMP)
	$(PY) benchmarks/sql_layout.py

# Regenerate the constraints (the lock) from the current environment.
# PyTorch is left out of constraints.txt: constraints-torch.txt pins it and
# everything it and the reference implementations depend on (.ci/run).
lock: $(STAMP)
	$(PY) -m pip freeze --exclude-editable | grep -v -E '^(-e|torch==|nvidia-|triton==)' > constraints.txt
	$(PY) tests/support/lock.py torch transformers rotary-embedding-torch einops > constraints-torch.txt

clean:
	rm -rf $(VENV) site dist build artifacts .pytest_cache .hypothesis
