"""Threads, memory and runtime from one place (workflow_scripts/rule_resources.py): declared
defaults, the config's `resources:`, a job's own entry, Snakemake's --set-* over all of them."""
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


class FakeRule:
    def __init__(self, name):
        self.name = name
        self.resources = {"_cores": 1, "gpu": "kept"}


def fake_workflow(rules, threads=None, resources=None):
    settings = SimpleNamespace(overwrite_threads=threads or {}, overwrite_resources=resources or {})
    return SimpleNamespace(rules=rules, resource_settings=settings)


def test_apply_leaves_the_command_line_and_rules_without_jobs():
    rules = [FakeRule("csc_score"), FakeRule("perturb"), FakeRule("all")]
    rule_resources.apply(fake_workflow(rules, threads={"perturb": 2},
                                       resources={"csc_score": {"mem_mb": 777}}),
                         {"resources": {"perturb": {"threads": 5}}})
    score, perturb, target = rules
    assert score.resources["gpu"] == "kept" and "mem_mb" not in score.resources  # --set-resources
    assert score.resources["runtime"](wildcards(), 1) == rule_resources.declared()["csc_score"].runtime
    assert perturb.resources["_cores"] == 1  # --set-threads perturb=2 is applied by Snakemake itself
    assert target.resources == {"_cores": 1, "gpu": "kept"}


@pytest.mark.parametrize("rule", ["embed", "perturb"])
def test_the_threads_of_a_plain_rule_are_a_value(rule):
    value = rule_resources.settings(rule, {"models": {"m": {}}})["threads"]
    assert (callable(value)) == (rule_resources.declared()[rule].per_job is not None)
