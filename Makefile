# Two commands do everything on a fresh machine:
#   make serve   create .venv, install, build and serve the site on http://127.0.0.1:8000
#   make test    run every test: sybil (docs + docstrings), unit, property,
#                PyTorch cross-checks, strict build, browser, workflow lint
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install serve build test bench bench-sql plans-sql lock clean chapter

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

test: $(STAMP)
	$(PY) -m pytest

# A new chapter from the template: make chapter NAME=<slug> TITLE="<title>"
chapter: $(STAMP)
	$(PY) docs/hooks/new_chapter.py "$(NAME)" "$(TITLE)"

# Lighthouse budgets of the chapter pages: prints a table (not part of make test).
bench: $(STAMP)
	$(PY) benchmarks/budgets.py

# One attention head as SQL on SQLite, PostgreSQL and DuckDB against NumPy,
# for growing L: prints a table and writes the committed result file
# benchmarks/results/sql-attention.json (run it on a quiet machine).
bench-sql: $(STAMP)
	$(PY) benchmarks/sql_attention.py

# The plans SQLite, PostgreSQL and DuckDB choose for one head, written to
# benchmarks/results/sql-plans.json (the chapter "Attention is a query" reads
# PostgreSQL's from there: not every reader has one).
plans-sql: $(STAMP)
	$(PY) benchmarks/sql_plans.py

# Regenerate the constraints (the lock) from the current environment.
# PyTorch is left out: .ci/run pins it (the CPU build) on its own.
lock: $(STAMP)
	$(PY) -m pip freeze --exclude-editable | grep -v -E '^(-e|torch==|nvidia-|triton==)' > constraints.txt

clean:
	rm -rf $(VENV) site artifacts .pytest_cache .hypothesis
