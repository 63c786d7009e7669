# The two set-up commands of a fresh machine are `make demo` and `make test`;
# each builds or refreshes the local virtual environment first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/faceoff run matrix/examples/sim-faceoff.toml

# pytest exits 5 when it collects nothing; that is a failure here, said out loud.
test: $(STAMP)
	@$(BIN)/python -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: no tests were collected; failing"; fi; \
	exit $$rc

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m benchmarks $(NAME) $(ARGS)

# The demo leaves its restored (simulated) incumbent serving, as a real campaign would.
clean:
	@if [ -x $(BIN)/faceoff ] && [ -d runs ]; then $(BIN)/faceoff teardown --workdir runs; fi
	rm -rf $(VENV) runs .pytest_cache
