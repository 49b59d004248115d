import copy
from pathlib import Path

import pytest
import yaml

from workflow_scripts.config import ConfigError, validate

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = yaml.safe_load((ROOT / "config.yaml").read_text())


def with_change(path, value):
    cfg = copy.deepcopy(DEFAULT)
    node = cfg
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return cfg


def test_default_config_is_valid_and_gets_defaults():
    cfg = validate(DEFAULT)
    assert cfg["models"]["minilm"]["store_dtype"] == "float32"
    assert cfg["csc"]["exact_kde_max_n"] > 0


@pytest.mark.parametrize("path,value,message", [
    (["models", "minilm", "batch_size"], 0, r"`models.minilm.batch_size`: 0 is less than the minimum of 1; expected integer"),
    (["models", "minilm", "precision"], "fp8", r"`models.minilm.precision`: .*expected one of 'fp32', 'bf16', 'fp16'"),
    (["shard_rows"], "many", r"`shard_rows`: 'many' is not of type 'integer'"),
    (["models", "minilm", "batchsize"], 3, r"`models.minilm`: Additional properties.*allowed: .*batch_size"),
    (["corpora", "pc_en", "source"], "nope", r"`corpora.pc_en.source`: no source named 'nope'"),
    (["corpora", "pc_en", "language"], "de", r"`corpora.pc_en.language`: 'de' is not among"),
    (["corpora", "pc_en_filtered", "match_lengths_of"], "missing", r"no corpus named 'missing'"),
    (["models", "ft"], {"family": "fasttext"}, r"`models.ft`: needs `path` to a fastText .bin, or `url` with `sha256`"),
    (["sources", "x"], {"format": "bitext", "languages": ["en"], "url": "https://h/x.gz"}, r"`sources.x`: needs either `path`"),
    (["models", "minilm", "device"], "tpu", r"`models.minilm.device`"),
])
def test_bad_values_name_the_key_and_expected_form(path, value, message):
    with pytest.raises(ConfigError, match=message):
        validate(with_change(path, value))
