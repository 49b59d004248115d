"""Adapt recipes -> model entries, and each recipe's training plan (what its job needs and does).

A recipe (`adapt.recipes.<name>`) adapts a base model by steps run in order: `pt` (continued MLM
pre-training), `ft` (contrastive fine-tuning), `merge` (weight averaging). It becomes the model
`<name>` (family sentence_transformers, path <results>/models/<name>) before the probes plan their
jobs, so every probe evaluates it like any other model. A recipe's base may itself be a recipe
(PT-FT: fine-tune the PT model), so recipes are registered in dependency order.

The seed paper published no hyper-parameters: every value in DEFAULTS is ours (schema.yaml names
them in its descriptions).
"""
from __future__ import annotations

import copy

from workflow_scripts.encoders import families, family_of, trained_family

DEFAULTS = {
    "pt": {"max_texts": None, "mask_rate": 0.15, "epochs": 1, "max_steps": None, "learning_rate": 5e-5,
           "batch_size": 16, "max_length": 128, "warmup_ratio": 0.0, "weight_decay": 0.01, "save_steps": 50},
    "ft": {"split": "train", "loss": "mnrl", "negatives": "mined", "epochs": 1, "max_steps": None,
           "learning_rate": 2e-5, "batch_size": 16, "max_length": 128, "warmup_ratio": 0.1, "weight_decay": 0.01,
           "save_steps": 50,
           "hard_negatives": {"num_negatives": 1, "range_min": 0, "range_max": None, "relative_margin": 0.05,
                              "sampling": "top"}},
    "merge": {"weight": 0.5},
}
# recipe keys that pass to the model entry as they are (how its embedding jobs run and what they score)
MODEL_KEYS = ("probes", "datasets", "corpora", "gpu_model")


def recipes(config: dict) -> dict:
    return (config.get("adapt") or {}).get("recipes", {})


def order(config: dict) -> list[str]:
    """Recipe names so that a recipe comes after the recipe it adapts (its base, its merge partner)."""
    recs, done, out = recipes(config), set(), []

    def visit(name, path):
        if name in done or name not in recs:
            return
        if name in path:
            raise ValueError(f"config key `adapt.recipes.{name}`: recipes adapt each other in a cycle ({' -> '.join(path + [name])})")
        for dep in (recs[name]["base"], (recs[name].get("merge") or {}).get("with")):
            if dep:
                visit(dep, path + [name])
        done.add(name)
        out.append(name)

    for name in recs:
        visit(name, [])
    return out


def root_base(config: dict, name: str) -> str:
    """The configured (not trained) model a recipe's chain of bases starts from."""
    recs = recipes(config)
    while name in recs:
        name = recs[name]["base"]
    return name


def resolved(config: dict, name: str) -> dict:
    """The recipe with every default filled in (steps that are not run keep no block)."""
    spec = copy.deepcopy(recipes(config)[name])
    for step in ("pt", "ft", "merge"):
        if step not in spec["steps"]:
            spec.pop(step, None)
            continue
        block = {**copy.deepcopy(DEFAULTS[step]), **(spec.get(step) or {})}
        if step == "ft":
            block["hard_negatives"] = {**DEFAULTS["ft"]["hard_negatives"], **((spec.get("ft") or {}).get("hard_negatives") or {})}
        spec[step] = block
    first_set = next(iter((config.get("retrieval") or {}).get("datasets", {})), None)
    if "pt" in spec and not spec["pt"].get("corpus") and not spec["pt"].get("retrieval"):
        spec["pt"]["retrieval"] = first_set
    if "ft" in spec and not spec["ft"].get("retrieval"):
        spec["ft"]["retrieval"] = first_set
    if "merge" in spec and not spec["merge"].get("with"):
        spec["merge"]["with"] = root_base(config, name)
    spec.setdefault("seed", config["seed"])
    spec.setdefault("device", "auto")
    spec.setdefault("deterministic", False)
    return spec


def register(config: dict, results: str) -> dict:
    """Add a model entry per recipe to config["models"] (in place; returned for convenience)."""
    for name in order(config):
        spec = resolved(config, name)
        base = config["models"][spec["base"]]
        entry = {"family": trained_family(), "path": f"{results}/models/{name}", "device": spec["device"],
                 "precision": "fp32", "batch_size": spec.get("batch_size", base.get("batch_size", 32)),
                 # what made it: part of the embedding jobs' spec, so a changed recipe reruns them
                 "adapted": {"recipe": name, "base": spec["base"], "steps": spec["steps"]}}
        if base.get("max_length"):
            entry["max_length"] = base["max_length"]
        entry.update({k: spec[k] for k in MODEL_KEYS if k in spec})
        config["models"][name] = entry
    return config


def problems(config: dict) -> list[str]:
    """What the schema cannot check about the recipes (config.py calls this before registration)."""
    out = []
    recs, models = recipes(config), config["models"]
    retrieval = (config.get("retrieval") or {}).get("datasets", {})
    known = set(models) | set(recs)
    for name, r in recs.items():
        key = f"adapt.recipes.{name}"
        if name in models:
            out.append(f"config key `{key}`: a model of that name exists; a recipe names the model it makes, so use another name")
        if r["base"] not in known:
            out.append(f"config key `{key}.base`: no model or recipe named {r['base']!r}")
        elif r["base"] in models and not family_of(models[r["base"]]).trainable:
            trainable = [f.name for f in families().values() if f.trainable]
            out.append(f"config key `{key}.base`: model {r['base']!r} is of family {models[r['base']]['family']!r}; expected one "
                       f"of {', '.join(trainable)} (a trainable transformer)")
        elif r["base"] in models and models[r["base"]].get("gguf_file"):
            out.append(f"config key `{key}.base`: model {r['base']!r} is a GGUF file; expected a trainable transformer")
        other = (r.get("merge") or {}).get("with")
        if other is not None and other not in known:
            out.append(f"config key `{key}.merge.with`: no model or recipe named {other!r}")
        if r["steps"][0] == "merge" and r["base"] in known and (other or _root(recs, r["base"])) == r["base"]:
            out.append(f"config key `{key}.steps`: merging the base model with itself changes nothing; put pt or ft before merge "
                       "or name another model in merge.with")
        for step, block in (("pt", r.get("pt")), ("ft", r.get("ft")), ("merge", r.get("merge"))):
            if block is not None and step not in r["steps"]:
                out.append(f"config key `{key}.{step}`: settings for a step the recipe does not run (steps: {r['steps']})")
        pt, ft = r.get("pt") or {}, r.get("ft") or {}
        if "pt" in r["steps"] and pt.get("corpus") and pt["corpus"] not in config["corpora"]:
            out.append(f"config key `{key}.pt.corpus`: no corpus named {pt['corpus']!r}")
        negatives = ft.get("negatives", DEFAULTS["ft"]["negatives"])
        per_row = (ft.get("hard_negatives") or {}).get("num_negatives", DEFAULTS["ft"]["hard_negatives"]["num_negatives"])
        if "ft" in r["steps"] and negatives != "mined" and per_row == 0:
            out.append(f"config key `{key}.ft.hard_negatives.num_negatives`: 0 gives no negatives, but `ft.negatives: "
                       f"{negatives}` trains on a number of wrong answers per question; set it to 1 or more")
        for step, block in (("pt", pt), ("ft", ft)):
            if step not in r["steps"]:
                continue
            want = block.get("retrieval")
            if want is None and not (step == "pt" and block.get("corpus")):
                if not retrieval:
                    out.append(f"config key `{key}.{step}.retrieval`: no retrieval set is configured to train on; name one")
            elif want is not None and want not in retrieval:
                out.append(f"config key `{key}.{step}.retrieval`: no retrieval set named {want!r} (configured: {sorted(retrieval)})")
                continue
            trained = want if want is not None else next(iter(retrieval), None)
            if step == "ft" and negatives != "mined" and trained is not None:
                spec = retrieval[trained]
                if spec.get("kind") != "3gpp" or "teleqna" not in (spec.get("questions") or ["templates"]):
                    out.append(f"config key `{key}.ft.negatives`: `{negatives}` trains on the questions' wrong answers, "
                               f"which only TeleQnA questions have (a 3gpp retrieval set with `questions: [..., "
                               f"teleqna]`); retrieval set {trained!r} has none")
        for probe in r.get("probes", []):
            if probe not in _probe_names():
                out.append(f"config key `{key}.probes`: no probe named {probe!r}")
    if out:
        return out
    try:
        order(config)
    except ValueError as err:
        return [str(err)]
    out += _leak_problems(config)
    return out


def _root(recs: dict, name: str) -> str:
    seen = set()
    while name in recs and name not in seen:
        seen.add(name)
        name = recs[name]["base"]
    return name


def _probe_names() -> list[str]:
    from workflow_scripts.probes import probe_names
    return probe_names()


def trained_on(config: dict, name: str) -> set[tuple[str, str]]:
    """(retrieval set, split) pairs whose questions a recipe's model has seen: its own ft step and its
    bases' (a merge partner that is a recipe counts too)."""
    recs, seen, todo = recipes(config), set(), [name]
    while todo:
        current = todo.pop()
        if current not in recs:
            continue
        spec = resolved(config, current)
        if "ft" in spec:
            seen.add((spec["ft"]["retrieval"], spec["ft"]["split"]))
        todo.append(spec["base"])
        if "merge" in spec:
            todo.append(spec["merge"]["with"])
    return seen


def _leak_problems(config: dict) -> list[str]:
    """A model fine-tuned on a split's questions must not be evaluated on those questions."""
    out = []
    retrieval = config.get("retrieval") or {}
    for name, r in recipes(config).items():
        if "retrieval" not in r.get("probes", ["retrieval"]):
            continue
        for dataset, split in sorted(trained_on(config, name)):
            if r.get("datasets") is not None and dataset not in r["datasets"]:
                continue
            spec = retrieval["datasets"][dataset]
            evaluated = spec.get("eval_split", retrieval.get("eval_split", "test"))
            evaluated = [evaluated] if isinstance(evaluated, str) else evaluated
            if split in evaluated:
                out.append(f"config key `adapt.recipes.{name}.datasets`: the model is fine-tuned on the {split!r} "
                           f"questions of retrieval set {dataset!r}, which the retrieval probe evaluates "
                           f"(eval_split {evaluated}); leave {dataset!r} out of the recipe's `datasets` or evaluate "
                           "another split")
    return out


def plan(config: dict, name: str, results: str) -> dict:
    """Everything the training job computes from: the resolved recipe, the base model's and the merge
    partner's specs, the data it reads. A param of the job: any change retrains."""
    from workflow_scripts.common import vector_settings

    spec = resolved(config, name)
    models = config["models"]

    def model_spec(model):
        return {"model": model, **vector_settings(models[model])}

    out = {"recipe": name, "steps": spec["steps"], "seed": spec["seed"], "deterministic": spec["deterministic"],
           "base": model_spec(spec["base"])}
    if "pt" in spec:
        pt = dict(spec["pt"])
        pt["data"] = ({"kind": "corpus", "name": pt["corpus"], "path": f"{results}/corpora/{pt['corpus']}"}
                      if pt.get("corpus") else
                      {"kind": "retrieval", "name": pt["retrieval"], "path": f"{results}/retrieval/sets/{pt['retrieval']}"})
        pt.pop("corpus", None)
        pt.pop("retrieval", None)
        out["pt"] = pt
    if "ft" in spec:
        ft = dict(spec["ft"])
        ft["data"] = {"kind": "retrieval", "name": ft.pop("retrieval"), "path": f"{results}/retrieval/sets/{spec['ft']['retrieval']}"}
        out["ft"] = ft
    if "merge" in spec:
        out["merge"] = {"weight": spec["merge"]["weight"], "with": model_spec(spec["merge"]["with"])}
    return out


def inputs(config: dict, name: str, results: str) -> dict:
    """The training job's input files: its data, and the directories of models it reads that the
    workflow trains (a configured model's files are not the workflow's to track)."""
    p = plan(config, name, results)
    out = {}
    for step in ("pt", "ft"):
        if step in p:
            out[f"{step}_data"] = p[step]["data"]["path"]
    for key, model in (("base", p["base"]), ("merge_with", (p.get("merge") or {}).get("with"))):
        if model and model.get("adapted"):
            out[key] = model["path"]
    return out


def adaptation(config: dict, name: str) -> str:
    """How a model was made from its root base: `base`, or the steps along its chain of recipes,
    e.g. PT, FT, PT-FT, FT-merge."""
    recs, steps = recipes(config), []
    while name in recs:
        steps = list(recs[name]["steps"]) + steps
        name = recs[name]["base"]
    return "-".join(s.upper() if s != "merge" else s for s in steps) or "base"
