# The course's three commands:
#   make course   run every lesson headless (papermill) into build/course/
#   make test     lint (code and workflow files) + unit tests of tfs + output regression
#                 of every lesson (nbval)
#   make lab      open the lessons in JupyterLab with the course's kernel ("tfs-course")
# And the weekly checks (.github/workflows/latest.yml):
#   make latest   every lesson, asserts only, against the newest releases of the
#                 dependencies, in a separate venv (build/venv-latest)
#   make colab    every lesson, asserts only, as Colab and Kaggle run it: tfs installed
#                 from its wheel (with its copy of data/), the lessons outside the checkout
# Options:
#   make course LESSON=02               only the lessons whose file name starts with 02
#   make course PARAMS="SEED=7"         parameters passed to every lesson (papermill -p)
#   make execute NB=notebooks/02_building_blocks.ipynb   re-execute a lesson in place
#   make test JOBS=1                    the tests in one process (default: two, see below)
#   make test CPU=avx2                  PyTorch, MKL and oneDNN held to their AVX2 kernels, as on
#                                       an older CPU (stored outputs must not depend on it)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
LESSON ?=
PARAMS ?=
NB     ?= notebooks/*.ipynb
LATEST := build/venv-latest
# Options for `make latest`: HOLD="torch" keeps those packages at requirements.txt's pins.
HOLD   ?=
# make test runs in JOBS processes (pytest-xdist); each lesson stays whole on one of them
# (--dist loadfile), computing on one thread (its stored outputs hold at any thread count).
JOBS   ?= 2
PARALLEL := $(if $(filter-out 1,$(JOBS)),-n $(JOBS) --dist loadfile)
CPU    ?=
ifeq ($(CPU),avx2)
export ATEN_CPU_CAPABILITY := avx2
export MKL_ENABLE_INSTRUCTIONS := AVX2
export ONEDNN_MAX_CPU_ISA := AVX2
else ifneq ($(CPU),)
$(error CPU=$(CPU): only CPU=avx2 is known)
endif

# Every run the course makes is headless: no progress bars in stored outputs,
# and the Hugging Face Hub is never contacted during tests.
export TFS_QUIET := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: course test lab latest colab lint unit nbval execute setup clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	$(BIN)/python scripts/lab.py --register
	touch $(STAMP)

course: $(STAMP)
	$(BIN)/python scripts/run_course.py $(if $(LESSON),--lesson $(LESSON)) $(foreach p,$(PARAMS),-p $(p))

lint: $(STAMP)
	$(BIN)/ruff check $(wildcard tfs tests notebooks scripts benchmarks)
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml

# JupyterLab on notebooks/, with the course's kernel (scripts/lab.py says where and why).
lab: $(STAMP)
	$(BIN)/python scripts/lab.py

# The newest releases of the course's dependencies (unpinned), in their own venv;
# every lesson runs with papermill and its asserts, without output comparison.
latest:
	test -x $(LATEST)/bin/python || $(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip packaging
	HF_HUB_OFFLINE=1 $(LATEST)/bin/python scripts/latest.py $(foreach h,$(HOLD),--hold $(h)) \
		$(if $(LESSON),--lesson $(LESSON))

# Every lesson as Colab and Kaggle run it (scripts/colab.py): tfs's wheel installed into an
# empty folder, the lessons copied outside the checkout, papermill, asserts only; a line per
# lesson with its time. LESSON=00 for one.
colab: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python scripts/colab.py $(if $(LESSON),--lesson $(LESSON))

test: $(STAMP) lint
	HF_HUB_OFFLINE=1 $(if $(PARALLEL),OMP_NUM_THREADS=1) \
		$(BIN)/python -m pytest tests notebooks $(PARALLEL) \
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
