"""Project conventions that CI should keep: rule declarations, pinned environments, atomic outputs."""
import re
from pathlib import Path

import pytest
import yaml

from workflow_scripts.common import atomic_path

from workflow_scripts import rule_resources
from workflow_scripts.probes import declarations
from conftest import requires_shared

ROOT = Path(__file__).resolve().parents[1]
# The shared stages: a rule file and a module (or a package of modules) each. Every probe (and stage laid out like one) declares
# itself and its rules in its package (workflow_scripts/<name>/probe.py): no list of probes is kept here.
SHARED_STAGES = {"nltk_data", "ingest", "length_filter", "embed", "report", "articles", "disagreements",
                 "differences"}
DECLARED = {p.name for p in declarations()}
# rules that must declare `benchmark:`: the heavy ones, as the shared stages and the probes declare them
HEAVY = {rule for rule, r in rule_resources.declared().items() if r.heavy}


def rule_blocks():
    for path in sorted((ROOT / "rules").glob("*.smk")):
        text = path.read_text()
        for m in re.finditer(r"^rule (\w+):\n(.*?)(?=^rule |^def |^\S|\Z)", text, re.M | re.S):
            yield path.name, m.group(1), m.group(2)


def directives(body: str) -> dict[str, str]:
    """A rule body's directives (`input`, `resources`, ...) and their text, by 4-space indentation."""
    parts = re.split(r"^    (\w+):", body, flags=re.M)
    return {name: value.strip() for name, value in zip(parts[1::2], parts[2::2])}


def test_directives_are_parsed_per_rule():
    body = "    input: a\n    resources:\n        mem_mb=1,\n        runtime=2,\n    threads: 1\n    shell: 'x mem_mb'\n"
    d = directives(body)
    assert set(d) == {"input", "resources", "threads", "shell"}
    assert d["resources"] == "mem_mb=1,\n        runtime=2,"


def test_one_rule_file_per_stage_and_probe():
    """The probe contract's layout: a shared stage is a rule file and a module; a probe is a rule
    file with exactly the rules it declares, a package of its own with its declaration, planner and
    schema, and a config section of its name."""
    stages = {p.stem for p in (ROOT / "rules").glob("*.smk")} - {"common"}
    assert stages == SHARED_STAGES | DECLARED
    for stage in SHARED_STAGES:  # a module, or a package of modules (workflow_scripts/report/)
        assert ((ROOT / "workflow_scripts" / f"{stage}.py").exists()
                or (ROOT / "workflow_scripts" / stage / "__init__.py").exists()), stage
    from workflow_scripts.config import load_schema
    schema = load_schema()
    for probe in declarations():
        package = ROOT / "workflow_scripts" / probe.name
        assert (package / "__init__.py").exists() and probe.schema_path.exists()
        assert not (ROOT / "workflow_scripts" / f"{probe.name}.py").exists()
        assert probe.name in schema["properties"], f"probe {probe.name} has no config section"
        assert probe.planner().__module__ == f"workflow_scripts.{probe.name}.plan"
        rule_file = (ROOT / "rules" / f"{probe.name}.smk").read_text()
        assert set(re.findall(r"^rule (\w+):", rule_file, re.M)) == set(probe.rules), probe.name
        assert set(probe.rules) <= set(schema["properties"]["resources"]["propertyNames"]["enum"]), probe.name
        assert f"workflow_scripts/{probe.name}/" in rule_file
    assert (ROOT / "Snakefile").read_text().count("include: \"rules/") == len(SHARED_STAGES | DECLARED) + 1


@pytest.mark.parametrize("file,rule,body", list(rule_blocks()), ids=lambda v: v if isinstance(v, str) and "\n" not in v else "")
def test_rule_declares_log_resources_and_env(file, rule, body):
    d = directives(body)
    assert d.get("log"), f"{rule}: no log"
    # threads, memory and runtime come from the declarations through one mechanism
    # (workflow_scripts/rule_resources.py), given to Snakemake's own directives under the rule's name,
    # never written in the rule
    assert rule_resources.ALIASES.get(rule, rule) in rule_resources.declared(), f"{rule}: no declared resources"
    assert d.get("threads") == f'RESOURCES.threads("{rule}")', f"{rule}: threads {d.get('threads')!r}"
    assert d.get("resources", "").startswith(f'**RESOURCES.sized("{rule}"),'), f"{rule}: resources"
    declared = dict(re.findall(r"(\w+)=([^,\n]+)", d.get("resources", "")))
    assert not {"mem_mb", "runtime"} & set(declared), f"{rule}: memory or runtime set in the rule"
    assert all(v.strip() for v in declared.values()), f"{rule}: empty resource value"
    assert d.get("conda"), f"{rule}: no conda env"
    if rule in HEAVY:
        assert d.get("benchmark"), f"{rule}: heavy rule without benchmark"
    if rule in ("embed", "adapt_train"):
        assert "gpu" in declared, f"{rule}: jobs that may run on a GPU must declare gpu"


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


def test_the_snakefile_asks_for_the_pinned_snakemake():
    """min_version names the Snakemake the environment pins, the one the workflow is tested with: an
    older one stops at the start, naming the version, instead of failing half-way on an attribute."""
    pinned = re.search(r"^snakemake==([\d.]+)$", (ROOT / "envs" / "requirements.txt").read_text(), re.M).group(1)
    snakefile = (ROOT / "Snakefile").read_text()
    assert re.findall(r'^min_version\("([\d.]+)"\)$', snakefile, re.M) == [pinned]
    assert snakefile.index("min_version(") < snakefile.index('\ninclude: "')


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


# plans the default config, whose CSC negation needs NLTK's tagger and WordNet (../shared/data/nltk_data)
@requires_shared("nltk_data")
def test_snakemake_lint_is_clean():
    """The catalog's habits: input functions in rules/common.smk, non-file values through params."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "snakemake", "--lint", "-s", str(ROOT / "Snakefile"),
                          "--directory", str(ROOT)], capture_output=True, text=True)
    text = out.stdout + out.stderr
    assert "Congratulations, your workflow is in a good condition!" in text, text[-3000:]


def test_snakefmt_check_is_clean():
    """The catalog's second check: Snakefile and rules/ as snakefmt formats them."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "snakefmt", "--check", "Snakefile", "rules"], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]


# User tools with an argparse command line of their own (the Makefile's, the docs'); every other
# module's code runs as a job
COMMAND_LINE_TOOLS = {"plan_summary.py", "throughput.py", "report/console.py", "montague/static_vectors.py"}


@pytest.mark.parametrize("file,rule,body", list(rule_blocks()), ids=lambda v: v if isinstance(v, str) and "\n" not in v else "")
def test_a_rule_runs_a_function(file, rule, body):
    """A job is a function (workflow_scripts/jobs.py): the rule's script is run_job.py, its params
    start with `**job_params("<module>:run_<rule>")` (the function, of an existing module, and the
    digest of its code: workflow_scripts/code_digest.py), and no shell command or `run:` block."""
    from workflow_scripts.jobs import resolve
    d = directives(body)
    assert d.get("script") == '"../workflow_scripts/run_job.py"', f"{rule}: script is {d.get('script')!r}"
    assert not {"shell", "run", "wrapper", "notebook"} & set(d), f"{rule}: {sorted(d)}"
    named = re.match(r'\*\*job_params\("([\w.]+):(\w+)"\),(\n|$)', d.get("params", ""))
    assert named and named.group(2) == f"run_{rule}", f"{rule}: params start {d.get('params', '')[:60]!r}"
    assert not re.search(r"^\s*(function|code)=", d["params"], re.M), f"{rule}: function or code set by hand"
    assert callable(resolve(f"{named.group(1)}:{named.group(2)}"))


def test_no_job_module_parses_a_command_line():
    """Rules pass inputs, outputs and params to functions: no module they run keeps an argparse main
    (the user tools listed above keep theirs)."""
    package = ROOT / "workflow_scripts"
    with_cli = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                      if re.search(r"^import argparse|^from argparse", p.read_text(), re.M))
    assert set(with_cli) <= COMMAND_LINE_TOOLS, set(with_cli) - COMMAND_LINE_TOOLS
