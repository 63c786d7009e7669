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

# In parallel workers, then the tests that need a quiet host one at a time (tests/suite.sh);
# nothing collected is a failure there, said out loud.
test: $(STAMP)
	@PYTHON=$(BIN)/python bash tests/suite.sh $(PYTEST_ARGS)

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
