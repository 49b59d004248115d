"""One bad config per constraint of the `adapt` and `domain_shift` schemas (workflow_scripts/adapt/
schema.yaml, workflow_scripts/domain_shift/schema.yaml), generated from the schemas themselves:
each breaks exactly one constraint of the default config.yaml with the adapt study's recipes
(resources/configs/study_adapt.yaml; the default config has none), and its message must name the
key. Every case's first edit sets those recipes, so that tests/test_config.py, which applies the
edits to config.yaml, can add ADAPT_SCHEMA_CASES to its SCHEMA_CASES: `test_every_schema_constraint_has_a_case`
covers these sections too."""
import copy
from pathlib import Path

import pytest
import yaml

from workflow_scripts.config import ConfigError, validate

ROOT = Path(__file__).resolve().parents[1]
# the adapt study's recipes, on the default config: they train on and are evaluated by its sets
RECIPES = yaml.safe_load((ROOT / "resources" / "configs" / "study_adapt.yaml").read_text())["adapt"]
WITH_RECIPES = [(("adapt",), RECIPES)]
DEFAULT = {**yaml.safe_load((ROOT / "config.yaml").read_text()), "adapt": RECIPES}
CONSTRAINTS = {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern", "enum", "minItems",
               "uniqueItems", "minProperties", "minLength", "required", "oneOf", "not"}


def _schema(name):
    return yaml.safe_load((ROOT / "workflow_scripts" / name / "schema.yaml").read_text())


def _wrong_type(node):
    kinds = node["type"] if isinstance(node["type"], list) else [node["type"]]
    for value in ({"x": 1}, "x", 1.5, True, []):
        if not any((k == "object" and isinstance(value, dict)) or (k == "string" and isinstance(value, str))
                   or (k in ("number",) and isinstance(value, float)) or (k == "boolean" and isinstance(value, bool))
                   or (k == "array" and isinstance(value, list)) for k in kinds):
            return value
    raise AssertionError(node)


def _bad_value(kind, node, current):
    """A value breaking `kind` of `node` (the schema of the key), or None when the key's value is not
    the thing to change (handled by the caller)."""
    if kind == "type":
        return _wrong_type(node)
    if kind == "minimum":
        return node["minimum"] - 1
    if kind == "exclusiveMinimum":
        return node["exclusiveMinimum"]
    if kind == "maximum":
        return node["maximum"] + 1
    if kind == "exclusiveMaximum":
        return node["exclusiveMaximum"]
    if kind == "pattern":
        return "-bad"
    if kind == "minLength":
        return ""
    if kind == "enum":
        return "nope"
    if kind == "minItems":
        return []
    if kind == "uniqueItems":
        return [current[0], current[0]]
    if kind == "minProperties":
        return {}
    raise AssertionError(kind)


def _resolve(node, root):
    if "$ref" in node and node["$ref"].startswith("#/properties/"):
        target = {"properties": {"adapt": _schema("adapt"), "domain_shift": _schema("domain_shift")}}
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


NAME = {"type": "string", "pattern": "^[A-Za-z0-9]"}  # the shared $defs/name: type and pattern


def cases():
    """(id, edits, fragment) for every constraint: edits are (path, value) pairs on config.yaml."""
    out = []

    def host(path, prop):
        """The default config's entry a constraint below `path` is tried on."""
        if path == ("adapt", "recipes"):
            return {"pt": "minilm_pt", "merge": "minilm_ft_merged"}.get(prop, "minilm_ft")
        if path == ("domain_shift", "datasets"):
            return "telecom_general"
        raise AssertionError(path)

    def get(path):
        node = DEFAULT
        for key in path:
            node = node[key] if isinstance(node, dict) else node[key]
        return node

    def current_or(path, default):
        try:
            return get(path)
        except (KeyError, IndexError, TypeError):
            return default

    def set_item(list_path, item_edit):
        """Edit item 0 of a list: the whole list is replaced (test_config's `changed` walks dicts)."""
        items = copy.deepcopy(current_or(list_path, []))
        items[0] = item_edit(copy.deepcopy(items[0]))
        return [(list_path, items)]

    def walk(node, path, sid, item_of=None):
        node = _resolve(node, None)
        if "$ref" in node:  # the shared $defs/name
            node = {**NAME, **{k: v for k, v in node.items() if k != "$ref"}}
        where = ".".join(map(str, path))
        for kind in sorted(CONSTRAINTS & set(node)):
            cid = f"{sid}_{kind}"
            if kind == "required":
                parent = current_or(path, {})
                value = {k: v for k, v in parent.items() if k not in node["required"]}
                edits = [(path, value)]
            elif kind == "oneOf":
                edits = set_item(item_of, lambda item: {}) if item_of else [(path, {})]
            elif kind == "not":
                edits = [(path, {"corpus": "pc_en", "retrieval": "specs_sample"})]
            elif item_of is not None:  # a property of a list item
                bad = _bad_value(kind, node, current_or(path, ["documents"]))
                edits = set_item(item_of, lambda item, k=path[-1], b=bad: {**item, k: b})
            elif path[-1] == "items_0":  # a list's item value (steps, parts)
                edits = [(path[:-1], [_bad_value(kind, node, None)])]
                where = ".".join(map(str, path[:-1])) + ".0"
            else:
                edits = [(path, _bad_value(kind, node, current_or(path, ["pt"])))]
            out.append((cid, edits, f"config key `{where}`"))
        if node.get("additionalProperties") is False:
            extra = path + ("zz_unknown",)
            if item_of is not None:
                edits = set_item(item_of, lambda item: {**item, "zz_unknown": 1})
            else:
                edits = [(extra, 1)]
            out.append((f"{sid}_additionalProperties", edits, f"config key `{where}`"))
        for name, sub in (node.get("properties") or {}).items():
            if item_of is not None:
                walk(sub, path + (name,), f"{sid}_{name}", item_of=item_of)
            else:
                walk(sub, path + (name,), f"{sid}_{name}")
        if isinstance(node.get("additionalProperties"), dict):
            sub = node["additionalProperties"]
            key = host(path, None)
            walk_entries(sub, path, sid)
        if isinstance(node.get("propertyNames"), dict):
            pn = _resolve(node["propertyNames"], None)
            pn = {**NAME, **{k: v for k, v in pn.items() if k != "$ref"}} if "$ref" in pn else pn
            entry = current_or(path + (host(path, None),), {})
            out.append((f"{sid}_name_pattern", [(path + ("-bad",), entry)], f"config key `{where}.-bad`"))
            out.append((f"{sid}_name_type", [(path + (1,), entry)], f"config key `{where}.1`"))
        if isinstance(node.get("items"), dict):
            sub = _resolve(node["items"], None)
            if sub.get("type") == "object":
                walk_item(sub, path, sid)
            else:
                walk(sub, path + ("items_0",), f"{sid}_item")

    def walk_entries(sub, path, sid):
        """additionalProperties of a mapping: each property is tried on the entry that has it."""
        sub = _resolve(sub, None)
        base = host(path, None)
        shallow = {k: v for k, v in sub.items() if k != "properties"}
        walk(shallow, path + (base,), f"{sid}_entry")
        for name, prop in (sub.get("properties") or {}).items():
            walk(prop, path + (host(path, name), name), f"{sid}_entry_{name}")

    def walk_item(sub, list_path, sid):
        where = ".".join(map(str, list_path)) + ".0"
        for kind in sorted(CONSTRAINTS & set(sub)):
            if kind == "oneOf":
                out.append((f"{sid}_item_oneOf", set_item(list_path, lambda item: {}), f"config key `{where}`"))
            elif kind == "type":
                out.append((f"{sid}_item_type", [(list_path, ["x"])], f"config key `{where}`"))
        if sub.get("additionalProperties") is False:
            out.append((f"{sid}_item_additionalProperties", set_item(list_path, lambda item: {**item, "zz": 1}),
                        f"config key `{where}`"))
        for name, prop in sub["properties"].items():
            prop = _resolve(prop, None)
            for kind in sorted(CONSTRAINTS & set(prop)):
                bad = _bad_value(kind, prop, ["documents"])
                out.append((f"{sid}_item_{name}_{kind}", set_item(list_path, lambda item, n=name, b=bad: {**item, n: b}),
                            f"config key `{where}.{name}`"))
            if isinstance(prop.get("items"), dict):
                for kind in sorted(CONSTRAINTS & set(prop["items"])):
                    bad = _bad_value(kind, prop["items"], None)
                    out.append((f"{sid}_item_{name}_item_{kind}",
                                set_item(list_path, lambda item, n=name, b=bad: {**item, n: [b]}),
                                f"config key `{where}.{name}.0`"))

    for section in ("adapt", "domain_shift"):
        schema = _schema(section)
        walk(schema, (section,), section)
    return [(cid, WITH_RECIPES + edits, fragment) for cid, edits, fragment in out]


ADAPT_SCHEMA_CASES = cases()


def _changed(edits):
    cfg = copy.deepcopy(DEFAULT)
    for path, value in edits:
        node = cfg
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = copy.deepcopy(value)  # WITH_RECIPES is shared by every case
    return cfg


def test_the_ft_negatives_enum_has_a_case():
    ids = {i: (e, f) for i, e, f in ADAPT_SCHEMA_CASES}
    edits, fragment = ids["adapt_recipes_entry_ft_negatives_enum"]
    assert edits == WITH_RECIPES + [(("adapt", "recipes", "minilm_ft", "ft", "negatives"), "nope")]
    with pytest.raises(ConfigError) as err:
        validate(_changed(edits))
    assert fragment in str(err.value) and "mined" in str(err.value)


# tests/test_config.py runs every case (and checks that each constraint has one); here a sample, to
# check the generator itself quickly
@pytest.mark.parametrize("edits,fragment", [pytest.param(e, f, id=i) for i, e, f in ADAPT_SCHEMA_CASES[::8]])
def test_each_constraint_is_refused_naming_the_key(edits, fragment):
    with pytest.raises(ConfigError) as err:
        validate(_changed(edits))
    assert fragment in str(err.value)


# Cross-checks of config.py (_adapt_problems, workflow_scripts/adapt/models.py problems): added to
# tests/test_config.py's REFERENCE_CASES. (id, edits, fragment) on config.yaml; the recipes are set
# first (below the list).
R_ = ("adapt", "recipes")
_FT = DEFAULT["adapt"]["recipes"]["minilm_ft"]
_DS = ("domain_shift", "datasets", "telecom_general")
ADAPT_REFERENCE_CASES = [
    ("adapt_trained_on_evaluated_questions", [(R_ + ("minilm_ft",), {k: v for k, v in _FT.items() if k != "datasets"})],
     "config key `adapt.recipes.minilm_ft.datasets`: the model is fine-tuned on the 'train' questions of retrieval set "
     "'specs_sample', which the retrieval probe evaluates"),
    ("adapt_base_not_trainable", [(R_ + ("minilm_ft", "base"), "tfidf")],
     "config key `adapt.recipes.minilm_ft.base`: model 'tfidf' is of family 'tfidf'; expected one of"),
    ("adapt_base_unknown", [(R_ + ("minilm_ft", "base"), "nope")],
     "config key `adapt.recipes.minilm_ft.base`: no model or recipe named 'nope'"),
    ("adapt_name_taken", [(R_ + ("minilm",), {"base": "minilm", "steps": ["pt"]})],
     "config key `adapt.recipes.minilm`: a model of that name exists"),
    ("adapt_unknown_set", [(R_ + ("minilm_ft", "ft", "retrieval"), "nope")],
     "config key `adapt.recipes.minilm_ft.ft.retrieval`: no retrieval set named 'nope'"),
    ("adapt_settings_of_a_step_not_run", [(R_ + ("minilm_ft", "pt"), {"mask_rate": 0.2})],
     "config key `adapt.recipes.minilm_ft.pt`: settings for a step the recipe does not run"),
    ("adapt_merge_with_itself", [(R_ + ("minilm_ft_merged", "merge", "with"), "minilm_ft")],
     "config key `adapt.recipes.minilm_ft_merged.steps`: merging the base model with itself changes nothing"),
    ("adapt_cycle", [(R_ + ("minilm_pt", "base"), "minilm_ptft")], "recipes adapt each other in a cycle"),
    ("adapt_unknown_dataset", [(R_ + ("minilm_pt", "datasets"), ["nope"])],
     "config key `adapt.recipes.minilm_pt.datasets`: no probe dataset named 'nope'"),
    ("adapt_unknown_probe", [(R_ + ("minilm_pt", "probes"), ["nope"])],
     "config key `adapt.recipes.minilm_pt.probes`: no probe named 'nope'"),
    ("adapt_unknown_corpus", [(R_ + ("minilm_pt", "pt"), {"corpus": "nope", "max_steps": 4})],
     "config key `adapt.recipes.minilm_pt.pt.corpus`: no corpus named 'nope'"),
    ("adapt_wrong_answers_of_a_set_without_them", [(R_ + ("minilm_ft", "ft", "negatives"), "wrong_answers")],
     "config key `adapt.recipes.minilm_ft.ft.negatives`: `wrong_answers` trains on the questions' wrong answers, which "
     "only TeleQnA questions have"),
    ("adapt_wrong_answers_without_negatives", [(R_ + ("minilm_ft", "ft", "negatives"), "both"),
                                               (R_ + ("minilm_ft", "ft", "hard_negatives"), {"num_negatives": 0})],
     "config key `adapt.recipes.minilm_ft.ft.hard_negatives.num_negatives`: 0 gives no negatives"),
    ("domain_shift_unknown_set", [(_DS + ("specific",), [{"retrieval": "nope"}])],
     "config key `domain_shift.datasets.telecom_general.specific.0.retrieval`: no retrieval set named 'nope'"),
    ("domain_shift_unknown_corpus", [(_DS + ("agnostic",), [{"corpus": "nope"}])],
     "config key `domain_shift.datasets.telecom_general.agnostic.0.corpus`: no corpus named 'nope'"),
    ("domain_shift_parts_of_a_file", [(_DS + ("agnostic",), [{"file": "f.txt", "parts": ["queries"]}])],
     "config key `domain_shift.datasets.telecom_general.agnostic.0.parts`: only a retrieval source has parts"),
    ("domain_shift_column_of_a_set", [(_DS + ("specific",), [{"retrieval": "telecom_qa", "column": 1}])],
     "config key `domain_shift.datasets.telecom_general.specific.0.column`: only a file source has a column"),
]
ADAPT_REFERENCE_CASES = [(cid, WITH_RECIPES + edits, fragment) for cid, edits, fragment in ADAPT_REFERENCE_CASES]


@pytest.mark.parametrize("edits,fragment", [pytest.param(e, f, id=i) for i, e, f in ADAPT_REFERENCE_CASES[:3]])
def test_cross_checks_sample(edits, fragment):
    with pytest.raises(ConfigError) as err:
        validate(_changed(edits))
    assert fragment in str(err.value)
