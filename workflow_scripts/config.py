"""Load and validate the workflow config against `schemas/config.schema.yaml` and each declared
probe's `<probe>/schema.yaml` (workflow_scripts/probes.py).

A bad value raises ConfigError naming the key (dotted path) and the expected form; defaults from
the schema are filled in; cross-references (a corpus's source, a length-matching reference, a
model's corpora) are checked too, since a schema cannot, and each probe's declaration checks its own
section. Before any of this, `check_duplicate_keys` re-reads each config file strictly: YAML lets a
key repeat in one mapping (the last one silently wins), which the workflow refuses.
"""
from __future__ import annotations

import copy
import functools
import os
from pathlib import Path

import jsonschema
import yaml

from workflow_scripts import probes
from workflow_scripts.encoders import model_schema

SCHEMA_PATH = Path(__file__).parent / "schemas" / "config.schema.yaml"
CHECKOUT = Path(__file__).resolve().parents[1]  # the workflow's sources: Snakefile, rules/, workflow_scripts/
# folders of the checkout that hold the workflow's sources and inputs: no study writes into them
SOURCE_FOLDERS = ("workflow_scripts", "rules", "resources", "envs", "profiles", "tests", ".git")


class ConfigError(ValueError):
    pass


# ---- config files: a key twice in one mapping ----------------------------------------------------

class StrictLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key repeated in one mapping (plain YAML keeps the last one).
    The check runs on the composed node tree, where every key still has its line and its place
    (the dotted path) is known; merge keys (`<<: *anchor`) may still be overridden, as in YAML."""

    source = "<string>"

    def compose_document(self):
        node = super().compose_document()
        _refuse_duplicates(node, (), self.source, set())
        return node


def _key_text(node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else f"<{node.id}>"


def _refuse_duplicates(node, path: tuple, source: str, seen: set) -> None:
    if node is None or id(node) in seen:  # an alias visits its anchor's node again
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        lines: dict = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag == "tag:yaml.org,2002:merge":
                continue
            ident = (key.tag, key.value) if isinstance(key, yaml.ScalarNode) else ("node", id(key))
            lines.setdefault(ident, []).append(key.start_mark.line + 1)
        for (tag, value), where in lines.items():
            if len(where) > 1:
                dotted = ".".join((*path, str(value)))
                times = "twice" if len(where) == 2 else f"{len(where)} times"
                listed = " and ".join([", ".join(map(str, where[:-1])), str(where[-1])])
                raise ConfigError(f"config file `{source}`: key `{dotted}` appears {times} (lines {listed}); "
                                  "YAML would keep the last one silently: keep one of them")
        for key, value in node.value:
            _refuse_duplicates(value, (*path, _key_text(key)), source, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _refuse_duplicates(item, (*path, str(i)), source, seen)


def check_duplicate_keys(path) -> None:
    """Raise ConfigError if a key appears twice in one mapping of the config file at `path`, naming
    the file, the key (dotted path) and both lines. Snakemake has already loaded the file with a
    loader that keeps the last of two repeated keys; this re-reads it strictly. A file that is not
    YAML (Snakemake also reads JSON, which YAML mostly is) is left to Snakemake's own message."""
    loader = StrictLoader(Path(path).read_text(encoding="utf-8"))
    loader.source = str(path)
    try:
        loader.get_single_node()
    except yaml.YAMLError:
        return
    finally:
        loader.dispose()


def probe_names() -> list[str]:
    """The probes a model may run (`models.<name>.probes`): the declared probes, not the stages."""
    return probes.probe_names()


def load_schema() -> dict:
    """The config schema: the shared one, with each declared probe's (and stage's) section under its
    name and its rules added to the keys `resources` takes."""
    schema = copy.deepcopy(_parsed_schema(SCHEMA_PATH.read_text()))
    rules = schema["properties"]["resources"]["propertyNames"]["enum"]
    for probe in probes.declarations():
        schema["properties"][probe.name] = copy.deepcopy(_parsed_schema(probe.schema_path.read_text()))
        rules += list(probe.rules)
    schema["properties"]["models"]["additionalProperties"]["properties"]["probes"]["items"]["enum"] = probe_names()
    model_schema(schema["properties"]["models"]["additionalProperties"])  # each encoder family's part
    schema["properties"]["compare"]["properties"]["margins"]["propertyNames"]["enum"] = probe_names()
    return schema


@functools.lru_cache(maxsize=None)  # one entry per schema file (the shared one and each probe's)
def _parsed_schema(text: str) -> dict:
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml where present


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
    if "exclusiveMaximum" in schema:
        parts.append(f"< {schema['exclusiveMaximum']}")
    if "maxLength" in schema:
        parts.append(f"of at most {schema['maxLength']} character(s)")
    if "pattern" in schema:
        parts.append(f"matching {schema['pattern']}")
    if "minItems" in schema:
        parts.append(f"with at least {schema['minItems']} item(s)")
    if "maxItems" in schema:
        parts.append(f"with at most {schema['maxItems']} item(s)")
    if "minProperties" in schema:
        parts.append(f"with at least {schema['minProperties']} key(s)")
    if "maxProperties" in schema:
        parts.append(f"with at most {schema['maxProperties']} key(s)")
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


def validate(config: dict, check_paths: bool = True) -> dict:
    """The config with defaults filled in, or ConfigError naming every bad key. `check_paths`: also
    check that the local folders the config names exist (a transformer model's `path`); the jobs'
    own re-read of the Snakefile on another machine skips it."""
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
    _raise(_source_problems(config.get("sources") or {}))
    _raise(_family_problems(config["models"]))
    config = _apply_presets(copy.deepcopy(config))  # before defaults: a preset's values count as given
    config = _fill_defaults(config, schema)
    _raise(results_problems(config["results"]))
    _check_references(config)
    if check_paths:
        _raise(model_path_problems(config) + registry_problems(config))
    return config


def registry_problems(config: dict) -> list[str]:
    """What each family checks where the workflow is planned, not in every job's re-read of the
    Snakefile (Family.plan_problems: family mteb imports mteb, a few seconds, to find the names)."""
    from workflow_scripts.encoders import family_of
    return [p for name, m in config["models"].items() for p in family_of(m).plan_problems(name, m)]


RESULTS_EXPECTED = ("a folder of the study's own for its outputs: a path relative to the working directory, or "
                    "absolute, that is not the filesystem root, the working directory itself, the workflow's "
                    f"checkout or one of its folders ({', '.join(f for f in SOURCE_FOLDERS if f != '.git')})")


def results_problems(results: str, cwd: str | os.PathLike | None = None) -> list[str]:
    """What is wrong with `results` as the study's output folder (relative paths are taken from
    `cwd`, the working directory): every output is planned under it, and the workflow deletes and
    replaces what it finds there, so it must not be the root, the working directory (where
    Snakemake keeps its `.snakemake` and the configs are), the checkout or a folder of sources."""
    text = results.strip()
    where = Path(cwd) if cwd is not None else Path.cwd()
    if not text:
        reason = "is empty"
    else:
        # resolved as the filesystem will (symlinks first, then `..`): normpath before resolve would
        # take `link/../rules` for `./rules` when `link` points into the checkout
        folder = (where / text).resolve()
        sources = {CHECKOUT / name: name for name in SOURCE_FOLDERS}
        inside = next((name for src, name in sources.items() if folder == src or folder.is_relative_to(src)), None)
        if folder == Path(folder.anchor):
            reason = "is the filesystem root"
        elif folder == where.resolve():
            reason = "is the working directory itself"
        elif folder == CHECKOUT or CHECKOUT.is_relative_to(folder):
            reason = f"is the workflow's checkout `{CHECKOUT}`" if folder == CHECKOUT else \
                f"holds the workflow's checkout `{CHECKOUT}`"
        elif inside is not None:
            reason = f"is {'' if folder == CHECKOUT / inside else 'inside '}the workflow's `{inside}` folder"
        else:
            return []
    return [f"config key `results`: {results!r} {reason}; expected {RESULTS_EXPECTED}"]


def model_path_problems(config: dict) -> list[str]:
    """The `path` of a family that loads a model folder must be an existing folder (relative to the
    working directory); a one-file model is the embedding job's input, which Snakemake refuses
    missing while planning. Models the workflow trains (`adapted`, registered from the adapt recipes
    after validation) appear only later; they are not checked."""
    from workflow_scripts.encoders import family_of
    problems = []
    for name, m in config["models"].items():
        if family_of(m).model_folder and "path" in m and not m.get("adapted") and not os.path.isdir(m["path"]):
            what = "a file, not a folder" if os.path.exists(m["path"]) else "no such folder"
            problems.append(f"config key `models.{name}.path`: {what} `{m['path']}` (from the working directory "
                            f"`{os.getcwd()}`); expected the model's local folder (config.json, weights, tokenizer)")
    return problems


def _apply_presets(config: dict) -> dict:
    """A family's named settings (Family.presets) filled in, refusing a key that contradicts them."""
    from workflow_scripts.encoders import families, family_of
    problems = []
    for name, m in config["models"].items():
        preset = m.get("preset")
        if preset is None:
            continue
        presets = family_of(m).presets
        if preset not in presets:
            having = ", ".join(f.name for f in families().values() if preset in f.presets)
            problems.append(f"config key `models.{name}.preset`: presets exist for family {having} only, "
                            f"not {m['family']!r}")
            continue
        for key, value in presets[preset].items():
            if key in m and m[key] != value:
                problems.append(f"config key `models.{name}.{key}`: {m[key]!r} contradicts preset {preset!r}, "
                                f"which sets {value!r}; drop one of the two")
            m[key] = value
    _raise(problems)
    return config


def _family_problems(models: dict) -> list[str]:
    """What the schema cannot say about a family's settings: a key that only another family reads
    (Family.own_keys), and each family's own checks (Family.config_problems)."""
    from workflow_scripts.encoders import families, family_of
    owner = {key: f.name for f in families().values() for key in f.own_keys}
    problems = []
    for name, m in models.items():
        for key in m:
            if key in owner and key not in family_of(m).own_keys:
                problems.append(f"config key `models.{name}.{key}`: read by family {owner[key]} only, "
                                f"not {m['family']!r}; drop it or set `family: {owner[key]}`")
        problems += family_of(m).config_problems(name, m)
    return problems


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
        for col in (s.get("where") or {}):
            if fmt not in ("tsv", "csv"):
                problems.append(f"config key `{key}.where`: a {fmt} source takes no row filters (they are for tsv "
                                "and csv sources)")
                break
            if not header and not str(col).isdigit():
                problems.append(f"config key `{key}.where.{col}`: {col!r} is a name, but a {fmt} source without "
                                "`header: true` has none; expected a column index (0 = first)")
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
    # every probe names its datasets (triplet datasets, retrieval sets, ...) under <probe>.datasets
    declared = probes.declarations()
    datasets = {d for probe in declared for d in (config.get(probe.name) or {}).get("datasets", {})}
    for name, m in config["models"].items():
        for corpus in m.get("corpora", []):
            if corpus not in corpora:
                problems.append(f"config key `models.{name}.corpora`: no corpus named {corpus!r}")
        for dataset in m.get("datasets", []):
            if dataset not in datasets:
                problems.append(f"config key `models.{name}.datasets`: no probe dataset named {dataset!r} "
                                f"(configured: {sorted(datasets) or 'none'})")
        for probe in m.get("probes", []):
            if probes.get(probe).needs_corpora and not corpora:
                problems.append(f"config key `models.{name}.probes`: {probe} reads corpora, but the study has "
                                "none; expected `sources:` and `corpora:` entries, or drop it from the list")
    against = (config.get("compare") or {}).get("against", "default")
    recipes = probes.added_models(config)  # models a stage adds (adapt: its recipes)
    if against not in ("default", "all_pairs", *config["models"], *recipes):
        problems.append(f"config key `compare.against`: no model named {against!r}; expected `default`, `all_pairs` "
                        f"or one of the models ({', '.join([*config['models'], *recipes])})")
    problems += _shared_problems(config)  # the `articles` section and models' gguf_file
    for probe in declared:
        if probe.check:
            problems += probe.check(config)
    _raise(problems)


def _shared_problems(config: dict) -> list[str]:
    """The `articles` section (a shared stage), models' `gguf_file` and the store partitions per
    device: what the schema cannot say."""
    problems = []
    parts = config["embedding_partitions"]
    for device, n in (config.get("embedding_partitions_per_device") or {}).items():
        if parts % n:
            problems.append(f"config key `embedding_partitions_per_device.{device}`: {n} does not divide "
                            f"embedding_partitions ({parts}); expected a divisor of it (each store partition holds "
                            f"every {n}th text partition), e.g. {', '.join(str(d) for d in range(1, parts + 1) if parts % d == 0)}")
    articles = config.get("articles") or {}
    # a probe's own sources (`<probe>.sources`) share the download folders with the corpus sources
    taken = {**{n: "sources" for n in config["sources"]},
             **{n: f"{p.name}.sources" for p in probes.declarations()
                for n in ((config.get(p.name) or {}).get("sources") or {})}}
    for name, spec in articles.items():
        if name in taken:
            problems.append(f"config key `articles.{name}`: the name is taken by `{taken[name]}.{name}`; expected a "
                            "name of its own (downloads are kept per name)")
        if "file_type" in spec and spec["format"] != "hf":
            problems.append(f"config key `articles.{name}.file_type`: only an `hf` collection has a file type "
                            "(a story collection is .story files)")
    for name, m in config["models"].items():
        both = sorted(set(m.get("prompt_name") or {}) & set(m.get("prompts") or {}))
        if both:
            problems.append(f"config key `models.{name}.prompts`: role(s) {', '.join(both)} also have a `prompt_name`; "
                            "expected one prompt per role (a name of the model's own, or a literal one)")
    return problems
