"""Project conventions that CI should keep: rule declarations, pinned environments, atomic outputs."""
import re
from pathlib import Path

import pytest
import yaml

from workflow_scripts.common import atomic_path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {"ingest", "derive_corpus", "perturb", "fit_tfidf", "embed", "csc_score"}


def rule_blocks():
    for path in sorted((ROOT / "rules").glob("*.smk")):
        text = path.read_text()
        for m in re.finditer(r"^rule (\w+):\n(.*?)(?=^rule |^def |\Z)", text, re.M | re.S):
            yield path.name, m.group(1), m.group(2)


def test_one_rule_file_per_stage_and_module():
    stages = {p.stem for p in (ROOT / "rules").glob("*.smk")} - {"common"}
    assert stages == {"ingest", "length_filter", "perturb", "embed", "csc"}
    for stage in stages:
        assert (ROOT / "workflow_scripts" / f"{stage}.py").exists()


@pytest.mark.parametrize("file,rule,body", list(rule_blocks()), ids=lambda v: v if isinstance(v, str) and "\n" not in v else "")
def test_rule_declares_log_resources_and_env(file, rule, body):
    assert re.search(r"^\s+log:", body, re.M), f"{rule}: no log"
    assert re.search(r"^\s+threads:", body, re.M), f"{rule}: no threads"
    resources = re.search(r"^\s+resources:(.*?)(?=^\s+\w+:\s|\Z)", body, re.M | re.S)
    assert resources and "mem_mb" in body and "runtime" in body, f"{rule}: resources incomplete"
    assert re.search(r"^\s+conda:", body, re.M), f"{rule}: no conda env"
    if rule in HEAVY:
        assert re.search(r"^\s+benchmark:", body, re.M), f"{rule}: heavy rule without benchmark"
    if rule == "embed":
        assert "gpu=" in body


def test_conda_env_pins_what_requirements_pin():
    pins = {l.strip().lower() for l in (ROOT / "envs" / "requirements.txt").read_text().splitlines()
            if l.strip() and not l.startswith("#")}
    env = yaml.safe_load((ROOT / "envs" / "workflow.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert {p.lower() for p in pip} == pins
    assert all("==" in p for p in pins), "every requirement is pinned"
    assert "torch==2.13.0" in pins
    python = [d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python")]
    assert python == ["python=3.11"]


def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert not target.exists() and list(tmp_path.iterdir()) == []
    with atomic_path(tmp_path / "d", is_dir=True) as tmp:
        (tmp / "f").write_text("x")
    assert (tmp_path / "d" / "f").read_text() == "x" and len(list(tmp_path.iterdir())) == 1
