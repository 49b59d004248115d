"""Load and validate the workflow config against `schemas/config.schema.yaml`.

A bad value raises ConfigError naming the key (dotted path) and the expected form; defaults from
the schema are filled in; cross-references (a corpus's source, a length-matching reference, a
model's corpora) are checked too, since a schema cannot.
"""
from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import yaml

SCHEMA_PATH = Path(__file__).parent / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    pass


def load_schema() -> dict:
    return yaml.safe_load(SCHEMA_PATH.read_text())


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
    if "maximum" in schema:
        parts.append(f"<= {schema['maximum']}")
    if "pattern" in schema:
        parts.append(f"matching {schema['pattern']}")
    if "minItems" in schema:
        parts.append(f"with at least {schema['minItems']} item(s)")
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
            if err.validator == "additionalProperties":
                lines.append(f"config key `{where}`: {err.message} (allowed: "
                             f"{', '.join(sorted(err.schema.get('properties', {})))})")
            elif err.validator in ("oneOf", "anyOf", "allOf", "if"):
                expected = err.schema.get("x-expected", f"the combinations in {SCHEMA_PATH.name}")
                lines.append(f"config key `{where}`: needs {expected}")
            elif err.validator == "required":
                lines.append(f"config key `{where}`: {err.message}")
            else:
                lines.append(f"config key `{where}`: {err.message}; expected {_expected(err.schema)}")
        raise ConfigError("invalid config:\n  " + "\n  ".join(lines))
    config = _fill_defaults(copy.deepcopy(config), schema)
    _check_references(config)
    return config


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
    for name, s in sources.items():
        if s["format"] == "csv" and not s.get("columns"):
            problems.append(f"config key `sources.{name}.columns`: a csv source needs columns, e.g. {{nl: label}}")
        if s["format"] == "lines" and len(s["languages"]) != 1:
            problems.append(f"config key `sources.{name}.languages`: a lines source has exactly one language")
    perturb = config["perturb"]
    for name, c in corpora.items():
        for key in ("fuzz_terms", "negation_terms"):
            if c["language"] not in perturb[key]:
                problems.append(f"config key `perturb.{key}`: no terms for language {c['language']!r} "
                                f"(needed by corpus {name!r}); expected e.g. {{{c['language']}: [...]}}")
    for name, m in config["models"].items():
        for corpus in m.get("corpora", []):
            if corpus not in corpora:
                problems.append(f"config key `models.{name}.corpora`: no corpus named {corpus!r}")
    if problems:
        raise ConfigError("invalid config:\n  " + "\n  ".join(problems))
