"""The cross-checks of the `adapt` and `domain_shift` sections (config.py, their declarations'
`check`): one bad config each, whose message must name the key. tests/test_config.py runs them all
(ADAPT_REFERENCE_CASES, each starting by adding the adapt study's recipes to config.yaml); here a sample. Their schemas' constraints are checked with every other
schema's, on cases generated from the schemas (tests/schema_cases.py)."""
import copy
from pathlib import Path

import pytest
import yaml

from workflow_scripts.config import ConfigError, validate

ROOT = Path(__file__).resolve().parents[2]
# the adapt study's recipes, on the default config (which has none): they train on and are evaluated by its sets
RECIPES = yaml.safe_load((ROOT / "resources" / "adapt" / "study.yaml").read_text())["adapt"]
WITH_RECIPES = [(("adapt",), RECIPES)]
DEFAULT = {**yaml.safe_load((ROOT / "config.yaml").read_text()), "adapt": RECIPES}


def _changed(edits):
    cfg = copy.deepcopy(DEFAULT)
    for path, value in edits:
        node = cfg
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = copy.deepcopy(value)  # a shared value (the recipes) is never edited in place
    return cfg


# Cross-checks of config.py (_adapt_problems, workflow_scripts/adapt/models.py problems): added to
# tests/test_config.py's REFERENCE_CASES. (id, edits, fragment) on config.yaml.
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


# tests/test_config.py applies the edits to config.yaml: each case first adds the recipes
ADAPT_REFERENCE_CASES = [(i, WITH_RECIPES + edits, fragment) for i, edits, fragment in ADAPT_REFERENCE_CASES]


@pytest.mark.parametrize("edits,fragment", [pytest.param(e, f, id=i) for i, e, f in ADAPT_REFERENCE_CASES[:3]])
def test_cross_checks_sample(edits, fragment):
    with pytest.raises(ConfigError) as err:
        validate(_changed(edits))
    assert fragment in str(err.value)
