"""Adding an encoder family is one module (docs/adding-an-encoder.md): the toy family, read from that
page and added to a copy of the project, is found by the registry, checked by the config schema,
embeds a small retrieval study end to end, and the shared tests pass with it present, with no other
file edited."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workflow_runner import write_config

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "adding-an-encoder.md"


def documented_files() -> dict[str, str]:
    """The files the page's worked example shows: `<!-- file: path -->` and a fenced block."""
    text = PAGE.read_text(encoding="utf-8")
    return {path: body + "\n" for path, body in re.findall(r"^<!-- file: (\S+) -->\n```\w*\n(.*?)\n```$", text, re.M | re.S)}


def documented_entry() -> dict:
    """The page's model entry (its yaml block)."""
    import yaml
    block = re.search(r"^```yaml\n(.*?)\n```$", PAGE.read_text(encoding="utf-8"), re.M | re.S).group(1)
    return yaml.safe_load(block)["models"]


TOY_FILES = documented_files()


def project_files() -> list[str]:
    """The checkout's files as git sees them: tracked, and new ones it does not ignore."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split("\0")[:-1]
    return [name for name in out if (ROOT / name).is_file()]


@pytest.fixture(scope="module")
def toy_copy(tmp_path_factory):
    assert sorted(TOY_FILES) == ["workflow_scripts/encoders/letter_counts.py"]
    assert not any((ROOT / name).exists() for name in TOY_FILES)
    copy = tmp_path_factory.mktemp("family") / "repo"
    for name in project_files():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    if (ROOT.parent / "shared").is_dir():
        (copy.parent / "shared").symlink_to(ROOT.parent / "shared")
    for name, text in TOY_FILES.items():
        (copy / name).write_text(text)
    return copy


def in_copy(copy: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    proc = subprocess.run([sys.executable, *args], cwd=copy, capture_output=True, text=True, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stdout[-4000:] + proc.stderr[-6000:])
    return proc


def snakemake(copy: Path, workdir: Path, config: dict, *args: str, check: bool = True):
    path = write_config(workdir, config)
    return in_copy(copy, "-m", "snakemake", "-s", str(copy / "Snakefile"), "--directory", str(workdir),
                   "--cores", "2", *args, "--configfile", str(path), check=check)


def study(workdir: Path, models: dict) -> dict:
    return {"seed": 1, "embedding_partitions": 1, "results": str(workdir / "res"), "models": models,
            "retrieval": {"datasets": {"t": {"kind": "beir", "path": str(ROOT / "resources/retrieval/telecom_qa")}}}}


@pytest.mark.slow  # a retrieval study of two cheap models on the shipped 45-document set, then the shared tests
def test_a_toy_family_embeds_a_study_and_meets_the_shared_tests(toy_copy, tmp_path):
    entry = documented_entry()
    (name, spec), = entry.items()
    found = in_copy(toy_copy, "-c", "from workflow_scripts.encoders import families; print(list(families()))")
    assert spec["family"] in found.stdout
    snakemake(toy_copy, tmp_path, study(tmp_path, {**entry, "form": {"family": "surface_form"}}))
    store = tmp_path / "res" / "embeddings" / name / "retrieval.t" / "part-000"
    manifest = json.loads((store / "manifest.json").read_text())
    assert manifest["family"] == "letter_counts" and manifest["dim"] == len(spec["alphabet"])
    assert "toy family" in manifest["origin"] and "numpy" in manifest["software"]
    report = (tmp_path / "res" / "report.md").read_text()
    assert name in report
    # the family's own key is its alone, and its schema checks it
    refused = snakemake(toy_copy, tmp_path, study(tmp_path, {"h": {"family": "hashing", "alphabet": "ab"}}),
                        "--dry-run", check=False)
    assert refused.returncode != 0 and "for family letter_counts only" in refused.stdout + refused.stderr
    refused = snakemake(toy_copy, tmp_path, study(tmp_path, {name: {**spec, "alphabet": "A1"}}), "--dry-run", check=False)
    assert refused.returncode != 0 and f"models.{name}.alphabet" in refused.stdout + refused.stderr
    # the shared tests, run on the copy, cover the new family: none lists families by hand
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "tests/test_family_contract.py",
                           "tests/test_conventions.py", "tests/test_layers.py", "tests/test_code_digest.py",
                           "tests/test_config.py::test_every_constraint_of_every_schema_has_a_case_whose_message_is_checked"],
                          cwd=toy_copy, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    for test in ("test_each_family_declares_itself[letter_counts]", "test_no_shared_module_or_rule_names_a_family",
                 "test_discovering_the_families_imports_no_heavy_package"):
        assert re.search(rf"::{re.escape(test)} PASSED", proc.stdout), test
