"""The GPU environment is the CPU one with faiss-gpu in place of faiss-cpu; the Makefile can build it."""
import re
from pathlib import Path

import yaml
from conftest import requires_shared

ROOT = Path(__file__).resolve().parents[2]


def pip_pins(path):
    env = yaml.safe_load(path.read_text())
    return [p.lower() for d in env["dependencies"] if isinstance(d, dict) for p in d["pip"]], env


def test_gpu_env_equals_cpu_env_but_faiss():
    cpu, cpu_env = pip_pins(ROOT / "envs" / "workflow.yaml")
    gpu, gpu_env = pip_pins(ROOT / "envs" / "workflow-gpu.yaml")
    assert "faiss-cpu==1.15.1" in cpu and "faiss-gpu==1.15.1" in gpu
    assert [p.replace("faiss-cpu", "faiss-gpu") for p in cpu] == gpu
    assert [d for d in cpu_env["dependencies"] if isinstance(d, str)] == \
        [d for d in gpu_env["dependencies"] if isinstance(d, str)]
    assert gpu_env["name"] != cpu_env["name"]


def test_makefile_has_a_gpu_setup():
    text = (ROOT / "Makefile").read_text()
    target = re.search(r"^setup-gpu:\n((?:\t.*\n)+)", text, re.M)
    assert target, "no setup-gpu target"
    assert "faiss-gpu" in target.group(1) and "uninstall" in target.group(1)
    assert "setup-gpu" in re.search(r"^\.PHONY:.*$", text, re.M).group(0)


def test_config_states_the_retrieval_defaults_and_kind_keys_match_the_builder():
    import copy

    from workflow_scripts.config import validate
    from workflow_scripts.retrieval.probe import KIND_KEYS
    from workflow_scripts.retrieval.sets import SPEC_KEYS
    assert {k: v - {"eval_split"} for k, v in KIND_KEYS.items()} == SPEC_KEYS
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    stated = validate(copy.deepcopy(config))["retrieval"]
    for key in ("eval_split", "top_k", "k", "table_k", "draws", "bootstrap_b", "thresholds", "coe", "isotropy"):
        del config["retrieval"][key]
    assert validate(config)["retrieval"] == stated  # config.yaml writes out the schema's defaults
    assert stated["k"] == {"min": 5, "max": 100, "step": 5} and stated["draws"]["count"] == 100


# plans the default config, whose CSC negation needs NLTK's tagger and WordNet (../shared/data/nltk_data)
@requires_shared("nltk_data")
def test_workflow_plans_one_job_per_set_and_model(tmp_path):
    """The probe's jobs from Snakemake's own dry run: a build per set, search/isotropy/metrics per
    (set, model), one aggregation; a model limited to other probes gets none."""
    from workflow_runner import planned_jobs, write_config
    res = ROOT / "resources"
    config = {
        "seed": 1, "results": "results", "embedding_partitions": 2,
        "sources": {"s": {"format": "bitext", "path": str(res / "corpora" / "en_nl_sample.txt"), "languages": ["en", "nl"]}},
        "corpora": {"s_en": {"source": "s", "language": "en"}},
        "models": {"tfidf": {"family": "tfidf"}, "hash": {"family": "hashing", "dim": 16},
                   "csc_only": {"family": "hashing", "dim": 8, "probes": ["csc"]}},
        "retrieval": {"datasets": {"qa": {"kind": "beir", "path": str(res / "retrieval" / "telecom_qa")},
                                   "bitext": {"kind": "tatoeba", "path": str(res / "corpora" / "en_nl_sample.txt"),
                                              "columns": {"query": 0, "corpus": 1}}}},
    }
    jobs = planned_jobs(tmp_path, write_config(tmp_path, config))
    count = lambda rule: sum(r == rule for r, _ in jobs)  # noqa: E731
    assert count("retrieval_build") == 2 and count("retrieval_aggregate") == 1
    for rule in ("retrieval_search", "retrieval_isotropy", "retrieval_metrics"):
        assert count(rule) == 4, rule
        assert {wc["model"] for r, wc in jobs if r == rule} == {"tfidf", "hash"}
    scopes = {wc["scope"] for r, wc in jobs if r == "embed" and wc["model"] == "hash"}
    assert {"retrieval.qa", "retrieval.bitext"} <= scopes
