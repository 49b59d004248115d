"""Config validation: a bad value must be refused with a message that names the key (`config key
`a.b.c``) and says what is expected there.

The schema's constraints are checked per kind on cases generated from the schemas themselves
(tests/schema_cases.py: every constraint of the shared schema and of each declared probe's, none
written here); a constraint no case breaks, or a message without its key or expected form, fails a
test. Written here: what the generated cases do not try (messages that matter), what
workflow_scripts/config.py checks beyond the schema (one case per branch), and the defaults it fills.
"""
import copy
from pathlib import Path

import pytest
import yaml

import schema_cases
from workflow_scripts import probes
from workflow_scripts.config import ConfigError, load_schema, validate
from workflow_scripts.ingest import DEFAULT_MAX_CHARS

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = yaml.safe_load((ROOT / "config.yaml").read_text())
DELETE = object()
BITEXT = ("sources", "en_nl_sample")   # format: bitext, no columns
CSV = ("sources", "skills_nl")         # format: csv, columns {nl: label}
PC_EN = ("corpora", "pc_en")
MINILM = ("models", "minilm")
TRIPLETS = ("triplets",)
T_DATASET = ("triplets", "datasets", "negation_detection")    # sources: [sick_sample, reported_speech]
MONTAGUE = ("montague",)


def own_triplets(**spec):
    """A probe dataset read from the user's own file, named `mine`."""
    return [(("triplets", "datasets", "mine"), {"file": "t.tsv", **spec})]


def changed(edits) -> dict:
    """The default config with (path, value) edits applied; DELETE removes the key."""
    cfg = copy.deepcopy(DEFAULT)
    for path, value in edits:
        if not path:
            cfg = value
            continue
        node = cfg
        for key in path[:-1]:
            node = node.setdefault(key, {})
        if value is DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = copy.deepcopy(value)  # a shared value is never edited in place
    return cfg


def message_of(cfg) -> str:
    with pytest.raises(ConfigError) as err:
        validate(cfg)
    return str(err.value)


def test_default_configs_are_valid_and_get_defaults():
    cfg = validate(DEFAULT)
    assert cfg["models"]["minilm"]["store_dtype"] == "float32"
    assert cfg["csc"]["exact_kde_max_n"] == 20000
    assert cfg["csc"]["perturb"]["grammatical_negation"]["languages"] == ["en"]
    assert {s["max_chars"] for s in cfg["sources"].values()} == {10000}
    for other in ("configs/test_small.yaml", "configs/full_paracrawl.yaml", "adapt/study.yaml",
                  "montague/study_published.yaml"):
        validate(yaml.safe_load((ROOT / "resources" / other).read_text()))


def test_checking_a_config_imports_no_heavy_package():
    """Every Snakemake start validates the config (a cluster job's too): the probes' checks import
    what they need lazily, never polars, pyarrow, numpy or torch (the set-theory check reads its
    defaults from settheory/defaults.py, not the job's samples.py). In a fresh interpreter, on the
    default config and every probe's study."""
    import subprocess
    import sys
    script = ("import sys, yaml\nfrom workflow_scripts.config import validate\n"
              "for path in sys.argv[1:]:\n    validate(yaml.safe_load(open(path)), check_paths=False)\n"
              "heavy = ('numpy', 'polars', 'pyarrow', 'torch', 'pandas', 'scipy', 'sklearn', 'transformers')\n"
              "print(sorted(m for m in heavy if m in sys.modules))\n")
    configs = [ROOT / "config.yaml", *sorted((ROOT / "resources").glob("*/study.yaml"))]
    assert any("settheory" in yaml.safe_load(p.read_text()) for p in configs)
    out = subprocess.run([sys.executable, "-c", script, *map(str, configs)], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


SHIPPED_STUDIES = sorted([*ROOT.glob("resources/*/study*.yaml"), *ROOT.glob("resources/configs/*.yaml")])


@pytest.mark.parametrize("path", SHIPPED_STUDIES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_study_keeps_the_baseline_and_says_how_to_run_it(path):
    """Every verdict is against the surface-form yardstick: a study without `form_only` (family
    surface_form) said "no baseline" on every figure, unless its comments say why it has none. Its
    comments show `make run CONFIG=<this file>` (the venv and NLTK_DATA set), not raw snakemake."""
    text = path.read_text()
    config = yaml.safe_load(text)
    comments = [line.split("#", 1)[1] for line in text.splitlines() if line.lstrip().startswith("#")]
    baseline = (config.get("models") or {}).get("form_only") or {}
    assert baseline.get("family") == "surface_form" or any("No form_only here:" in c for c in comments), \
        f"{path.name}: no `form_only: {{family: surface_form}}` model, and no comment `No form_only here: <why>`"
    name = str(path.relative_to(ROOT))
    assert any(f"make run CONFIG={name}" in c or f'make run CONFIG="config.yaml {name}"' in c for c in comments), \
        f"{name}: its comments do not show `make run CONFIG={name}`"
    assert not [c for c in comments if c.strip().startswith("snakemake ")], f"{name}: a raw snakemake command"


def test_triplet_defaults_are_filled():
    cfg = validate(changed([((TRIPLETS + ("fixed_point_pivot",)), DELETE), ((TRIPLETS + ("bootstrap_b",)), DELETE)]))
    t = cfg["triplets"]
    assert (t["fixed_point_pivot"], t["passive_agent"], t["clause_max_tokens"], t["bootstrap_b"]) == (3, True, 30, 1000)
    # template triplets resample subjects x verbs; argument sensitivity follows the seed's figures
    assert (t["bootstrap_unit"], t["argument_sensitivity_scoring"]) == ("clusters", "strict")
    assert t["sick_partners"] == {"min_relatedness": 4.6, "max_word_distance": 1, "min_similarity": 0.85,
                                  "match": "reference"}
    assert "templates" not in t  # its defaults live in workflow_scripts/triplets/datasets.py
    assert cfg["nltk_download"] == "auto"
    assert validate(DEFAULT)["triplets"] == t  # config.yaml states the defaults it sets
    # a minimal section: sources default to none, a partial sick_partners gets the rest
    cfg = validate(changed([(TRIPLETS, {"datasets": {"argument_sensitivity": {}}, "fixed_point_pivot": "seeded",
                                        "sick_partners": {"min_relatedness": 4.0}})]))
    assert cfg["triplets"]["sources"] == {} and cfg["triplets"]["fixed_point_pivot"] == "seeded"
    assert cfg["triplets"]["sick_partners"] == {"min_relatedness": 4.0, "max_word_distance": 1, "min_similarity": 0.85,
                                                "match": "reference"}


def test_max_chars_default_is_the_readers():
    # ingest() called without the key (tests, scripts) must behave as a validated config does
    schema = load_schema()
    assert schema["properties"]["sources"]["additionalProperties"]["properties"]["max_chars"]["default"] \
        == DEFAULT_MAX_CHARS == 10000


# the retrieval section's sets in config.yaml: telecom_qa (beir, path), specs_sample (3gpp), bitext_en_nl (tatoeba)
RET = ("retrieval",)
RDS = ("retrieval", "datasets")
TQA = RDS + ("telecom_qa",)
SPS = RDS + ("specs_sample",)
BIT = RDS + ("bitext_en_nl",)

# the set-theoretic probe's section and the top-level `articles` section
ST = ("settheory",)
ST_SET = ST + ("datasets", "news")
ARTICLES = ("articles", "settheory_news")
# config.yaml imports its news samples (`file:`); the cases on a built sample set or an article
# collection start from the SmolLM2 study's built set `news` and its collection, added to the default
STUDY_ST = yaml.safe_load((ROOT / "resources" / "settheory" / "study.yaml").read_text())
BUILT_NEWS = [(ARTICLES, STUDY_ST["articles"]["settheory_news"]), (ST_SET, STUDY_ST["settheory"]["datasets"]["news"]),
              (ST + ("generators",), STUDY_ST["settheory"]["generators"])]


def on_built_news(cases: list) -> list:
    """The cases with BUILT_NEWS before the edits of each one that edits ST_SET or ARTICLES."""
    touches = lambda path: path[:len(ST_SET)] == ST_SET or path[:len(ARTICLES)] == ARTICLES
    return [(i, BUILT_NEWS + edits if any(touches(path) for path, _ in edits) else edits, f) for i, edits, f in cases]


# ---- every constraint of every schema, broken by a generated case (tests/schema_cases.py) ----------
# One test per kind of constraint, one case per constraint (id: the config keys it applies to, `*`
# for each entry of a mapping and `[]` for each item of a list, then where it sits there). Each
# message must name the case's key and say what is expected there: the schema node's x-expected, or
# the form config.py derives (`_expected`), which must state the bound that was broken.

CASES = schema_cases.cases()
KIND_OF = {"type": "type", "minimum": "range", "maximum": "range", "exclusiveMinimum": "range",
           "exclusiveMaximum": "range", "pattern": "pattern", "enum": "choice", "const": "choice",
           "minLength": "size", "maxLength": "size", "minItems": "size", "maxItems": "size", "minProperties": "size",
           "maxProperties": "size", "uniqueItems": "size", "additionalProperties": "unknown key",
           "required": "missing key", "oneOf": "combination", "anyOf": "combination", "not": "combination"}


def kind_of(constraint) -> str:
    return "key name" if constraint.on_keys else KIND_OF[constraint.keyword]


def cases_of(kind: str):
    return [pytest.param(case, id=case.constraint.id) for case in CASES
            if case.config is not None and kind_of(case.constraint) == kind]


def line_about(case, words: str) -> str:
    """The message's line that names the case's key and holds `words`."""
    message = message_of(case.config)
    lines = [line.strip() for line in message.splitlines()[1:]]
    found = [line for line in lines if line.startswith(f"config key `{case.key}`: ") and words in line]
    assert found, f"no line naming `{case.key}` with {words!r} in:\n{message}"
    return found[0]


# What a derived expected form says for each keyword (its node has no x-expected)
STATED = {
    "type": lambda n: n["type"] if isinstance(n["type"], list) else [n["type"]],
    "minimum": lambda n: [f">= {n['minimum']}"],
    "exclusiveMinimum": lambda n: [f"> {n['exclusiveMinimum']}"],
    "maximum": lambda n: [f"<= {n['maximum']}"],
    "exclusiveMaximum": lambda n: [f"< {n['exclusiveMaximum']}"],
    "pattern": lambda n: [f"matching {n['pattern']}"],
    "enum": lambda n: [repr(v) for v in n["enum"]],
    "const": lambda n: [repr(n["const"])],
    "minLength": lambda n: [f"at least {n['minLength']} character(s)"],
    "maxLength": lambda n: [f"at most {n['maxLength']} character(s)"],
    "minItems": lambda n: [f"at least {n['minItems']} item(s)"],
    "maxItems": lambda n: [f"at most {n['maxItems']} item(s)"],
    "minProperties": lambda n: [f"at least {n['minProperties']} key(s)"],
    "maxProperties": lambda n: [f"at most {n['maxProperties']} key(s)"],
    "uniqueItems": lambda n: ["without repeats"],
}


def assert_states_the_expected_form(case, line: str):
    node, keyword = case.constraint.node, case.constraint.keyword
    assert "; expected " in line, line
    expected = line.split("; expected ", 1)[1]
    if "x-expected" in node:
        assert expected == node["x-expected"], line
    else:
        missing = [part for part in STATED[keyword](node) if part not in expected]
        assert not missing, f"the expected form does not say {missing}: {line}"


@pytest.mark.parametrize("case", cases_of("type"))
def test_a_value_of_the_wrong_type_is_refused_naming_the_type(case):
    line = line_about(case, case.words)
    if case.constraint.node["type"] == "object":  # its x-expected, if any, is about what goes inside
        assert line.endswith("; expected a mapping of keys to values"), line
    else:
        assert_states_the_expected_form(case, line)


@pytest.mark.parametrize("case", cases_of("range"))
def test_a_number_out_of_range_is_refused_naming_the_bound(case):
    assert_states_the_expected_form(case, line_about(case, case.words))


@pytest.mark.parametrize("case", cases_of("pattern"))
def test_a_text_not_matching_is_refused_naming_the_pattern(case):
    assert_states_the_expected_form(case, line_about(case, case.words))


@pytest.mark.parametrize("case", cases_of("choice"))
def test_a_value_not_offered_is_refused_naming_the_choices(case):
    assert_states_the_expected_form(case, line_about(case, case.words))


@pytest.mark.parametrize("case", cases_of("size"))
def test_a_list_text_or_mapping_of_the_wrong_size_is_refused_naming_the_size(case):
    assert_states_the_expected_form(case, line_about(case, case.words))


@pytest.mark.parametrize("case", cases_of("key name"))
def test_a_key_the_mapping_refuses_is_named_with_the_keys_it_takes(case):
    line = line_about(case, f"is not a valid name ({case.words})")
    assert_states_the_expected_form(case, line)


@pytest.mark.parametrize("case", cases_of("unknown key"))
def test_an_unknown_key_is_refused_listing_the_allowed_keys(case):
    line = line_about(case, f"{schema_cases.UNKNOWN_KEY!r} was unexpected")
    assert line.endswith(f"(allowed: {', '.join(sorted(case.constraint.node['properties']))})"), line


@pytest.mark.parametrize("case", cases_of("missing key"))
def test_a_missing_key_is_named(case):
    line = line_about(case, case.words)  # "'<key>' is a required property"
    if "then" in case.constraint.tail:  # required because of another key's value: the `then` says why
        assert line.endswith(f"; expected {case.constraint.node['x-expected']}"), line


@pytest.mark.parametrize("case", cases_of("combination"))
def test_a_combination_of_keys_not_allowed_is_refused_saying_what_is_needed(case):
    node = case.constraint.node
    # what a oneOf, anyOf or not asks for cannot be derived: its node says it
    assert "x-expected" in node, f"{case.constraint.id}: no x-expected beside the {case.constraint.keyword}"
    assert line_about(case, "needs ") == f"config key `{case.key}`: needs {node['x-expected']}"


# How each mechanism of tests/schema_cases.py may break a constraint
MECHANISM_FOR = {
    "bad key": lambda c: c.on_keys,
    "unknown key": lambda c: c.keyword == "additionalProperties",
    "key dropped": lambda c: c.keyword in ("required", "oneOf", "anyOf"),
    "key added": lambda c: c.keyword == "not",
    "bad value": lambda c: not c.on_keys and c.keyword not in ("additionalProperties", "required", "not"),
    "by hand": lambda c: c.id in schema_cases.HAND_BREAKS,
}


def test_every_constraint_of_every_schema_has_a_case_whose_message_is_checked():
    schema = load_schema()
    found = schema_cases.constraints(schema)
    ids = [c.id for c in found]
    assert len(ids) == len(set(ids)), "two constraints share an id: the test ids would not tell them apart"
    # the shared schema's sections and each declared probe's and stage's, found through the registry
    for section in ["models", "sources", *(p.name for p in probes.declarations())]:
        assert any(c.steps[:1] == (section,) for c in found), section
    assert [case.constraint for case in CASES] == found
    assert [case.constraint.id for case in CASES if case.config is None] == [], \
        "no mechanism breaks these alone: add a context to schema_cases.CONTEXTS, or a break to HAND_BREAKS"
    assert {kind_of(c) for c in found} <= {"type", "range", "pattern", "choice", "size", "key name", "unknown key",
                                           "missing key", "combination"}  # each kind has its test above
    # which mechanism broke which constraint: the report lists each (PYTHONPATH=. python tests/schema_cases.py)
    assert [(case.constraint.id, case.mechanism) for case in CASES
            if not MECHANISM_FOR[case.mechanism](case.constraint)] == []
    # a break that breaks more at its key: only a wrong type, where a oneOf/not/if of the same object
    # cannot tell a non-mapping apart
    assert [case.constraint.id for case in CASES if not case.alone and case.constraint.keyword != "type"] == []
    # the hand table holds only what the mechanisms cannot break
    for cid in schema_cases.HAND_BREAKS:
        assert cid in ids, f"HAND_BREAKS: no constraint {cid}"
        constraint = found[ids.index(cid)]
        assert schema_cases.break_constraint(constraint, hand={}).config is None, f"HAND_BREAKS: {cid} is not needed"


def test_the_generator_knows_every_keyword_of_the_schema():
    # a keyword it neither counts nor goes into could hide a constraint without a case
    assert schema_cases.unknown_keywords() == set()


def test_the_contexts_the_cases_are_made_in_are_a_valid_config():
    validate(schema_cases.BASE)


# Messages that matter beyond one constraint: a rule a value must meet that the generated case (a
# value of another type, a text with a space) does not try, or a message the docs quote.
MESSAGES_THAT_MATTER = [
    # docs/adding-a-probe.md quotes it
    ('documented_example', [(MINILM + ('batch_size',), 0)],
     "config key `models.minilm.batch_size`: 0 is less than the minimum of 1; expected integer >= 1"),
    # a `.` would be read as `<probe>.<dataset>`, a probe dataset's text set
    ('corpus_name_dot', [(('corpora', 'a.b'), {'source': 'skills_nl', 'language': 'nl'})],
     "config key `corpora.a.b`: 'a.b' is not a valid name ('a.b' does not match"),
    # adapt is laid out like a probe but is a stage: no model runs it
    ('probe_is_stage', [(MINILM + ('probes',), ['csc', 'adapt'])],
     "config key `models.minilm.probes.1`: 'adapt' is not one of ['"),
    # the constraints inside a oneOf's branches (the generated case breaks every branch by its type)
    ('pivot_zero', [(TRIPLETS + ('fixed_point_pivot',), 0)],
     "config key `triplets.fixed_point_pivot`: needs a word index >= 1 (the reference code's 3) or `seeded`"),
    ('triplets_bootstrap_unit', [(TRIPLETS + ('bootstrap_unit',), 'subjects')],
     "config key `triplets.bootstrap_unit`: 'subjects' is not one of ['items', 'clusters']"),
    ('eval_split_repeated', [(RET + ('eval_split',), ['test', 'test'])],
     "config key `retrieval.eval_split`: needs a split name or a list of them"),
    ('pca_components_share_above_one', [(RET + ('isotropy', 'pca_components'), 1.5)],
     "config key `retrieval.isotropy.pca_components`: needs a number of principal axes (integer >= 1) or the share"),
    # both ways of naming a file at once (the generated case gives neither)
    ('source_path_and_url', [(BITEXT + ('url',), 'https://h/x'), (BITEXT + ('sha256',), 'unpinned')],
     'config key `sources.en_nl_sample`: needs either `path` (a local file, no `sha256`) or `url` together with `sha256`'),
    # the sentences in order: {second} before {first} is refused
    ('settheory_prompt_order', [(('settheory', 'prompts', 'mine'), {'user': '{second} then {first}'})],
     "config key `settheory.prompts.mine.user`: '{second} then {first}' does not match"),
]


MESSAGES_THAT_MATTER = on_built_news(MESSAGES_THAT_MATTER)


@pytest.mark.parametrize("edits,fragment", [pytest.param(e, f, id=i) for i, e, f in MESSAGES_THAT_MATTER])
def test_messages_that_matter(edits, fragment):
    assert fragment in message_of(changed(edits))


def test_a_model_may_run_every_probe_and_no_stage():
    """models.<name>.probes offers the probes (csc ... retrieval, domain_shift), not adapt: adapt
    trains models, it does not probe one."""
    from workflow_scripts.config import load_schema, probe_names
    from workflow_scripts.probes import get
    offered = load_schema()["properties"]["models"]["additionalProperties"]["properties"]["probes"]["items"]["enum"]
    assert set(offered) == set(probe_names()) and "adapt" not in offered and get("adapt").is_stage
    assert {"csc", "triplets", "montague", "settheory", "retrieval", "domain_shift"} <= set(offered)


# What the schema cannot say, checked in workflow_scripts/config.py: one case per branch.
def source(**spec):
    return [(("sources", "s"), spec), (("corpora", "s_en"), {"source": "s", "language": "en"})]


REFERENCE_CASES = [
    ("columns_for_lines", source(format="lines", path="p", languages=["en"], columns={"en": 0}),
     "config key `sources.s.columns`: a lines source takes no columns (they are for bitext, tsv, csv)"),
    ("columns_other_languages", source(format="bitext", path="p", languages=["en", "nl"], columns={"en": 0, "de": 1}),
     "config key `sources.s.columns`: has languages ['de', 'en']; expected one column for each of the source's "
     "languages ['en', 'nl']"),
    ("columns_missing_language", source(format="tsv", path="p", languages=["en", "nl"], columns={"en": 0}),
     "config key `sources.s.columns`: has languages ['en']; expected one column for each"),
    ("csv_column_index", [(CSV + ("columns",), {"nl": 1})],
     "config key `sources.skills_nl.columns.nl`: 1 is an index; a csv source names its columns as in its header line"),
    ("bitext_column_name", [(BITEXT + ("columns",), {"en": "en", "nl": 1})],
     "config key `sources.en_nl_sample.columns.en`: 'en' is a name, but a bitext source without `header: true` has "
     "none; expected a column index (0 = first), or `format: tsv` with `header: true`"),
    ("tsv_column_name_without_header", source(format="tsv", path="p", languages=["en"], columns={"en": "text"}),
     "config key `sources.s.columns.en`: 'text' is a name, but a tsv source without `header: true` has none"),
    ("tsv_column_name_header_false", source(format="tsv", path="p", languages=["en"], header=False, columns={"en": "t"}),
     "config key `sources.s.columns.en`: 't' is a name, but a tsv source without `header: true` has none"),
    ("same_column_twice", [(BITEXT + ("columns",), {"en": 1, "nl": 1})],
     "config key `sources.en_nl_sample.columns`: two languages read the same column ({'en': 1, 'nl': 1})"),
    ("csv_without_columns", [(CSV + ("columns",), DELETE)],
     "config key `sources.skills_nl.columns`: a csv source needs columns, e.g. {nl: label}"),
    ("csv_header_false", [(CSV + ("header",), False)],
     "config key `sources.skills_nl.header`: a csv source always has a header line (it names the columns)"),
    ("bitext_header_true", [(BITEXT + ("header",), True)],
     "config key `sources.en_nl_sample.header`: a bitext source has no header line; only tsv takes `header: true`"),
    ("fields_with_header", source(format="tsv", path="p", languages=["en"], header=True, fields=3),
     "config key `sources.s.fields`: only a bitext or tsv source without a header takes `fields` (a header line "
     "gives the number of fields)"),
    ("fields_for_csv", [(CSV + ("fields",), 3)],
     "config key `sources.skills_nl.fields`: only a bitext or tsv source without a header takes `fields`"),
    ("fields_below_default_columns", [(BITEXT + ("fields",), 1)],
     "config key `sources.en_nl_sample.fields`: 1 field(s), but column 1 is read; expected at least 2"),
    ("fields_below_columns", source(format="tsv", path="p", languages=["en"], columns={"en": 4}, fields=4),
     "config key `sources.s.fields`: 4 field(s), but column 4 is read; expected at least 5"),
    ("files_for_bitext", [(BITEXT + ("files",), {"en": "a.en", "nl": "a.nl"})],
     "config key `sources.en_nl_sample.files`: only a moses source has files (zip members)"),
    ("moses_files_other_languages", source(format="moses", path="p.zip", languages=["en", "nl"],
                                           files={"en": "x.en", "de": "x.de"}),
     "config key `sources.s.files`: has languages ['de', 'en']; expected one zip member for each of the source's "
     "languages ['en', 'nl']"),
    ("lines_two_languages", [(BITEXT + ("format",), "lines")],
     "config key `sources.en_nl_sample.languages`: a lines source has exactly one language"),
    # a study without sources and corpora is valid (triplets, Montague, retrieval need none); corpora need their sources
    ("sources_empty", [(("sources",), {})],
     "config key `corpora.skills_nl.source`: no source named 'skills_nl'"),
    ("corpora_empty", [(("corpora",), {})],
     "config key `models.tfidf_paper.probes`: csc reads corpora, but the study has none"),
    ("compare_against_unknown", [(("compare", "against"), "nobody")],
     "config key `compare.against`: no model named 'nobody'; expected `default`, `all_pairs` or one of the models"),
    ("corpus_source", [(PC_EN + ("source",), "nope")],
     "config key `corpora.pc_en.source`: no source named 'nope' (sources: en_nl_sample, skills_nl)"),
    ("corpus_language", [(PC_EN + ("language",), "de")],
     "config key `corpora.pc_en.language`: 'de' is not among the languages ['en', 'nl'] of source 'en_nl_sample'"),
    ("match_unknown", [(PC_EN + ("match_lengths_of",), "missing")],
     "config key `corpora.pc_en.match_lengths_of`: no corpus named 'missing'"),
    ("match_matched", [(PC_EN + ("match_lengths_of",), "pc_nl_filtered")],
     "config key `corpora.pc_en.match_lengths_of`: 'pc_nl_filtered' must be a corpus that is not itself "
     "length-matched"),
    ("match_itself", [(PC_EN + ("match_lengths_of",), "pc_en")],
     "config key `corpora.pc_en.match_lengths_of`: 'pc_en' must be a corpus that is not itself length-matched"),
    ("min_above_max", [(PC_EN + ("min_tokens",), 5), (PC_EN + ("max_tokens",), 4)],
     "config key `corpora.pc_en`: min_tokens 5 > max_tokens 4"),
    ("no_fuzz_terms", [(("csc", "perturb", "fuzz_terms"), {"en": ["a"]})],
     "config key `csc.perturb.fuzz_terms`: no terms for language 'nl' (needed by corpus 'skills_nl'); expected e.g. "
     "{nl: [...]}"),
    ("no_negation_terms", [(("csc", "perturb", "negation_terms"), {"nl": ["niet"]})],
     "config key `csc.perturb.negation_terms`: no terms for language 'en' (needed by corpus 'pc_en')"),
    ("model_corpus", [(MINILM + ("corpora",), ["pc_en", "pc_fr"])],
     "config key `models.minilm.corpora`: no corpus named 'pc_fr'"),
    ("grid_step_divides_two", [(("csc", "grid_step"), 0.003)],
     "config key `csc.grid_step`: 0.003 does not divide 2; expected a step that divides 2"),
    ("surface_keys_other_family", [(MINILM + ("features",), "words")],
     "config key `models.minilm.features`: read by family surface_form only, not 'sentence_transformers'"),
    ("surface_tokenizer_other_family", [(MINILM + ("tokenizer",), "treebank")],
     "config key `models.minilm.tokenizer`: read by family surface_form only, not 'sentence_transformers'"),
    ("surface_features_contradict_tokenizer",
     [(("models", "f"), {"family": "surface_form", "tokenizer": "treebank", "features": "char_ngrams"})],
     "config key `models.f.features`: 'char_ngrams' contradicts `tokenizer: treebank`, which makes words features; "
     "drop `features`"),
    ("surface_ngram_range_backwards", [(("models", "f"), {"family": "surface_form", "ngram_range": [5, 3]})],
     "config key `models.f.ngram_range`: [5, 3] runs backwards; expected [min_n, max_n] with min_n <= max_n"),
    ("preset_other_family", [(MINILM + ("preset",), "paper")],
     "config key `models.minilm.preset`: presets exist for family tfidf only, not 'sentence_transformers'"),
    ("preset_contradicted", [(("models", "tfidf", "preset"), "paper"), (("models", "tfidf", "fit_on"), "originals_and_variants")],
     "config key `models.tfidf.fit_on`: 'originals_and_variants' contradicts preset 'paper', which sets 'originals'"),
    ("model_dataset", [(MINILM + ("datasets",), ["negation_detection", "sts"])],
     # every probe's datasets, sorted (several probes add theirs): the start of the list is enough
     "config key `models.minilm.datasets`: no probe dataset named 'sts' (configured: ['"),
    ("model_dataset_without_triplets", [(TRIPLETS, DELETE), (MONTAGUE, DELETE), (("retrieval",), DELETE), (ST, DELETE),
                                        (("domain_shift",), DELETE),
                                        (("models", "minilm_static", "datasets"), DELETE),
                                        (MINILM + ("datasets",), ["negation_detection"])],
     "config key `models.minilm.datasets`: no probe dataset named 'negation_detection' (configured: none)"),
    ("triplet_source_name_taken", [(("triplets", "sources", "skills_nl"), {"format": "lines", "path": "p"})],
     "config key `triplets.sources.skills_nl`: the name is taken by `sources.skills_nl`; expected a name of its own"),
    ("file_with_kind", own_triplets(kind="negation_detection"),
     "config key `triplets.datasets.mine.kind`: a dataset read from `file` is not built; drop `kind` or `file`"),
    ("file_with_sources", own_triplets(sources=["sick_sample"]),
     "config key `triplets.datasets.mine.sources`: a dataset read from `file` is not built; drop `sources` or `file`"),
    ("file_with_max_triplets", own_triplets(max_triplets=10),
     "config key `triplets.datasets.mine.max_triplets`: a dataset read from `file` is not built; drop `max_triplets`"),
    ("format_without_file", [(T_DATASET + ("format",), "tsv")],
     "config key `triplets.datasets.negation_detection.format`: only a dataset read from `file` takes `format`"),
    ("columns_without_file", [(T_DATASET + ("columns",), {"s": "a"})],
     "config key `triplets.datasets.negation_detection.columns`: only a dataset read from `file` takes `columns`"),
    ("scoring_without_file", [(T_DATASET + ("scoring",), "strict")],
     "config key `triplets.datasets.negation_detection.scoring`: only a dataset read from `file` takes `scoring`"),
    ("unknown_dataset", [(("triplets", "datasets", "sts"), {"sources": ["sick_sample"]})],
     "config key `triplets.datasets.sts`: 'sts' is not a built-in dataset; expected `kind: <one of negation_detection, "
     "negation_variants, clause_relatedness, argument_sensitivity, fixed_point_reorder>` or `file: <your triplets>`"),
    ("templates_with_sources", [(("triplets", "datasets", "argument_sensitivity", "sources"), ["sick_sample"])],
     "config key `triplets.datasets.argument_sensitivity.sources`: argument_sensitivity is built from templates "
     "(triplets.templates), not from sources"),
    ("built_without_sources", [(("triplets", "datasets", "negation_variants"), {})],
     "config key `triplets.datasets.negation_variants.sources`: negation_variants needs sources: names under "
     "triplets.sources of format lines, msrp, sick, treebank"),
    ("kind_without_sources", [(("triplets", "datasets", "reported"), {"kind": "clause_relatedness"})],
     "config key `triplets.datasets.reported.sources`: clause_relatedness needs sources"),
    ("unknown_triplet_source", [(T_DATASET + ("sources",), ["sick_sample", "wsj"])],
     "config key `triplets.datasets.negation_detection.sources`: no source 'wsj' under triplets.sources"),
    ("triplet_source_format", [(("triplets", "datasets", "fixed_point_reorder", "sources"), ["reported_speech"])],
     "config key `triplets.datasets.fixed_point_reorder.sources`: 'reported_speech' is a lines source; "
     "fixed_point_reorder takes sick"),
    # ---- the retrieval section: what each set kind reads, splits, k (config.py, _retrieval_problems) ----
    ("r_key_of_another_kind", [(TQA + ("columns",), {"query": 0, "corpus": 1})],
     "config key `retrieval.datasets.telecom_qa.columns`: a beir set does not read `columns` (it reads eval_split, path, "
     "sha256, splits, url)"),
    ("r_path_and_url", [(TQA + ("url",), "https://h/set.zip"), (TQA + ("sha256",), "unpinned")],
     "config key `retrieval.datasets.telecom_qa`: needs `path` (a local file or folder), or `url` with `sha256`"),
    ("r_no_location", [(TQA + ("path",), DELETE)],
     "config key `retrieval.datasets.telecom_qa`: needs `path` (a local file or folder), or `url` with `sha256`"),
    ("r_url_without_sha256", [(TQA + ("path",), DELETE), (TQA + ("url",), "https://h/set.zip")],
     "config key `retrieval.datasets.telecom_qa`: needs `path` (a local file or folder), or `url` with `sha256`"),
    ("r_3gpp_without_sources", [(SPS + ("sources",), DELETE)],
     "config key `retrieval.datasets.specs_sample.sources`: a 3gpp set needs sources"),
    ("r_3gpp_sources_empty", [(SPS + ("sources",), {})],
     "config key `retrieval.datasets.specs_sample.sources`: needs `path` (a local file or folder), or `url` with `sha256`"),
    ("r_teleqna_not_asked_for", [(SPS + ("teleqna",), {"path": "t.zip"})],
     "config key `retrieval.datasets.specs_sample.teleqna`: settings for `teleqna` questions, but `questions` "
     "(templates) does not ask for them"),
    ("r_teleqna_without_release", [(SPS + ("questions",), ["templates", "teleqna"])],
     "config key `retrieval.datasets.specs_sample.teleqna`: `teleqna` questions need the release"),
    ("r_teleqna_without_location", [(SPS + ("questions",), ["teleqna"]), (SPS + ("teleqna",), {"min_margin": 0.3})],
     "config key `retrieval.datasets.specs_sample.teleqna`: needs `path` (a local file or folder), or `url` with `sha256`"),
    ("r_eval_split_of_set", [(BIT + ("eval_split",), "train")],
     "config key `retrieval.datasets.bitext_en_nl.eval_split`: set 'bitext_en_nl' (tatoeba) has no split 'train'; "
     "expected one of test"),
    ("r_eval_split_default", [(RET + ("eval_split",), "dev")],
     "config key `retrieval.eval_split`: set 'bitext_en_nl' (tatoeba) has no split 'dev'"),
    ("r_eval_split_beir_splits", [(TQA + ("splits",), ["test"]), (TQA + ("eval_split",), ["test", "dev"])],
     "config key `retrieval.datasets.telecom_qa.eval_split`: set 'telecom_qa' (beir) has no split 'dev'; expected one of test"),
    ("r_k_min_above_max", [(RET + ("k",), {"min": 50, "max": 10, "step": 5})],
     "config key `retrieval.k`: min 50 > max 10"),
    ("r_k_above_top_k", [(RET + ("top_k",), 50)],
     "config key `retrieval.k.max`: 100 needs at least 100 retrieved documents, but `retrieval.top_k` is 50"),
    ("r_table_k_not_a_k", [(RET + ("table_k",), 7)],
     "config key `retrieval.table_k`: 7 is not among the k of `retrieval.k` (5, 10, 15"),
]


def test_surface_form_tokenizer_and_the_older_features_key_are_accepted():
    entries = {"older_words": {"features": "words"}, "older_trigrams": {"features": "char_ngrams"},
               "treebank": {"tokenizer": "treebank"}, "treebank_words": {"tokenizer": "treebank", "features": "words"},
               "trigrams_twice": {"tokenizer": "char_ngrams", "features": "char_ngrams"}}
    validate(changed([(("models", f"form_{name}"), {"family": "surface_form", **entry})
                      for name, entry in entries.items()]))


def test_the_default_surface_form_baseline_splits_contractions_treebank_style():
    assert validate(changed([]))["models"]["form_only"]["tokenizer"] == "treebank"


def test_tfidf_paper_preset_sets_the_papers_settings():
    cfg = validate(changed([(("models", "tfidf_paper"), {"family": "tfidf", "preset": "paper"})]))
    assert cfg["models"]["tfidf_paper"]["token_pattern"] == r"(?u)\b\w\w+\b"  # scikit-learn's default
    assert cfg["models"]["tfidf_paper"]["fit_on"] == "originals"
    cfg = validate(changed([(("models", "tfidf"), {"family": "tfidf", "preset": "paper", "fit_on": "originals"})]))
    assert cfg["models"]["tfidf"]["fit_on"] == "originals"  # restating a preset's value is fine
    from sklearn.feature_extraction.text import TfidfVectorizer
    assert TfidfVectorizer().token_pattern == cfg["models"]["tfidf"]["token_pattern"]


# The set-theoretic probe, the `articles` section and models' gguf_file (config.py: _settheory_problems).
REFERENCE_CASES += [
    ("articles_name_taken", [(("articles", "en_nl_sample"), {"format": "hf", "path": "p"})],
     "config key `articles.en_nl_sample`: the name is taken by `sources.en_nl_sample`; expected a name of its own"),
    ("articles_file_type_for_story", [(ARTICLES + ("file_type",), "csv")],
     "config key `articles.settheory_news.file_type`: only an `hf` collection has a file type"),
    ("gguf_file_other_family", [(MINILM + ("gguf_file",), "m.gguf")],
     "config key `models.minilm.gguf_file`: read by family transformers only, not 'sentence_transformers'"),
    ("prompt_and_prompt_name_for_a_role", [(MINILM + ("prompts",), {"query": "q: "}),
                                           (MINILM + ("prompt_name",), {"query": "query", "document": "passage"})],
     "config key `models.minilm.prompts`: role(s) query also have a `prompt_name`; expected one prompt per role"),
    ("st_set_named_samples", [(ST + ("datasets", "samples"), {"file": "s.csv"})],
     "config key `settheory.datasets.samples`: `samples` is reserved"),
    ("st_set_without_source", [(ST_SET, {"generator": "smollm2"})],
     "config key `settheory.datasets.news`: needs exactly one of `articles` (build the samples from an article "
     "collection) or `file` (import a table of samples)"),
    ("st_set_with_both", [(ST_SET + ("file",), "s.csv")],
     "config key `settheory.datasets.news`: needs exactly one of `articles`"),
    ("st_import_max_articles", [(ST + ("datasets", "stab"), {"file": "s.csv", "max_articles": 3})],
     "config key `settheory.datasets.stab.max_articles`: an imported sample set (`file`) reads no articles"),
    ("st_built_format", [(ST_SET + ("format",), "csv")],
     "config key `settheory.datasets.news.format`: only an imported sample set (`file`) takes `format`"),
    ("st_unknown_collection", [(ST_SET + ("articles",), "cnn")],
     "config key `settheory.datasets.news.articles`: no collection 'cnn' under `articles` (configured: "
     "['settheory_news'])"),
    ("st_unknown_generator", [(ST_SET + ("generator",), "gpt4")],
     "config key `settheory.datasets.news.generator`: no generator 'gpt4' (settheory.generators and the built-in: "
     "smollm2)"),
    ("st_unknown_prompt", [(ST_SET + ("prompt",), "terse")],
     "config key `settheory.datasets.news.prompt`: no prompt 'terse' (settheory.prompts and the built-in: "
     "fuse_fewshot)"),
    # prompts are strict templates, checked at plan time (generator.fill renders them)
    ("st_prompt_lone_brace", [(ST + ("prompts", "mine"), {"user": "Sentence 1: {first} {\nSentence 2: {second}"})],
     "config key `settheory.prompts.mine.user`: unmatched '{' in format spec (write a literal brace as {{ or }})"),
    ("st_prompt_lone_closing_brace", [(ST + ("prompts", "mine"), {"user": "{first} } {second}"})],
     "config key `settheory.prompts.mine.user`: Single '}' encountered"),
    ("st_prompt_positional", [(ST + ("prompts", "mine"), {"user": "{first} {0} {second}"})],
     "config key `settheory.prompts.mine.user`: replacement field {0} is not one of the template's fields "
     "({first}, {second}"),
    ("st_prompt_attribute", [(ST + ("prompts", "mine"), {"user": "{first.__class__} {first} {second}"})],
     "config key `settheory.prompts.mine.user`: replacement field {first.__class__} is not one of"),
    ("st_prompt_index", [(ST + ("prompts", "mine"), {"user": "{first[0]} {first} {second}"})],
     "config key `settheory.prompts.mine.user`: replacement field {first[0]} is not one of"),
    ("st_prompt_other_field", [(ST + ("prompts", "mine"), {"user": "{first} {third} {second}"})],
     "config key `settheory.prompts.mine.user`: replacement field {third} is not one of"),
    ("st_prompt_system_field", [(ST + ("prompts", "mine"), {"system": "Fuse {first}.", "user": "{first} {second}"})],
     "config key `settheory.prompts.mine.system`: replacement field {first} is not one of the template's fields "
     "(none; a literal brace is written {{ or }}); the system text and shots take no field"),
    ("st_prompt_shot_brace", [(ST + ("prompts", "mine"), {"shots": [["a {", "b"]], "user": "{first} {second}"})],
     "config key `settheory.prompts.mine.shots.0.0`: Single '{' encountered"),
    ("st_min_above_max_words", [(ST_SET + ("min_words",), 20), (ST_SET + ("max_words",), 10)],
     "config key `settheory.datasets.news`: min_words 20 > max_words 10"),
    ("st_unknown_filter_encoder", [(ST + ("filter", "encoders"), ["minilm", "labse"])],
     "config key `settheory.filter.encoders`: no model 'labse' under `models`"),
    ("st_fixed_bounds_order", [(ST + ("fixed_bounds",), {"c1": {"cosine": [[-0.5, 0.5], [0.3, 0.3]]}})],
     "config key `settheory.fixed_bounds.c1.cosine`: [0.3, 0.3] is not [low, high] with low < high"),
    ("st_fixed_delta_order", [(ST + ("fixed_bounds",), {"c4": {"l2": [1.0, -1.0]}})],
     "config key `settheory.fixed_bounds.c4.l2`: [1.0, -1.0] is not [low, high] with low < high"),
]


# the adapt and domain_shift sections' cross-checks (tests/adapt/test_schema.py)
from adapt.test_schema import ADAPT_REFERENCE_CASES  # noqa: E402

REFERENCE_CASES += ADAPT_REFERENCE_CASES

REFERENCE_CASES += [
    ("where_for_bitext", [(BITEXT + ("where",), {"0": ["x"]})],
     "config key `sources.en_nl_sample.where`: a bitext source takes no row filters (they are for tsv and csv sources)"),
    ("where_name_without_header", source(format="tsv", path="p", languages=["en"], where={"evaluation": ["V"]}),
     "config key `sources.s.where.evaluation`: 'evaluation' is a name, but a tsv source without `header: true` has "
     "none; expected a column index (0 = first)"),
]


REFERENCE_CASES = on_built_news(REFERENCE_CASES)


@pytest.mark.parametrize("edits,fragment", [pytest.param(e, f, id=i) for i, e, f in REFERENCE_CASES])
def test_cross_checks_name_the_key(edits, fragment):
    assert fragment in message_of(changed(edits))


@pytest.mark.parametrize("spec", [
    pytest.param({"format": "tsv", "header": True, "languages": ["en"], "columns": {"en": "en"}}, id="tsv_names"),
    pytest.param({"format": "tsv", "header": True, "languages": ["en"], "columns": {"en": 2}}, id="tsv_header_index"),
    pytest.param({"format": "tsv", "languages": ["en"], "columns": {"en": 2}, "fields": 3}, id="tsv_fields"),
    pytest.param({"format": "bitext", "languages": ["en", "nl"], "columns": {"en": 1, "nl": 0}}, id="bitext_swapped"),
    pytest.param({"format": "bitext", "languages": ["en", "nl"], "fields": 5, "max_chars": 500}, id="bitext_fields"),
    pytest.param({"format": "csv", "header": True, "languages": ["en"], "columns": {"en": "text"}}, id="csv_header"),
    pytest.param({"format": "moses", "languages": ["nl", "en"], "files": {"en": "a.en", "nl": "a.nl"}}, id="moses"),
    pytest.param({"format": "tmx", "languages": ["en", "nl"], "header": False}, id="tmx"),
])
def test_sources_that_their_reader_can_read_are_accepted(spec):
    cfg = validate(changed([(("sources", "s"), {**spec, "path": "p"}),
                            (("corpora", "s_en"), {"source": "s", "language": "en"})]))
    assert cfg["sources"]["s"]["max_chars"] == spec.get("max_chars", 10000)


def test_every_numeric_setting_has_both_bounds():
    """Every integer or number a config may set (the shared schema's and every probe's) has a lower
    and an upper bound, so that a typo (`backoff_s: 1e6`, `.inf`) is refused naming the key instead
    of sleeping, allocating or looping for ever. The values a `where` filter matches are data."""
    unbounded = []

    def walk(node, path):
        if isinstance(node, dict):
            kinds = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
            if {"integer", "number"} & set(kinds) and "where" not in path:
                if not ({"minimum", "exclusiveMinimum"} & set(node) and {"maximum", "exclusiveMaximum"} & set(node)):
                    unbounded.append(".".join(path))
            for key, value in node.items():
                walk(value, [*path, key])
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, [*path, str(i)])

    walk(load_schema(), [])
    assert unbounded == [], f"{len(unbounded)} numeric settings without both bounds: {unbounded}"
    # the issue's case: a backoff of a day is refused naming the key and the bound
    served = {"family": "openai_embeddings", "base_url": "http://127.0.0.1:1/v1", "model": "m", "backoff_s": 86400}
    with pytest.raises(ConfigError, match=r"config key `models\.served\.backoff_s`: 86400 is greater than the maximum "
                                          r"of 60"):
        validate({**DEFAULT, "models": {**DEFAULT["models"], "served": served}})
