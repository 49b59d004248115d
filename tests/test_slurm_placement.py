"""Where embedding jobs go on a cluster (config `slurm`), and the dress rehearsal's config and figures."""
import json
import re
import sys
from pathlib import Path

import yaml

from conftest import requires_shared

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))


def embed_jobs(out: str) -> dict[tuple[str, str], str]:
    """(model, scope) -> the resources line of its dry-run block (partition 000)."""
    jobs = {}
    for block in out.split("rule embed:")[1:]:
        wildcards = dict(kv.split("=", 1) for kv in
                         re.search(r"^\s*wildcards: (.*)$", block, re.M).group(1).split(", "))
        if wildcards["part"] == "000":
            jobs[wildcards["model"], wildcards["scope"]] = re.search(r"^\s*resources: (.*)$", block, re.M).group(1)
    return jobs


def embed_groups(out: str, group: str = "embed_small") -> list[set[tuple[str, str, str]]]:
    """The (model, scope, part) of each planned job of `group`'s embedding jobs, from a dry run."""
    groups = []
    for block in out.split("Group job ")[1:]:
        if not block.startswith(f"{group} "):
            continue
        members = re.findall(r"^        wildcards: model=(\S+), scope=(\S+), part=(\d+)$", block, re.M)
        groups.append(set(members))
    return groups


# plans a corpus config, whose CSC negation needs NLTK's tagger (../shared/data/nltk_data)
@requires_shared("nltk_data")
def test_embedding_partition_follows_the_model_device_and_only_cpu_jobs_are_grouped(tmp_path):
    """A GPU model's jobs ask for the GPU partition and a GPU; TF-IDF's and the hashing stand-in's
    for the CPU partition, though they share the rule. Without `slurm.partitions` no job names a
    partition (the profile's holds). Grouped `embed_small`: the CPU models' jobs of the listed
    small set, and the stand-in's copies into the derived corpus (joined to the jobs they copy
    from): 2 partitions, 6 jobs in 4 components, 3 components per group job -> 2 group jobs.
    Grouped `embed_cpu`: every other CPU job (TF-IDF's of the derived corpus: fitted per text set,
    so encoded), 2 in one group job. Never the GPU model's."""
    from workflow_runner import snakemake, write_config
    (tmp_path / "bitext.txt").write_text("the cat sleeps\tde kat slaapt\na dog runs fast\teen hond rent snel\n")
    (tmp_path / "models" / "x").mkdir(parents=True)
    config = {"seed": 1, "embedding_partitions": 1,
              "sources": {"mini": {"format": "bitext", "path": str(tmp_path / "bitext.txt"), "languages": ["en", "nl"]}},
              "corpora": {"mini_en": {"source": "mini", "language": "en"},
                          "mini_en_short": {"source": "mini", "language": "en", "max_tokens": 3}},
              "models": {"bert": {"family": "transformers", "path": "models/x", "device": "cuda"},
                         "tfidf": {"family": "tfidf"},
                         "hash": {"family": "hashing", "dim": 8}},
              "slurm": {"partitions": {"cpu": "cpuq", "gpu": "gpuq"}, "small_text_sets": ["mini_en"]}}
    out = snakemake(tmp_path, write_config(tmp_path, config), "--dry-run", "--group-components", "embed_small=3",
                    "embed_cpu=2", "--config", "embedding_partitions=2").stdout
    jobs = embed_jobs(out)
    assert "slurm_partition=gpuq" in jobs["bert", "mini_en"] and "gpu=1" in jobs["bert", "mini_en"]
    for model in ("tfidf", "hash"):
        assert "slurm_partition=cpuq" in jobs[model, "mini_en"] and "gpu=0" in jobs[model, "mini_en"]
    groups = embed_groups(out)
    assert len(groups) == 2 and sum(map(len, groups)) == 6  # which components share a job: Snakemake's choice
    assert set().union(*groups) == {(m, s, p) for m, s in (("hash", "mini_en"), ("hash", "mini_en_short"),
                                                          ("tfidf", "mini_en")) for p in ("000", "001")}
    assert embed_groups(out, "embed_cpu") == [{("tfidf", "mini_en_short", p) for p in ("000", "001")}]
    assert out.count("Group job ") == 3  # the GPU model's jobs in none
    del config["slurm"]
    jobs = embed_jobs(snakemake(tmp_path, write_config(tmp_path, config), "--dry-run").stdout)
    assert not any("slurm_partition" in r for r in jobs.values())


def test_rehearsal_config_keeps_the_full_study_but_its_downloads(tmp_path):
    """Same corpora, model names, partitions and conditions; the sources are local files, every
    model but TF-IDF and the surface-form yardstick is the hashing stand-in at its real width on one
    thread, requests are capped to the node."""
    from rehearsal_config import FULL_CONFIG, rehearsal_config
    full = yaml.safe_load(FULL_CONFIG.read_text())
    config = rehearsal_config(full, tmp_path / "c.zip", "out", node_cpus=2, node_mem_mb=10000,
                              slurm_partitions={"cpu": "a", "gpu": "b"})
    assert list(config["corpora"]) == list(full["corpora"]) and config["corpora"] == full["corpora"]
    assert list(config["models"]) == list(full["models"])
    assert config["csc"] == full["csc"] and config["embedding_partitions"] == full["embedding_partitions"]
    assert not any("url" in s for s in config["sources"].values())
    assert config["models"]["tfidf"] == full["models"]["tfidf"]
    assert config["models"]["form_only"] == full["models"]["form_only"]
    assert config["models"]["fasttext_nl"]["dim"] == 300 and config["models"]["labse"]["dim"] == 768
    assert {m["family"] for n, m in config["models"].items() if n not in ("tfidf", "form_only")} == {"hashing"}
    assert config["models"]["mpnet"]["threads"] == 1 and config["models"]["fasttext_en"]["mem_mb"] == 10000
    assert config["resources"]["perturb"] == {"threads": 2, "mem_mb": 10000, "runtime": 240}  # 8 and 12000 capped
    assert config["slurm"] == {**full["slurm"], "partitions": {"cpu": "a", "gpu": "b"}}


def test_rehearsal_report_reads_pending_running_and_work(tmp_path):
    """Two SLURM jobs submitted at 10:00:00: one starts at :02 and ends at :12 (benchmark: 6 s of
    work), the other starts at :12 and ends at :14 (1 s): pending 2 + 12 s, running 10 + 2 s, so
    start-up 12 - 7 = 5 s, and (14 + 5) / 2 = 9.5 s of overhead per job."""
    from rehearsal_report import summarize
    (tmp_path / "slurm.log").write_text(
        "Job 3 has been submitted with SLURM jobid 7 (log: /x/.snakemake/slurm_logs/rule_ingest/a/7.log).\n"
        "Job 5a2f58b3-88ce-5a94-9b94-10fb9ea129e7 has been submitted with SLURM jobid 8 "
        "(log: /x/.snakemake/slurm_logs/group_embed_small_embed/8.log).\n"
        "localrule report:\nTrying to restart job 4.\n")
    line = ("JobId={id} JobState=COMPLETED Partition=debug StartTime=2026-01-01T10:00:{s} EndTime=2026-01-01T10:00:{e} "
            "Tres=cpu=1,mem={mem},node=1 SubmitTime=2026-01-01T10:00:00\n")
    (tmp_path / "jobcomp.txt").write_text(line.format(id=7, s="02", e="12", mem="2000M")
                                          + line.format(id=8, s="12", e="14", mem="6G"))
    (tmp_path / "slurm.seconds").write_text("20\n")
    (tmp_path / "pairs").write_text("100\n")
    (tmp_path / "sdiag.txt").write_text("Remote Procedure Call statistics by message type\n"
                                        "\tREQUEST_JOB_INFO                        ( 2003) count:30 ave_time:1\n")
    for rule, s, rss in (("ingest", 6, 150.5), ("embed", 1, 90)):
        bench = tmp_path / "slurm" / "benchmarks" / rule / "x.tsv"
        bench.parent.mkdir(parents=True)
        bench.write_text(f"s\th:m:s\tmax_rss\n{s}\t0:00:0{s}\t{rss}\n")
    summary = summarize(tmp_path)
    assert summary["submitted"] == 2 and summary["local_jobs"] == 1 and summary["retries"] == 1
    assert summary["pending_s"]["sum"] == 14 and summary["elapsed_s"]["sum"] == 12 and summary["work_s"] == 7
    assert summary["overhead_per_job_s"] == 9.5 and summary["pairs"] == 100
    # job 8 waited for job 7's place and started the second it ended; nothing had ended at either submit
    assert summary["dispatch_s"] == {"n": 1, "sum": 0, "mean": 0, "median": 0, "p90": 0, "max": 0}
    assert summary["handoff_s"] == {"n": 0}
    assert summary["memory"]["ingest"] == {"peak_rss_mb": 150.5, "asked_mb": 2000}
    assert summary["memory"]["embed (grouped)"] == {"peak_rss_mb": 90, "asked_mb": 6144}  # named <group>_<rules>
    assert summary["by_kind"] == {"rule:ingest": 1, "group:embed_small_embed": 1}
    assert summary["status_rpcs"] == {"REQUEST_JOB_INFO": 30}
    assert json.dumps(summary, default=str)
