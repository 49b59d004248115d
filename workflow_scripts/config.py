"""Load and validate the workflow config against `schemas/config.schema.yaml` and each probe's
`<probe>/schema.yaml`.

A bad value raises ConfigError naming the key (dotted path) and the expected form; defaults from
the schema are filled in; cross-references (a corpus's source, a length-matching reference, a
model's corpora) are checked too, since a schema cannot.
"""
from __future__ import annotations

import copy
import functools
from pathlib import Path

import jsonschema
import yaml

SCHEMA_PATH = Path(__file__).parent / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    pass


# Each probe's package carries the schema of its config section (README, "Probes").
PROBE_SCHEMAS = sorted(Path(__file__).parent.glob("*/schema.yaml"))
# sections laid out like a probe's (package, schema, rule file) that are stages: no model runs them
# as a probe (`models.<name>.probes`)
STAGE_SECTIONS = ("adapt",)


def probe_names() -> list[str]:
    return [path.parent.name for path in PROBE_SCHEMAS]


def load_schema() -> dict:
    """The config schema: the shared one, with each probe's section under its name and the probe's
    rules added to the keys `resources` takes."""
    schema = copy.deepcopy(_parsed_schema(SCHEMA_PATH.read_text()))
    rules = schema["properties"]["resources"]["propertyNames"]["enum"]
    for path in PROBE_SCHEMAS:
        section = copy.deepcopy(_parsed_schema(path.read_text()))
        rules += section.pop("x-rules")
        schema["properties"][path.parent.name] = section
    schema["properties"]["models"]["additionalProperties"]["properties"]["probes"]["items"]["enum"] = [
        p for p in probe_names() if p not in STAGE_SECTIONS]
    return schema


@functools.lru_cache(maxsize=4)
def _parsed_schema(text: str) -> dict:
    return yaml.safe_load(text)  # pure-Python YAML: parsing costs more than reading and copying


def _expected(schema: dict) -> str:
    """Short human description of what a schema node accepts."""
    if "x-expected" in schema:
        return schema["x-expected"]
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    kind = schema.get("type")
    parts = [" or ".join(kind) if isinstance(kind, list) else (kind or "a value")]
    if "minimum" in schema:
        parts.append(f">= {schema['minimum']}")
    if "exclusiveMinimum" in schema:
        parts.append(f"> {schema['exclusiveMinimum']}")
    if "minLength" in schema:
        parts.append(f"of at least {schema['minLength']} character(s)")
    if "maximum" in schema:
        parts.append(f"<= {schema['maximum']}")
    if "pattern" in schema:
        parts.append(f"matching {schema['pattern']}")
    if "minItems" in schema:
        parts.append(f"with at least {schema['minItems']} item(s)")
    if schema.get("uniqueItems"):
        parts.append("without repeats")
    if "description" in schema:
        parts.append(f"({schema['description']})")
    return " ".join(parts)


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _fill_defaults(value, schema: dict):
    if isinstance(value, dict):
        for key, sub in schema.get("properties", {}).items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                _fill_defaults(value[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in value:
                if key not in schema.get("properties", {}):
                    _fill_defaults(value[key], extra)
    return value


def validate(config: dict) -> dict:
    schema = load_schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        lines = []
        for err in errors[:10]:
            where = _key(err.absolute_path)
            if "propertyNames" in err.schema_path:  # the error is about a key itself: name it
                where = _key([*err.absolute_path, err.instance])
                what = "is a reserved name" if err.validator == "not" else f"is not a valid name ({err.message})"
                lines.append(f"config key `{where}`: {err.instance!r} {what}; expected "
                             f"{_expected(err.schema) if err.validator != 'not' else 'another name'}")
            elif err.validator == "additionalProperties":
                lines.append(f"config key `{where}`: {err.message} (allowed: "
                             f"{', '.join(sorted(err.schema.get('properties', {})))})")
            elif err.validator == "not" and "x-expected" in err.schema:
                lines.append(f"config key `{where}`: needs {err.schema['x-expected']}")
            elif err.validator in ("oneOf", "anyOf", "allOf", "if"):
                expected = err.schema.get("x-expected", f"the combinations in {SCHEMA_PATH.name}")
                lines.append(f"config key `{where}`: needs {expected}")
            elif err.validator == "required":
                # the x-expected of an if/then's `then` says what the condition asks for
                hint = f"; expected {err.schema['x-expected']}" if "then" in err.schema_path else ""
                lines.append(f"config key `{where}`: {err.message}{hint}")
            elif err.validator == "type" and err.schema.get("type") == "object":
                # not the node's x-expected, which is about what goes inside
                lines.append(f"config key `{where}`: {err.message}; expected a mapping of keys to values")
            else:
                lines.append(f"config key `{where}`: {err.message}; expected {_expected(err.schema)}")
        raise ConfigError("invalid config:\n  " + "\n  ".join(lines))
    # before defaults are filled in: whether `header` was given matters, not only its value
    _raise(_source_problems(config["sources"]))
    config = _apply_presets(copy.deepcopy(config))  # before defaults: a preset's values count as given
    config = _fill_defaults(config, schema)
    _check_references(config)
    return config


# Named settings that reproduce a publication. `paper`: the TF-IDF of the CSC seed paper's Table 3
# (its reference code uses scikit-learn's defaults): tokens of two or more word characters, so an
# inserted `a` is invisible, and vocabulary and idf fitted on the original sentences alone.
# `project`: this workflow's defaults (one-letter tokens count; fitted on originals and variants).
TFIDF_PRESETS = {
    "paper": {"token_pattern": r"(?u)\b\w\w+\b", "fit_on": "originals"},
    "project": {"token_pattern": r"(?u)\b\w+\b", "fit_on": "originals_and_variants"},
}


def _apply_presets(config: dict) -> dict:
    problems = []
    for name, m in config["models"].items():
        preset = m.get("preset")
        if preset is None:
            continue
        if m["family"] != "tfidf":
            problems.append(f"config key `models.{name}.preset`: presets exist for family tfidf only, "
                            f"not {m['family']!r}")
            continue
        for key, value in TFIDF_PRESETS[preset].items():
            if key in m and m[key] != value:
                problems.append(f"config key `models.{name}.{key}`: {m[key]!r} contradicts preset {preset!r}, "
                                f"which sets {value!r}; drop one of the two")
            m[key] = value
    _raise(problems)
    return config


def _raise(problems: list[str]) -> None:
    if problems:
        raise ConfigError("invalid config:\n  " + "\n  ".join(problems))


COLUMN_FORMATS = ("bitext", "tsv", "csv")  # the formats whose reader takes `columns`


def _source_problems(sources: dict) -> list[str]:
    """What the schema cannot say about a source: which keys its format reads, and that they
    agree with its languages. The reader would otherwise crash on them or quietly ignore them."""
    problems = []
    for name, s in sources.items():
        fmt, langs, key = s["format"], s["languages"], f"sources.{name}"
        header = fmt == "csv" or s.get("header", False)  # as the reader sees it
        columns = s.get("columns")
        if columns is not None:
            if fmt not in COLUMN_FORMATS:
                problems.append(f"config key `{key}.columns`: a {fmt} source takes no columns "
                                f"(they are for {', '.join(COLUMN_FORMATS)})")
            elif sorted(columns) != sorted(langs):
                problems.append(f"config key `{key}.columns`: has languages {sorted(columns)}; expected one "
                                f"column for each of the source's languages {langs}")
            else:
                for lang, col in columns.items():
                    if fmt == "csv" and not isinstance(col, str):
                        problems.append(f"config key `{key}.columns.{lang}`: {col!r} is an index; a csv source "
                                        "names its columns as in its header line")
                    elif not header and isinstance(col, str):
                        problems.append(f"config key `{key}.columns.{lang}`: {col!r} is a name, but a {fmt} source "
                                        "without `header: true` has none; expected a column index (0 = first), "
                                        "or `format: tsv` with `header: true`")
                if len(set(columns.values())) < len(columns):
                    problems.append(f"config key `{key}.columns`: two languages read the same column ({columns})")
        elif fmt == "csv":
            problems.append(f"config key `{key}.columns`: a csv source needs columns, e.g. {{nl: label}}")
        if "header" in s and fmt == "csv" and not s["header"]:
            problems.append(f"config key `{key}.header`: a csv source always has a header line (it names the columns)")
        elif s.get("header") and fmt not in ("tsv", "csv"):
            problems.append(f"config key `{key}.header`: a {fmt} source has no header line; only tsv takes "
                            "`header: true`")
        if "fields" in s:
            if fmt not in ("bitext", "tsv") or header:
                problems.append(f"config key `{key}.fields`: only a bitext or tsv source without a header takes "
                                "`fields` (a header line gives the number of fields)")
            elif columns is None or all(isinstance(c, int) for c in columns.values()):
                used = max(columns.values()) if columns else len(langs) - 1
                if s["fields"] <= used:
                    problems.append(f"config key `{key}.fields`: {s['fields']} field(s), but column {used} is read; "
                                    f"expected at least {used + 1}")
        files = s.get("files")
        if files is not None and fmt != "moses":
            problems.append(f"config key `{key}.files`: only a moses source has files (zip members)")
        elif files is not None and sorted(files) != sorted(langs):
            problems.append(f"config key `{key}.files`: has languages {sorted(files)}; expected one zip member for "
                            f"each of the source's languages {langs}")
        if fmt == "lines" and len(langs) != 1:
            problems.append(f"config key `{key}.languages`: a lines source has exactly one language")
    return problems


def _check_references(config: dict) -> None:
    problems = []
    sources, corpora = config["sources"], config["corpora"]
    for name, c in corpora.items():
        src = sources.get(c["source"])
        if src is None:
            problems.append(f"config key `corpora.{name}.source`: no source named {c['source']!r} "
                            f"(sources: {', '.join(sources)})")
        elif c["language"] not in src["languages"]:
            problems.append(f"config key `corpora.{name}.language`: {c['language']!r} is not among the languages "
                            f"{src['languages']} of source {c['source']!r}")
        ref = c.get("match_lengths_of")
        if ref is not None:
            if ref not in corpora:
                problems.append(f"config key `corpora.{name}.match_lengths_of`: no corpus named {ref!r}")
            elif ref == name or corpora[ref].get("match_lengths_of"):
                problems.append(f"config key `corpora.{name}.match_lengths_of`: {ref!r} must be a corpus that is "
                                "not itself length-matched")
        if c.get("min_tokens") is not None and c.get("max_tokens") is not None and c["min_tokens"] > c["max_tokens"]:
            problems.append(f"config key `corpora.{name}`: min_tokens {c['min_tokens']} > max_tokens {c['max_tokens']}")
    perturb = config["csc"]["perturb"]
    for name, c in corpora.items():
        for key in ("fuzz_terms", "negation_terms"):
            if c["language"] not in perturb[key]:
                problems.append(f"config key `csc.perturb.{key}`: no terms for language {c['language']!r} "
                                f"(needed by corpus {name!r}); expected e.g. {{{c['language']}: [...]}}")
    step = config["csc"]["grid_step"]
    if abs(round(2.0 / step) * step - 2.0) > 1e-9:
        problems.append(f"config key `csc.grid_step`: {step} does not divide 2; expected a step that divides "
                        "2, e.g. 0.001 (the paper's 2001 points) or 0.0001")
    # every probe names its datasets (triplet datasets, retrieval sets, ...) under <probe>.datasets
    datasets = {d for probe in probe_names() for d in (config.get(probe) or {}).get("datasets", {})}
    for name, m in config["models"].items():
        for corpus in m.get("corpora", []):
            if corpus not in corpora:
                problems.append(f"config key `models.{name}.corpora`: no corpus named {corpus!r}")
        for dataset in m.get("datasets", []):
            if dataset not in datasets:
                problems.append(f"config key `models.{name}.datasets`: no probe dataset named {dataset!r} "
                                f"(configured: {sorted(datasets) or 'none'})")
    if "triplets" in config:
        problems += _triplet_problems(config["triplets"], set(config["sources"]))
    if "retrieval" in config:
        problems += _retrieval_problems(config["retrieval"])
    problems += _settheory_problems(config)  # also the `articles` section and models' gguf_file
    problems += _adapt_problems(config)  # also the `domain_shift` section's references
    _raise(problems)


# The source formats each kind of triplet dataset can be built from (methods.md §3).
TRIPLET_SOURCE_FORMATS = {
    "negation_detection": {"sick", "msrp", "treebank", "lines"},
    "negation_variants": {"sick", "msrp", "treebank", "lines"},
    "clause_relatedness": {"msrp", "treebank", "lines"},
    "argument_sensitivity": set(),  # templates
    "fixed_point_reorder": {"sick"},  # needs SICK's pairs, labels and relatedness
}


def _triplet_problems(triplets: dict, corpus_sources: set) -> list[str]:
    problems = []
    sources = triplets.get("sources", {})
    for name in sorted(set(sources) & corpus_sources):
        problems.append(f"config key `triplets.sources.{name}`: the name is taken by `sources.{name}`; "
                        "expected a name of its own (downloads are kept per source name)")
    for name, d in triplets["datasets"].items():
        key = f"triplets.datasets.{name}"
        if "file" in d:
            for other in ("kind", "sources", "max_triplets"):
                if other in d:
                    problems.append(f"config key `{key}.{other}`: a dataset read from `file` is not built; "
                                    f"drop `{other}` or `file`")
            continue
        for other in ("format", "columns", "scoring"):
            if other in d:
                problems.append(f"config key `{key}.{other}`: only a dataset read from `file` takes `{other}`")
        kind = d.get("kind", name)
        if kind not in TRIPLET_SOURCE_FORMATS:
            problems.append(f"config key `{key}`: {name!r} is not a built-in dataset; expected `kind: <one of "
                            f"{', '.join(TRIPLET_SOURCE_FORMATS)}>` or `file: <your triplets>`")
            continue
        allowed = TRIPLET_SOURCE_FORMATS[kind]
        if not allowed:
            if d.get("sources"):
                problems.append(f"config key `{key}.sources`: {kind} is built from templates "
                                "(triplets.templates), not from sources")
            continue
        if not d.get("sources"):
            problems.append(f"config key `{key}.sources`: {kind} needs sources: names under triplets.sources "
                            f"of format {', '.join(sorted(allowed))}")
        for src in d.get("sources", []):
            if src not in sources:
                problems.append(f"config key `{key}.sources`: no source {src!r} under triplets.sources")
            elif sources[src]["format"] not in allowed:
                problems.append(f"config key `{key}.sources`: {src!r} is a {sources[src]['format']} source; "
                                f"{kind} takes {', '.join(sorted(allowed))}")
    return problems


# Keys each kind of retrieval set reads (workflow_scripts/retrieval/sets.py SPEC_KEYS, plus the
# probe's own `eval_split`), and the qrels splits each built kind writes (None: the user's).
RETRIEVAL_KIND_KEYS = {
    "beir": {"kind", "path", "url", "sha256", "splits", "eval_split"},
    "3gpp": {"kind", "sources", "specs", "questions", "teleqna", "generator", "eval_split"},
    "msrp": {"kind", "path", "url", "sha256", "eval_split"},
    "tatoeba": {"kind", "path", "url", "sha256", "columns", "eval_split"},
}
RETRIEVAL_KIND_SPLITS = {"beir": None, "3gpp": ("train", "test"), "msrp": ("test",), "tatoeba": ("test",)}


def _retrieval_problems(retrieval: dict) -> list[str]:
    problems = []

    def location(key: str, entry: dict) -> None:
        has_path, has_url = "path" in entry, "url" in entry or "sha256" in entry
        if has_path == has_url or (has_url and not ("url" in entry and "sha256" in entry)):
            problems.append(f"config key `{key}`: needs `path` (a local file or folder), or `url` with `sha256`")

    for name, d in retrieval["datasets"].items():
        key, kind = f"retrieval.datasets.{name}", d["kind"]
        for extra in sorted(set(d) - RETRIEVAL_KIND_KEYS[kind]):
            problems.append(f"config key `{key}.{extra}`: a {kind} set does not read `{extra}` (it reads "
                            f"{', '.join(sorted(RETRIEVAL_KIND_KEYS[kind] - {'kind'}))})")
        if kind == "3gpp":
            if "sources" not in d:
                problems.append(f"config key `{key}.sources`: a 3gpp set needs sources: {{path: <clauses .jsonl or "
                                "folder>}, or {url, sha256}")
            else:
                location(f"{key}.sources", d["sources"])
            methods = d.get("questions", ["templates"])
            for method in ("teleqna", "generator"):
                if method in d and method not in methods:
                    problems.append(f"config key `{key}.{method}`: settings for `{method}` questions, but "
                                    f"`questions` ({', '.join(methods)}) does not ask for them")
            if "teleqna" in methods:
                if "teleqna" not in d:
                    problems.append(f"config key `{key}.teleqna`: `teleqna` questions need the release: "
                                    "{path: <TeleQnA zip>} or {url, sha256}")
                else:
                    location(f"{key}.teleqna", {k: v for k, v in d["teleqna"].items() if k in ("path", "url", "sha256")})
        else:
            location(key, {k: v for k, v in d.items() if k in ("path", "url", "sha256")})
        splits = RETRIEVAL_KIND_SPLITS[kind] or d.get("splits")
        wanted = d.get("eval_split", retrieval["eval_split"])
        for split in [wanted] if isinstance(wanted, str) else wanted:
            if splits is not None and split not in splits:
                where = f"{key}.eval_split" if "eval_split" in d else "retrieval.eval_split"
                problems.append(f"config key `{where}`: set {name!r} ({kind}) has no split {split!r}; expected one of "
                                f"{', '.join(splits)}")
    k = retrieval["k"]
    if k["min"] > k["max"]:
        problems.append(f"config key `retrieval.k`: min {k['min']} > max {k['max']}")
    elif k["max"] > retrieval["top_k"]:
        problems.append(f"config key `retrieval.k.max`: {k['max']} needs at least {k['max']} retrieved documents, "
                        f"but `retrieval.top_k` is {retrieval['top_k']}")
    ks = range(k["min"], k["max"] + 1, k["step"])
    if retrieval["table_k"] not in ks:
        problems.append(f"config key `retrieval.table_k`: {retrieval['table_k']} is not among the k of `retrieval.k` "
                        f"({', '.join(map(str, ks))})")
    return problems


def _settheory_problems(config: dict) -> list[str]:
    """The `articles` section, models' `gguf_file`, and the `settheory` section (seed 001): what the
    schema cannot say."""
    problems = []
    articles = config.get("articles") or {}
    taken = {**{n: "sources" for n in config["sources"]},
             **{n: "triplets.sources" for n in (config.get("triplets") or {}).get("sources", {})}}
    for name, spec in articles.items():
        if name in taken:
            problems.append(f"config key `articles.{name}`: the name is taken by `{taken[name]}.{name}`; expected a "
                            "name of its own (downloads are kept per name)")
        if "file_type" in spec and spec["format"] != "hf":
            problems.append(f"config key `articles.{name}.file_type`: only an `hf` collection has a file type "
                            "(a story collection is .story files)")
    for name, m in config["models"].items():
        if "gguf_file" in m and m["family"] != "transformers":
            problems.append(f"config key `models.{name}.gguf_file`: GGUF files load in family transformers only, "
                            f"not {m['family']!r}")
    st = config.get("settheory")
    if not st:
        return problems
    from workflow_scripts.settheory.samples import DEFAULT_GENERATORS, DEFAULT_PROMPTS
    generators = {**DEFAULT_GENERATORS, **st.get("generators", {})}
    prompts = {**DEFAULT_PROMPTS, **st.get("prompts", {})}
    for name, d in st["datasets"].items():
        key = f"settheory.datasets.{name}"
        if name == "samples":
            problems.append(f"config key `{key}`: `samples` is reserved (results/settheory/samples/ holds every "
                            "sample set's table); expected another name")
        if ("file" in d) == ("articles" in d):
            problems.append(f"config key `{key}`: needs exactly one of `articles` (build the samples from an "
                            "article collection) or `file` (import a table of samples)")
            continue
        if "file" in d:
            if "max_articles" in d:
                problems.append(f"config key `{key}.max_articles`: an imported sample set (`file`) reads no articles")
            continue
        for other in ("format", "columns"):
            if other in d:
                problems.append(f"config key `{key}.{other}`: only an imported sample set (`file`) takes `{other}`")
        if d["articles"] not in articles:
            problems.append(f"config key `{key}.articles`: no collection {d['articles']!r} under `articles` "
                            f"(configured: {sorted(articles) or 'none'})")
        if d.get("generator", "smollm2") not in generators:
            problems.append(f"config key `{key}.generator`: no generator {d['generator']!r} (settheory.generators "
                            f"and the built-in: {', '.join(sorted(generators))})")
        if d.get("prompt", "fuse_fewshot") not in prompts:
            problems.append(f"config key `{key}.prompt`: no prompt {d['prompt']!r} (settheory.prompts and the "
                            f"built-in: {', '.join(sorted(prompts))})")
        if d["min_words"] > d["max_words"]:
            problems.append(f"config key `{key}`: min_words {d['min_words']} > max_words {d['max_words']}")
    for encoder in st["filter"]["encoders"]:
        if encoder not in config["models"]:
            problems.append(f"config key `settheory.filter.encoders`: no model {encoder!r} under `models`")
    for criterion, per_measure in st["fixed_bounds"].items():
        for measure, bounds in per_measure.items():
            for pair in ([bounds] if criterion == "c4" else bounds):
                if not pair[0] < pair[1]:
                    problems.append(f"config key `settheory.fixed_bounds.{criterion}.{measure}`: {pair} is not "
                                    "[low, high] with low < high")
    return problems


def _adapt_problems(config: dict) -> list[str]:
    """adapt recipes (bases, data, a model evaluated on the questions it was fine-tuned on) and the
    domain_shift section's sources and recipe-made models' datasets (workflow_scripts/adapt/models.py)."""
    from workflow_scripts.adapt.models import problems as recipe_problems

    problems = recipe_problems(config) if config.get("adapt") else []
    retrieval = set((config.get("retrieval") or {}).get("datasets", {}))
    datasets = {d for probe in probe_names() for d in (config.get(probe) or {}).get("datasets", {})}
    for name, recipe in ((config.get("adapt") or {}).get("recipes") or {}).items():
        for dataset in recipe.get("datasets", []):
            if dataset not in datasets:
                problems.append(f"config key `adapt.recipes.{name}.datasets`: no probe dataset named {dataset!r}")
        for corpus in recipe.get("corpora", []):
            if corpus not in config["corpora"]:
                problems.append(f"config key `adapt.recipes.{name}.corpora`: no corpus named {corpus!r}")
    for name, spec in ((config.get("domain_shift") or {}).get("datasets") or {}).items():
        for group in ("specific", "agnostic"):
            for i, src in enumerate(spec[group]):
                key = f"domain_shift.datasets.{name}.{group}.{i}"
                if "retrieval" in src and src["retrieval"] not in retrieval:
                    problems.append(f"config key `{key}.retrieval`: no retrieval set named {src['retrieval']!r}")
                if "corpus" in src and src["corpus"] not in config["corpora"]:
                    problems.append(f"config key `{key}.corpus`: no corpus named {src['corpus']!r}")
                if "parts" in src and "retrieval" not in src:
                    problems.append(f"config key `{key}.parts`: only a retrieval source has parts")
                if "column" in src and "file" not in src:
                    problems.append(f"config key `{key}.column`: only a file source has a column")
    return problems
