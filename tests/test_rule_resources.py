"""Threads, memory and runtime from one place (workflow_scripts/rule_resources.py): declared
defaults, the config's `resources:`, a job's own entry, given to each rule's `threads:` and
`resources:` directives; Snakemake's --set-* over all of them."""
from types import SimpleNamespace

import pytest

from workflow_scripts import rule_resources
from workflow_scripts.probes import declared_rules


def wildcards(**values):
    return SimpleNamespace(**values)


def test_every_declared_rule_is_known_once():
    shared, probes = set(rule_resources.SHARED), set(declared_rules())
    assert not shared & probes
    assert set(rule_resources.declared()) == shared | probes
    assert set(rule_resources.ALIASES.values()) <= shared


def test_declared_default_then_config_then_the_attempt():
    decl = rule_resources.declared()["csc_score"]
    plain = rule_resources.settings("csc_score", {})
    assert plain["threads"] == decl.threads
    assert plain["mem_mb"](wildcards(), 1) == decl.mem_mb and plain["mem_mb"](wildcards(), 3) == 3 * decl.mem_mb
    configured = rule_resources.settings("csc_score", {"resources": {"csc_score": {"threads": 4, "runtime": 7}}})
    assert configured["threads"] == 4
    assert configured["runtime"](wildcards(), 2) == 14 and configured["mem_mb"](wildcards(), 1) == decl.mem_mb
    # an alias reads its declared rule's section: both download rules are `download`
    aliased = rule_resources.settings("download_model", {"resources": {"download": {"runtime": 5}}})
    assert aliased["runtime"](wildcards(), 1) == 5


def test_a_job_of_its_own_wins_over_the_rule():
    config = {"resources": {"embed": {"mem_mb": 100, "threads": 2}},
              "models": {"big": {"mem_mb": 9000, "threads": 4}, "small": {}}}
    s = rule_resources.settings("embed", config)
    assert s["threads"](wildcards(model="big")) == 4 and s["threads"](wildcards(model="small")) == 2
    assert s["mem_mb"](wildcards(model="big"), 2) == 18000 and s["mem_mb"](wildcards(model="small"), 2) == 200
    recipes = {"adapt": {"recipes": {"r": {"runtime": 3}}}}
    s = rule_resources.settings("adapt_train", recipes)
    assert s["runtime"](wildcards(recipe="r"), 2) == 6
    assert s["runtime"](wildcards(recipe="other"), 1) == rule_resources.declared()["adapt_train"].runtime


def test_the_directives_get_the_rules_settings():
    """What each rule's `threads:` and `resources:` directives are given (rules/common.smk)."""
    res = rule_resources.RuleResources({"resources": {"csc_score": {"threads": 3, "mem_mb": 10}}})
    assert res.threads("csc_score") == 3 and res.threads("csc_plot") == rule_resources.declared()["csc_plot"].threads
    sized = res.sized("csc_score")
    assert set(sized) == {"mem_mb", "runtime"}
    assert sized["mem_mb"](wildcards(), 2) == 20
    assert sized["runtime"](wildcards(), 1) == rule_resources.declared()["csc_score"].runtime


def test_snakemake_applies_them_and_its_command_line_wins(tmp_path):
    """A dry run of the CSC study: the declared values, the config's `resources:` and a model's own
    entry reach the jobs through the directives, and --set-threads / --set-resources win."""
    import re
    import yaml
    from workflow_runner import ROOT, snakemake, write_config
    config = yaml.safe_load((ROOT / "resources" / "csc" / "study.yaml").read_text())
    config["resources"] = {"csc_score": {"threads": 2, "runtime": 7}, "perturb": {"threads": 1}}
    config["models"]["tfidf"]["mem_mb"] = 1234
    for source in config["sources"].values():  # the study's paths are the checkout's
        source["path"] = str(ROOT / source["path"])
    out = snakemake(tmp_path, write_config(tmp_path, config), "--dry-run", "--set-threads", "perturb=2",
                    "--set-resources", "csc_score:mem_mb=777")
    jobs = {}
    for block in re.split(r"\n(?=\s*(?:local)?rule \w+:)", out.stdout):  # a group's jobs are indented
        rule = re.match(r"(?:local)?rule (\w+):", block.strip())
        if rule and rule.group(1) != "all":
            threads = re.search(r"^\s*threads: (\d+)$", block, re.M)
            resources = dict(re.findall(r"(mem_mb|runtime)=(\d+)", block))
            jobs[rule.group(1)] = (int(threads.group(1)) if threads else 1, int(resources["mem_mb"]),
                                   int(resources["runtime"]))
    declared = rule_resources.declared()
    assert jobs["perturb"] == (2, declared["perturb"].mem_mb, declared["perturb"].runtime)  # --set-threads
    assert jobs["csc_score"] == (2, 777, 7)  # config threads and runtime, --set-resources memory
    assert jobs["embed"] == (1, 1234, declared["embed"].runtime)  # the model's own memory
    assert jobs["csc_plot"] == (declared["csc_plot"].threads, declared["csc_plot"].mem_mb, declared["csc_plot"].runtime)


@pytest.mark.parametrize("rule", ["embed", "perturb"])
def test_the_threads_of_a_plain_rule_are_a_value(rule):
    value = rule_resources.settings(rule, {"models": {"m": {}}})["threads"]
    assert (callable(value)) == (rule_resources.declared()[rule].per_job is not None)
