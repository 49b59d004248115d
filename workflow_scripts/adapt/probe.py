"""Declaration of the adapt stage (seed 003; methods.md §4): models the workflow trains. A stage laid
out like a probe (config section, schema, rules, resources; workflow_scripts/probes.py): no model runs
it as a probe, and its models are evaluated by every probe."""
from workflow_scripts.probes import Probe, Resources


def check(config: dict) -> list[str]:
    """Recipes (bases, data, a model evaluated on the questions it was fine-tuned on) and the probe
    datasets and corpora they name."""
    if not config.get("adapt"):
        return []
    from workflow_scripts.adapt.models import problems as recipe_problems
    from workflow_scripts.probes import declarations

    problems = recipe_problems(config)
    datasets = {d for p in declarations() for d in (config.get(p.name) or {}).get("datasets", {})}
    for name, recipe in (config["adapt"].get("recipes") or {}).items():
        for dataset in recipe.get("datasets", []):
            if dataset not in datasets:
                problems.append(f"config key `adapt.recipes.{name}.datasets`: no probe dataset named {dataset!r}")
        for corpus in recipe.get("corpora", []):
            if corpus not in config["corpora"]:
                problems.append(f"config key `adapt.recipes.{name}.corpora`: no corpus named {corpus!r}")
    return problems


def register_models(config: dict, results: str) -> None:
    """Each recipe becomes a model (family sentence_transformers, path <results>/models/<recipe>)
    before any probe plans its pairs, so every probe can evaluate it."""
    from workflow_scripts.adapt.models import register

    register(config, results)


PROBE = Probe(
    name="adapt",
    title="Domain adaptation",
    order=90,
    plan="workflow_scripts.adapt.plan:AdaptPlan",
    is_stage=True,
    rules={"adapt_train": Resources(threads=2, mem_mb=8000, runtime=240, heavy=True,
                                    per_job=("recipe", "adapt.recipes"))},
    check=check,
    prepare=register_models,
    added_models=lambda config: list(((config.get("adapt") or {}).get("recipes") or {})),
)
