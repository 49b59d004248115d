"""Config validation: every branch of the schema and of workflow_scripts/config.py has one bad
config here, and its message must name the key (`config key `a.b.c``) and say what is expected.
`test_every_schema_constraint_has_a_case` fails when a constraint is added to the schema without a
case below."""
import copy
from pathlib import Path

import jsonschema
import pytest
import yaml

from workflow_scripts.config import ConfigError, load_schema, validate
from workflow_scripts.ingest import DEFAULT_MAX_CHARS

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = yaml.safe_load((ROOT / "config.yaml").read_text())
DELETE = object()
BITEXT = ("sources", "en_nl_sample")   # format: bitext, no columns
CSV = ("sources", "skills_nl")         # format: csv, columns {nl: label}
PC_EN = ("corpora", "pc_en")
MINILM = ("models", "minilm")
GRAMMATICAL = ("perturb", "grammatical_negation")
RESOURCES = ("resources",)


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
            node[path[-1]] = value
    return cfg


def message_of(cfg) -> str:
    with pytest.raises(ConfigError) as err:
        validate(cfg)
    return str(err.value)


def test_default_configs_are_valid_and_get_defaults():
    cfg = validate(DEFAULT)
    assert cfg["models"]["minilm"]["store_dtype"] == "float32"
    assert cfg["csc"]["exact_kde_max_n"] == 20000
    assert cfg["perturb"]["grammatical_negation"]["languages"] == ["en"]
    assert {s["max_chars"] for s in cfg["sources"].values()} == {10000}
    for other in ("test_small.yaml", "full_paracrawl.yaml"):
        validate(yaml.safe_load((ROOT / "resources" / "configs" / other).read_text()))


def test_max_chars_default_is_the_readers():
    # ingest() called without the key (tests, scripts) must behave as a validated config does
    schema = load_schema()
    assert schema["properties"]["sources"]["additionalProperties"]["properties"]["max_chars"]["default"] \
        == DEFAULT_MAX_CHARS == 10000


# One case per constraint of the schema: (id, edits, a literal fragment of the message).
SCHEMA_CASES = [
    ('top_type', [((), [])],
     "config key `(top level)`: [] is not of type 'object'"),
    ('top_required', [(('seed',), DELETE)],
     "config key `(top level)`: 'seed' is a required property"),
    ('top_extra', [(('seeds',), 1)],
     "config key `(top level)`: Additional properties are not allowed ('seeds' was unexpected) (allowed: corpora, csc,"),
    ('seed_type', [(('seed',), 'x')],
     "config key `seed`: 'x' is not of type 'integer'; expected integer >= 0"),
    ('seed_min', [(('seed',), -1)],
     'config key `seed`: -1 is less than the minimum of 0'),
    ('shard_rows_type', [(('shard_rows',), 'many')],
     "config key `shard_rows`: 'many' is not of type 'integer'"),
    ('shard_rows_min', [(('shard_rows',), 0)],
     'config key `shard_rows`: 0 is less than the minimum of 1'),
    ('partitions_type', [(('embedding_partitions',), 1.5)],
     "config key `embedding_partitions`: 1.5 is not of type 'integer'"),
    ('partitions_min', [(('embedding_partitions',), 0)],
     'config key `embedding_partitions`: 0 is less than the minimum of 1'),
    ('partitions_max', [(('embedding_partitions',), 4097)],
     'config key `embedding_partitions`: 4097 is greater than the maximum of 4096'),
    ('results_type', [(('results',), 5)],
     "config key `results`: 5 is not of type 'string'"),
    ('sources_type', [(('sources',), [])],
     "config key `sources`: [] is not of type 'object'"),
    ('sources_empty', [(('sources',), {})],
     'config key `sources`: {} should be non-empty'),
    ('source_name_pattern', [(('sources', '-x'), {'format': 'lines', 'path': 'p', 'languages': ['en']})],
     "config key `sources.-x`: '-x' is not a valid name"),
    ('source_name_type', [(('sources', 1), {'format': 'lines', 'path': 'p', 'languages': ['en']})],
     "config key `sources.1`: 1 is not a valid name (1 is not of type 'string')"),
    ('source_type', [(('sources', 'x'), 'a')],
     "config key `sources.x`: 'a' is not of type 'object'"),
    ('source_required', [(BITEXT + ('format',), DELETE)],
     "config key `sources.en_nl_sample`: 'format' is a required property"),
    ('source_extra', [(BITEXT + ('colums',), {})],
     "config key `sources.en_nl_sample`: Additional properties are not allowed ('colums' was unexpected)"),
    ('source_path_and_url', [(BITEXT + ('url',), 'https://h/x'), (BITEXT + ('sha256',), 'unpinned')],
     'config key `sources.en_nl_sample`: needs either `path` (a local file, no `sha256`) or `url` together with `sha256`'),
    ('source_moses_files', [(BITEXT + ('format',), 'moses')],
     "config key `sources.en_nl_sample`: 'files' is a required property; expected `files`: language -> zip member"),
    ('format_enum', [(BITEXT + ('format',), 'xml')],
     "config key `sources.en_nl_sample.format`: 'xml' is not one of ['bitext', 'moses', 'tmx', 'tsv', 'lines', 'csv']"),
    ('path_type', [(BITEXT + ('path',), 3)],
     "config key `sources.en_nl_sample.path`: 3 is not of type 'string'"),
    ('path_empty', [(BITEXT + ('path',), '')],
     "config key `sources.en_nl_sample.path`: '' should be non-empty"),
    ('url_type', [(BITEXT + ('path',), DELETE), (BITEXT + ('url',), 3), (BITEXT + ('sha256',), 'unpinned')],
     "config key `sources.en_nl_sample.url`: 3 is not of type 'string'"),
    ('url_pattern', [(BITEXT + ('path',), DELETE), (BITEXT + ('url',), 'ftp://h/x'), (BITEXT + ('sha256',), 'unpinned')],
     "config key `sources.en_nl_sample.url`: 'ftp://h/x' does not match '^(https?|file)://'"),
    ('sha256_type', [(BITEXT + ('path',), DELETE), (BITEXT + ('url',), 'https://h/x'), (BITEXT + ('sha256',), 5)],
     "config key `sources.en_nl_sample.sha256`: 5 is not of type 'string'; expected 64 hex digits, or `unpinned`"),
    ('sha256_pattern', [(BITEXT + ('path',), DELETE), (BITEXT + ('url',), 'https://h/x'), (BITEXT + ('sha256',), 'abc')],
     "config key `sources.en_nl_sample.sha256`: 'abc' does not match"),
    ('languages_type', [(BITEXT + ('languages',), 'en')],
     "config key `sources.en_nl_sample.languages`: 'en' is not of type 'array'"),
    ('languages_empty', [(CSV + ('languages',), [])],
     'config key `sources.skills_nl.languages`: [] should be non-empty'),
    ('languages_unique', [(BITEXT + ('languages',), ['en', 'en'])],
     "config key `sources.en_nl_sample.languages`: ['en', 'en'] has non-unique elements; expected array with at least 1 item(s) without repeats"),
    ('language_type', [(BITEXT + ('languages',), ['en', 1])],
     "config key `sources.en_nl_sample.languages.1`: 1 is not of type 'string'"),
    ('language_pattern', [(BITEXT + ('languages',), ['en', 'NL'])],
     "config key `sources.en_nl_sample.languages.1`: 'NL' does not match '^[a-z]{2,3}$'"),
    ('columns_type', [(BITEXT + ('columns',), [0, 1])],
     "config key `sources.en_nl_sample.columns`: [0, 1] is not of type 'object'"),
    ('column_type', [(BITEXT + ('columns',), {'en': 0, 'nl': 1.5})],
     "config key `sources.en_nl_sample.columns.nl`: 1.5 is not of type 'integer', 'string'; expected a column index >= 0"),
    ('column_negative', [(BITEXT + ('columns',), {'en': 0, 'nl': -1})],
     'config key `sources.en_nl_sample.columns.nl`: -1 is less than the minimum of 0; expected a column index >= 0'),
    ('column_empty_name', [(CSV + ('columns',), {'nl': ''})],
     "config key `sources.skills_nl.columns.nl`: '' should be non-empty; expected a column index >= 0 (bitext, tsv) or a column name"),
    ('header_type', [(BITEXT + ('header',), 'yes')],
     "config key `sources.en_nl_sample.header`: 'yes' is not of type 'boolean'"),
    ('fields_type', [(BITEXT + ('fields',), '2')],
     "config key `sources.en_nl_sample.fields`: '2' is not of type 'integer'"),
    ('fields_min', [(BITEXT + ('fields',), 0)],
     'config key `sources.en_nl_sample.fields`: 0 is less than the minimum of 1'),
    ('max_chars_type', [(BITEXT + ('max_chars',), '1k')],
     "config key `sources.en_nl_sample.max_chars`: '1k' is not of type 'integer'"),
    ('max_chars_min', [(BITEXT + ('max_chars',), 0)],
     'config key `sources.en_nl_sample.max_chars`: 0 is less than the minimum of 1'),
    ('files_type', [(BITEXT + ('format',), 'moses'), (BITEXT + ('files',), ['a', 'b'])],
     "config key `sources.en_nl_sample.files`: ['a', 'b'] is not of type 'object'"),
    ('file_type', [(BITEXT + ('format',), 'moses'), (BITEXT + ('files',), {'en': 'a', 'nl': 2})],
     "config key `sources.en_nl_sample.files.nl`: 2 is not of type 'string'"),
    ('file_empty', [(BITEXT + ('format',), 'moses'), (BITEXT + ('files',), {'en': 'a', 'nl': ''})],
     "config key `sources.en_nl_sample.files.nl`: '' should be non-empty"),
    ('corpora_type', [(('corpora',), [])],
     "config key `corpora`: [] is not of type 'object'"),
    ('corpora_empty', [(('corpora',), {})],
     'config key `corpora`: {} should be non-empty'),
    ('corpus_name_reserved', [(('corpora', 'shared'), {'source': 'skills_nl', 'language': 'nl'})],
     "config key `corpora.shared`: 'shared' is a reserved name; expected another name"),
    ('corpus_name_pattern', [(('corpora', 'a b'), {'source': 'skills_nl', 'language': 'nl'})],
     "config key `corpora.a b`: 'a b' is not a valid name"),
    ('corpus_name_type', [(('corpora', 7), {'source': 'skills_nl', 'language': 'nl'})],
     "config key `corpora.7`: 7 is not a valid name (7 is not of type 'string')"),
    ('corpus_type', [(('corpora', 'x'), 'pc')],
     "config key `corpora.x`: 'pc' is not of type 'object'; expected a mapping"),
    ('corpus_required', [(PC_EN + ('language',), DELETE)],
     "config key `corpora.pc_en`: 'language' is a required property"),
    ('corpus_extra', [(PC_EN + ('max_token',), 3)],
     "config key `corpora.pc_en`: Additional properties are not allowed ('max_token' was unexpected)"),
    ('corpus_source_type', [(PC_EN + ('source',), 1)],
     "config key `corpora.pc_en.source`: 1 is not of type 'string'"),
    ('corpus_source_pattern', [(PC_EN + ('source',), 'en nl')],
     "config key `corpora.pc_en.source`: 'en nl' does not match"),
    ('corpus_language_type', [(PC_EN + ('language',), 1)],
     "config key `corpora.pc_en.language`: 1 is not of type 'string'"),
    ('corpus_language_pattern', [(PC_EN + ('language',), 'english')],
     "config key `corpora.pc_en.language`: 'english' does not match '^[a-z]{2,3}$'"),
    ('min_tokens_type', [(PC_EN + ('min_tokens',), '1')],
     "config key `corpora.pc_en.min_tokens`: '1' is not of type 'integer'"),
    ('min_tokens_min', [(PC_EN + ('min_tokens',), -1)],
     'config key `corpora.pc_en.min_tokens`: -1 is less than the minimum of 0'),
    ('max_tokens_type', [(PC_EN + ('max_tokens',), 2.5)],
     "config key `corpora.pc_en.max_tokens`: 2.5 is not of type 'integer'"),
    ('max_tokens_min', [(PC_EN + ('max_tokens',), 0)],
     'config key `corpora.pc_en.max_tokens`: 0 is less than the minimum of 1'),
    ('match_type', [(PC_EN + ('match_lengths_of',), ['skills_nl'])],
     "config key `corpora.pc_en.match_lengths_of`: ['skills_nl'] is not of type 'string'"),
    ('match_pattern', [(PC_EN + ('match_lengths_of',), 'skills nl')],
     "config key `corpora.pc_en.match_lengths_of`: 'skills nl' does not match"),
    ('tolerance_type', [(PC_EN + ('length_match_tolerance',), '5%')],
     "config key `corpora.pc_en.length_match_tolerance`: '5%' is not of type 'number'"),
    ('tolerance_min', [(PC_EN + ('length_match_tolerance',), -0.1)],
     'config key `corpora.pc_en.length_match_tolerance`: -0.1 is less than the minimum of 0'),
    ('tolerance_max', [(PC_EN + ('length_match_tolerance',), 1.5)],
     'config key `corpora.pc_en.length_match_tolerance`: 1.5 is greater than the maximum of 1'),
    ('max_sentences_type', [(PC_EN + ('max_sentences',), 'all')],
     "config key `corpora.pc_en.max_sentences`: 'all' is not of type 'integer'"),
    ('max_sentences_min', [(PC_EN + ('max_sentences',), 0)],
     'config key `corpora.pc_en.max_sentences`: 0 is less than the minimum of 1'),
    ('perturb_type', [(('perturb',), [])],
     "config key `perturb`: [] is not of type 'object'"),
    ('perturb_extra', [(('perturb', 'variants'), 3)],
     "config key `perturb`: Additional properties are not allowed ('variants' was unexpected)"),
    ('variants_type', [(('perturb', 'variants_per_sentence'), '3')],
     "config key `perturb.variants_per_sentence`: '3' is not of type 'integer'"),
    ('variants_min', [(('perturb', 'variants_per_sentence'), 0)],
     'config key `perturb.variants_per_sentence`: 0 is less than the minimum of 1'),
    ('fuzz_type', [(('perturb', 'fuzz_terms'), ['a'])],
     "config key `perturb.fuzz_terms`: ['a'] is not of type 'object'"),
    ('fuzz_lang_type', [(('perturb', 'fuzz_terms', 'en'), 'a')],
     "config key `perturb.fuzz_terms.en`: 'a' is not of type 'array'"),
    ('fuzz_lang_empty', [(('perturb', 'fuzz_terms', 'en'), [])],
     'config key `perturb.fuzz_terms.en`: [] should be non-empty'),
    ('fuzz_term_type', [(('perturb', 'fuzz_terms', 'en'), ['a', 1])],
     "config key `perturb.fuzz_terms.en.1`: 1 is not of type 'string'"),
    ('fuzz_term_pattern', [(('perturb', 'fuzz_terms', 'en'), ['a', 'the end'])],
     "config key `perturb.fuzz_terms.en.1`: 'the end' does not match"),
    ('negation_type', [(('perturb', 'negation_terms'), 'not')],
     "config key `perturb.negation_terms`: 'not' is not of type 'object'"),
    ('negation_lang_type', [(('perturb', 'negation_terms', 'en'), 'not')],
     "config key `perturb.negation_terms.en`: 'not' is not of type 'array'"),
    ('negation_lang_empty', [(('perturb', 'negation_terms', 'en'), [])],
     'config key `perturb.negation_terms.en`: [] should be non-empty'),
    ('negation_term_type', [(('perturb', 'negation_terms', 'en'), [None])],
     "config key `perturb.negation_terms.en.0`: None is not of type 'string'"),
    ('negation_term_pattern', [(('perturb', 'negation_terms', 'en'), ['do not'])],
     "config key `perturb.negation_terms.en.0`: 'do not' does not match"),
    ('gn_type', [(GRAMMATICAL, True)],
     "config key `perturb.grammatical_negation`: True is not of type 'object'"),
    ('gn_extra', [(GRAMMATICAL + ('language',), ['en'])],
     "config key `perturb.grammatical_negation`: Additional properties are not allowed ('language' was unexpected)"),
    ('gn_enabled_type', [(GRAMMATICAL + ('enabled',), 'yes')],
     "config key `perturb.grammatical_negation.enabled`: 'yes' is not of type 'boolean'"),
    ('gn_tagger_type', [(GRAMMATICAL + ('use_tagger',), 1)],
     "config key `perturb.grammatical_negation.use_tagger`: 1 is not of type 'boolean'"),
    ('gn_languages_type', [(GRAMMATICAL + ('languages',), 'en')],
     "config key `perturb.grammatical_negation.languages`: 'en' is not of type 'array'"),
    ('gn_language_without_rules', [(GRAMMATICAL + ('languages',), ['en', 'nl'])],
     "config key `perturb.grammatical_negation.languages.1`: 'nl' is not one of ['en']; expected a language with grammatical-negation rules: only `en`"),
    ('models_type', [(('models',), ['tfidf'])],
     "config key `models`: ['tfidf'] is not of type 'object'"),
    ('models_empty', [(('models',), {})],
     'config key `models`: {} should be non-empty'),
    ('model_name_pattern', [(('models', '_m'), {'family': 'tfidf'})],
     "config key `models._m`: '_m' is not a valid name"),
    ('model_name_type', [(('models', 2), {'family': 'tfidf'})],
     "config key `models.2`: 2 is not a valid name (2 is not of type 'string')"),
    ('model_type', [(('models', 'm'), 'tfidf')],
     "config key `models.m`: 'tfidf' is not of type 'object'"),
    ('model_required', [(('models', 'm'), {'name': 'x'})],
     "config key `models.m`: 'family' is a required property"),
    ('model_extra', [(MINILM + ('batchsize',), 3)],
     "config key `models.minilm`: Additional properties are not allowed ('batchsize' was unexpected) (allowed: batch_size,"),
    ('model_hf_needs_name', [(('models', 'm'), {'family': 'transformers'})],
     'config key `models.m`: needs `name` (a Hugging Face id) or `path` (a local model directory)'),
    ('model_fasttext_needs_path', [(('models', 'ft'), {'family': 'fasttext'})],
     'config key `models.ft`: needs `path` to a fastText .bin, or `url` with `sha256`'),
    ('family_enum', [(MINILM + ('family',), 'bert')],
     "config key `models.minilm.family`: 'bert' is not one of ['sentence_transformers', 'transformers', 'tfidf', 'fasttext', 'hashing']"),
    ('model_name_field_type', [(MINILM + ('name',), 1)],
     "config key `models.minilm.name`: 1 is not of type 'string'"),
    ('model_path_type', [(MINILM + ('path',), 1)],
     "config key `models.minilm.path`: 1 is not of type 'string'"),
    ('model_url_type', [(MINILM + ('url',), 1)],
     "config key `models.minilm.url`: 1 is not of type 'string'"),
    ('model_url_pattern', [(MINILM + ('url',), 's3://b/m')],
     "config key `models.minilm.url`: 's3://b/m' does not match '^(https?|file)://'"),
    ('model_sha_type', [(MINILM + ('sha256',), 1)],
     "config key `models.minilm.sha256`: 1 is not of type 'string'"),
    ('model_sha_pattern', [(MINILM + ('sha256',), 'xyz')],
     "config key `models.minilm.sha256`: 'xyz' does not match"),
    ('revision_type', [(MINILM + ('revision',), 3)],
     "config key `models.minilm.revision`: 3 is not of type 'string', 'null'"),
    ('device_enum', [(MINILM + ('device',), 'tpu')],
     "config key `models.minilm.device`: 'tpu' is not one of ['cpu', 'cuda', 'auto']"),
    ('gpu_model_type', [(MINILM + ('gpu_model',), 100)],
     "config key `models.minilm.gpu_model`: 100 is not of type 'string'"),
    ('gpu_model_pattern', [(MINILM + ('gpu_model',), 'a100 80g')],
     "config key `models.minilm.gpu_model`: 'a100 80g' does not match"),
    ('batch_size_type', [(MINILM + ('batch_size',), '32')],
     "config key `models.minilm.batch_size`: '32' is not of type 'integer'"),
    ('batch_size_min', [(MINILM + ('batch_size',), 0)],
     'config key `models.minilm.batch_size`: 0 is less than the minimum of 1; expected integer >= 1 <= 65536'),
    ('batch_size_max', [(MINILM + ('batch_size',), 65537)],
     'config key `models.minilm.batch_size`: 65537 is greater than the maximum of 65536'),
    ('precision_enum', [(MINILM + ('precision',), 'fp8')],
     "config key `models.minilm.precision`: 'fp8' is not one of ['fp32', 'bf16', 'fp16']; expected one of 'fp32', 'bf16', 'fp16'"),
    ('store_dtype_enum', [(MINILM + ('store_dtype',), 'int8')],
     "config key `models.minilm.store_dtype`: 'int8' is not one of ['float32', 'float16']"),
    ('max_length_type', [(MINILM + ('max_length',), '512')],
     "config key `models.minilm.max_length`: '512' is not of type 'integer'"),
    ('max_length_min', [(MINILM + ('max_length',), 0)],
     'config key `models.minilm.max_length`: 0 is less than the minimum of 1'),
    ('model_corpora_type', [(MINILM + ('corpora',), 'pc_en')],
     "config key `models.minilm.corpora`: 'pc_en' is not of type 'array'"),
    ('model_corpora_empty', [(MINILM + ('corpora',), [])],
     'config key `models.minilm.corpora`: [] should be non-empty'),
    ('model_corpus_type', [(MINILM + ('corpora',), [1])],
     "config key `models.minilm.corpora.0`: 1 is not of type 'string'"),
    ('model_corpus_pattern', [(MINILM + ('corpora',), ['pc en'])],
     "config key `models.minilm.corpora.0`: 'pc en' does not match"),
    ('model_threads_type', [(MINILM + ('threads',), '4')],
     "config key `models.minilm.threads`: '4' is not of type 'integer'"),
    ('model_threads_min', [(MINILM + ('threads',), 0)],
     'config key `models.minilm.threads`: 0 is less than the minimum of 1'),
    ('cpu_workers_type', [(MINILM + ('cpu_workers',), '2')],
     "config key `models.minilm.cpu_workers`: '2' is not of type 'integer'"),
    ('cpu_workers_min', [(MINILM + ('cpu_workers',), 0)],
     'config key `models.minilm.cpu_workers`: 0 is less than the minimum of 1'),
    ('model_mem_type', [(MINILM + ('mem_mb',), '2G')],
     "config key `models.minilm.mem_mb`: '2G' is not of type 'integer'"),
    ('model_mem_min', [(MINILM + ('mem_mb',), 99)],
     'config key `models.minilm.mem_mb`: 99 is less than the minimum of 100'),
    ('model_runtime_type', [(MINILM + ('runtime',), '1h')],
     "config key `models.minilm.runtime`: '1h' is not of type 'integer'"),
    ('model_runtime_min', [(MINILM + ('runtime',), 0)],
     'config key `models.minilm.runtime`: 0 is less than the minimum of 1'),
    ('preset_enum', [(('models', 'tfidf', 'preset'), 'sklearn')],
     "config key `models.tfidf.preset`: 'sklearn' is not one of ['paper', 'project']"),
    ('fit_on_enum', [(('models', 'tfidf', 'fit_on'), 'variants')],
     "config key `models.tfidf.fit_on`: 'variants' is not one of ['originals_and_variants', 'originals']"),
    ('lowercase_type', [(('models', 'tfidf', 'lowercase'), 'no')],
     "config key `models.tfidf.lowercase`: 'no' is not of type 'boolean'"),
    ('token_pattern_type', [(('models', 'tfidf', 'token_pattern'), 1)],
     "config key `models.tfidf.token_pattern`: 1 is not of type 'string'"),
    ('min_df_type', [(('models', 'tfidf', 'min_df'), '2')],
     "config key `models.tfidf.min_df`: '2' is not of type 'integer'"),
    ('min_df_min', [(('models', 'tfidf', 'min_df'), 0)],
     'config key `models.tfidf.min_df`: 0 is less than the minimum of 1'),
    ('max_features_type', [(('models', 'tfidf', 'max_features'), '10k')],
     "config key `models.tfidf.max_features`: '10k' is not of type 'integer'"),
    ('max_features_min', [(('models', 'tfidf', 'max_features'), 0)],
     'config key `models.tfidf.max_features`: 0 is less than the minimum of 1'),
    ('sublinear_type', [(('models', 'tfidf', 'sublinear_tf'), 'yes')],
     "config key `models.tfidf.sublinear_tf`: 'yes' is not of type 'boolean'"),
    ('dim_type', [(('models', 'h'), {'family': 'hashing', 'dim': '64'})],
     "config key `models.h.dim`: '64' is not of type 'integer'"),
    ('dim_min', [(('models', 'h'), {'family': 'hashing', 'dim': 0})],
     'config key `models.h.dim`: 0 is less than the minimum of 1'),
    ('dim_max', [(('models', 'h'), {'family': 'hashing', 'dim': 4097})],
     'config key `models.h.dim`: 4097 is greater than the maximum of 4096'),
    ('hash_bits_type', [(('models', 'h'), {'family': 'hashing', 'hash_bits': '18'})],
     "config key `models.h.hash_bits`: '18' is not of type 'integer'"),
    ('hash_bits_min', [(('models', 'h'), {'family': 'hashing', 'hash_bits': 7})],
     'config key `models.h.hash_bits`: 7 is less than the minimum of 8'),
    ('hash_bits_max', [(('models', 'h'), {'family': 'hashing', 'hash_bits': 25})],
     'config key `models.h.hash_bits`: 25 is greater than the maximum of 24'),
    ('projection_seed_type', [(('models', 'h'), {'family': 'hashing', 'projection_seed': '1'})],
     "config key `models.h.projection_seed`: '1' is not of type 'integer'"),
    ('projection_seed_min', [(('models', 'h'), {'family': 'hashing', 'projection_seed': -1})],
     'config key `models.h.projection_seed`: -1 is less than the minimum of 0'),
    ('csc_type', [(('csc',), [])],
     "config key `csc`: [] is not of type 'object'"),
    ('csc_extra', [(('csc', 'bandwidth'), 0.2)],
     "config key `csc`: Additional properties are not allowed ('bandwidth' was unexpected)"),
    ('exact_kde_type', [(('csc', 'exact_kde_max_n'), '20k')],
     "config key `csc.exact_kde_max_n`: '20k' is not of type 'integer'"),
    ('exact_kde_min', [(('csc', 'exact_kde_max_n'), 1)],
     'config key `csc.exact_kde_max_n`: 1 is less than the minimum of 2'),
    ('grid_step_type', [(('csc', 'grid_step'), 'fine')],
     "config key `csc.grid_step`: 'fine' is not of type 'number'"),
    ('grid_step_positive', [(('csc', 'grid_step'), 0)],
     'config key `csc.grid_step`: 0 is less than or equal to the minimum of 0'),
    ('grid_step_max', [(('csc', 'grid_step'), 0.5)],
     'config key `csc.grid_step`: 0.5 is greater than the maximum of 0.1'),
    ('bootstrap_b_type', [(('csc', 'bootstrap_b'), '200')],
     "config key `csc.bootstrap_b`: '200' is not of type 'integer'"),
    ('bootstrap_b_min', [(('csc', 'bootstrap_b'), -1)],
     'config key `csc.bootstrap_b`: -1 is less than the minimum of 0'),
    ('bootstrap_b_max', [(('csc', 'bootstrap_b'), 100001)],
     'config key `csc.bootstrap_b`: 100001 is greater than the maximum of 100000'),
    ('bootstrap_groups_type', [(('csc', 'bootstrap_groups'), '1000')],
     "config key `csc.bootstrap_groups`: '1000' is not of type 'integer'"),
    ('bootstrap_groups_min', [(('csc', 'bootstrap_groups'), 9)],
     'config key `csc.bootstrap_groups`: 9 is less than the minimum of 10'),
    ('resources_type', [(RESOURCES, [])],
     "config key `resources`: [] is not of type 'object'"),
    ('resources_rule_name', [(RESOURCES + ('embedding',), {'threads': 2})],
     "config key `resources.embedding`: 'embedding' is not a valid name"),
    ('resources_rule_type', [(RESOURCES + ('embed',), 2)],
     "config key `resources.embed`: 2 is not of type 'object'"),
    ('resources_extra', [(RESOURCES + ('embed',), {'gpus': 1})],
     "config key `resources.embed`: Additional properties are not allowed ('gpus' was unexpected) (allowed: mem_mb, runtime, threads)"),
    ('resources_threads_type', [(RESOURCES + ('embed',), {'threads': '2'})],
     "config key `resources.embed.threads`: '2' is not of type 'integer'"),
    ('resources_threads_min', [(RESOURCES + ('embed',), {'threads': 0})],
     'config key `resources.embed.threads`: 0 is less than the minimum of 1'),
    ('resources_mem_type', [(RESOURCES + ('embed',), {'mem_mb': '2G'})],
     "config key `resources.embed.mem_mb`: '2G' is not of type 'integer'"),
    ('resources_mem_min', [(RESOURCES + ('embed',), {'mem_mb': 50})],
     'config key `resources.embed.mem_mb`: 50 is less than the minimum of 100'),
    ('resources_runtime_type', [(RESOURCES + ('embed',), {'runtime': '1h'})],
     "config key `resources.embed.runtime`: '1h' is not of type 'integer'"),
    ('resources_runtime_min', [(RESOURCES + ('embed',), {'runtime': 0})],
     'config key `resources.embed.runtime`: 0 is less than the minimum of 1; expected integer >= 1 (minutes)'),
]


@pytest.mark.parametrize("edits,fragment", [pytest.param(e, f, id=i) for i, e, f in SCHEMA_CASES])
def test_schema_errors_name_the_key_and_expected_form(edits, fragment):
    assert fragment in message_of(changed(edits))


CONSTRAINTS = {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern", "enum", "const",
               "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties", "minLength", "maxLength",
               "required", "oneOf", "anyOf", "not"}


def schema_constraints(schema: dict) -> set[str]:
    """Where the schema can reject a value, as jsonschema's error.schema_path spells it ($ref is
    transparent there). oneOf/anyOf/not are one branch each; an if/then's `then` holds branches."""
    found = set()

    def walk(node, path):
        if "$ref" in node:
            target = schema
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            walk(target, path)
        for key, sub in node.items():
            if key in CONSTRAINTS or (key == "additionalProperties" and sub is False):
                found.add("/".join(map(str, [*path, key])))
            if key in ("additionalProperties", "propertyNames", "items", "then") and isinstance(sub, dict):
                walk(sub, [*path, key])
            elif key == "properties":
                for name, prop in sub.items():
                    walk(prop, [*path, key, name])
            elif key == "allOf":
                for i, part in enumerate(sub):
                    walk(part, [*path, key, i])

    walk(schema, [])
    return found


def test_every_schema_constraint_has_a_case():
    schema = load_schema()
    validator = jsonschema.Draft202012Validator(schema)
    hit = {"/".join(map(str, err.schema_path)) for _, edits, _ in SCHEMA_CASES
           for err in validator.iter_errors(changed(edits))}
    constraints = schema_constraints(schema)
    assert len(constraints) > 150  # the walk finds the schema's constraints at all
    assert sorted(constraints - hit) == []  # add a case to SCHEMA_CASES for each one listed
    assert sorted(hit - constraints) == []


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
    ("no_fuzz_terms", [(("perturb", "fuzz_terms"), {"en": ["a"]})],
     "config key `perturb.fuzz_terms`: no terms for language 'nl' (needed by corpus 'skills_nl'); expected e.g. "
     "{nl: [...]}"),
    ("no_negation_terms", [(("perturb", "negation_terms"), {"nl": ["niet"]})],
     "config key `perturb.negation_terms`: no terms for language 'en' (needed by corpus 'pc_en')"),
    ("model_corpus", [(MINILM + ("corpora",), ["pc_en", "pc_fr"])],
     "config key `models.minilm.corpora`: no corpus named 'pc_fr'"),
    ("grid_step_divides_two", [(("csc", "grid_step"), 0.003)],
     "config key `csc.grid_step`: 0.003 does not divide 2; expected a step that divides 2"),
    ("preset_other_family", [(MINILM + ("preset",), "paper")],
     "config key `models.minilm.preset`: presets exist for family tfidf only, not 'sentence_transformers'"),
    ("preset_contradicted", [(("models", "tfidf", "preset"), "paper"), (("models", "tfidf", "fit_on"), "originals_and_variants")],
     "config key `models.tfidf.fit_on`: 'originals_and_variants' contradicts preset 'paper', which sets 'originals'"),
]


def test_tfidf_paper_preset_sets_the_papers_settings():
    cfg = validate(changed([(("models", "tfidf_paper"), {"family": "tfidf", "preset": "paper"})]))
    assert cfg["models"]["tfidf_paper"]["token_pattern"] == r"(?u)\b\w\w+\b"  # scikit-learn's default
    assert cfg["models"]["tfidf_paper"]["fit_on"] == "originals"
    cfg = validate(changed([(("models", "tfidf"), {"family": "tfidf", "preset": "paper", "fit_on": "originals"})]))
    assert cfg["models"]["tfidf"]["fit_on"] == "originals"  # restating a preset's value is fine
    from sklearn.feature_extraction.text import TfidfVectorizer
    assert TfidfVectorizer().token_pattern == cfg["models"]["tfidf"]["token_pattern"]


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
