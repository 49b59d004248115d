"""The full study's projection (tests/benchmarks/project_full_study.py): the GPU models' loads as the
config plans them, jobs placed longest first, the measured rates read from the GPU benchmark."""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))


def test_loads_follow_the_store_partitions_and_derived_corpora_load_nothing():
    from project_full_study import FULL_CONFIG, documented_inputs, gpu_jobs, load_config
    config = load_config(FULL_CONFIG)
    jobs = gpu_jobs(config, documented_inputs(config)["texts"])
    assert set(jobs) == {"gronlp", "mpnet", "robbert", "labse"}
    # pc_en, pc_nl and skills_nl, 4 store partitions each; the length-matched corpora copy their parent's
    assert all(len(texts) == 3 * 4 for texts in jobs.values())
    fine = gpu_jobs({**config, "embedding_partitions_per_device": {}}, documented_inputs(config)["texts"])
    assert all(len(texts) == 3 * 32 for texts in fine.values())
    assert abs(sum(jobs["mpnet"]) - sum(fine["mpnet"])) < 1e-3  # the same texts, in fewer jobs


def test_jobs_are_placed_longest_first_and_measured_rates_are_read(tmp_path):
    from project_full_study import assumptions, makespan, project
    # longest first, not the optimum (9: 5 + 4 and 3 + 3 + 3)
    assert makespan([5, 4, 3, 3, 3], 2) == 10.0 and makespan([1] * 8, 16) == 1.0
    figures = {"gpu": "NVIDIA H200", "embedding": [
        {"model": "minilm", "precision": "fp16", "batch": 256, "job_texts_per_s": 9e3, "job_texts_per_s_without_load": 1e4,
         "encode_texts_per_s": 1e4, "job_load_s": 1.0},
        {"model": "base", "precision": "fp16", "batch": 256, "job_texts_per_s": 3e3, "job_texts_per_s_without_load": 4e3,
         "encode_texts_per_s": 4e3, "job_load_s": 2.5}]}
    (tmp_path / "gpu.json").write_text(json.dumps(figures))
    measured = [a for a in assumptions([tmp_path / "gpu.json"]) if a["label"].startswith("measured")]
    assert [(a["label"], a["rate"], a["load_s"]) for a in measured] == [("measured, NVIDIA H200, fp16, batch 256", 4e3, 2.5)]
    inputs = {"texts": {}, "non_embed_job_s": 0.0, "tfidf_embed_job_s": 0.0, "jobs": 0, "overhead_per_job_s": 0.0}
    row = project(inputs, {"m": [4e6, 4e6, 4e6]}, measured[0], 2)
    assert row["gpu_wall_h"] == (2 * (1000 + 2.5)) / 3600 and abs(row["load_share"] - 7.5 / 3007.5) < 1e-12
