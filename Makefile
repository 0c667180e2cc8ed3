# The course's two commands:
#   make course   run every lesson headless (papermill) into build/course/
#   make test     lint + unit tests of tfs + output regression of every lesson (nbval)
# Options:
#   make course LESSON=02               only the lessons whose file name starts with 02
#   make course PARAMS="SEED=7"         parameters passed to every lesson (papermill -p)
#   make execute NB=notebooks/02_building_blocks.ipynb   re-execute a lesson in place
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
LESSON ?=
PARAMS ?=
NB     ?= notebooks/*.ipynb

# Every run the course makes is headless: no progress bars in stored outputs,
# and the Hugging Face Hub is never contacted during tests.
export TFS_QUIET := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: course test lint unit nbval execute setup clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

course: $(STAMP)
	$(BIN)/python scripts/run_course.py $(if $(LESSON),--lesson $(LESSON)) $(foreach p,$(PARAMS),-p $(p))

lint: $(STAMP)
	$(BIN)/ruff check $(wildcard tfs tests notebooks scripts benchmarks)

test: $(STAMP) lint
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest tests notebooks \
		--nbval --nbval-current-env --nbval-sanitize-with .nbval-sanitize.cfg \
		-p no:cacheprovider

unit: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest tests -p no:cacheprovider

nbval: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest $(NB) \
		--nbval --nbval-current-env --nbval-sanitize-with .nbval-sanitize.cfg \
		-p no:cacheprovider

execute: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python scripts/execute_notebooks.py $(NB)

clean:
	rm -rf build work .pytest_cache .ruff_cache
