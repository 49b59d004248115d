"""The adapt stage's training rules on a tiny 2-layer BERT (CPU, seconds): PT loss goes down, FT
separates positives from negatives, merge is the exact weighted average, same plan -> same weights,
a killed run resumes to the weights of an uninterrupted one, manifests say what made the model; and
the recipes' registration as models and their config checks."""
import copy
import json
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from helpers import tiny_bert
from workflow_scripts.adapt import models as M
from workflow_scripts.adapt.contrastive import negative_rows, training_rows
from workflow_scripts.adapt.data import digest, ft_pairs
from workflow_scripts.adapt.merge import average_state_dicts
from workflow_scripts.adapt.train import train
from workflow_scripts.config import ConfigError, validate

QUESTIONS = ["where does the cat sleep", "who runs in the park", "what does she not like", "what did they sell",
             "when will we visit the museum", "which way leads to the station"]
DOCS = ["the cat sleeps on the mat", "a dog runs in the park", "she does not like cold tea",
        "they sold the house last year", "we will visit the museum tomorrow", "this is the right way to the station",
        "prices are high in the city", "he has finished the report"]


def beir_set(directory: Path, questions=QUESTIONS, docs=DOCS) -> Path:
    (directory / "qrels").mkdir(parents=True, exist_ok=True)
    (directory / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "title": "", "text": t}) + "\n"
                                                    for i, t in enumerate(docs)))
    (directory / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": t}) + "\n"
                                                     for i, t in enumerate(questions)))
    (directory / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" +
                                                   "".join(f"q{i}\td{i}\t1\n" for i in range(len(questions))))
    return directory


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    base = tmp_path_factory.mktemp("adapt")
    bert = tiny_bert(base / "bert", QUESTIONS + DOCS)
    s = beir_set(base / "set")
    corpus = base / "corpus"
    corpus.mkdir()
    pl.DataFrame({"text": DOCS * 4}).write_parquet(corpus / "part-00000.parquet")
    return {"base": base, "bert": bert, "set": s, "corpus": corpus}


def step_cfg(step, **over):
    cfg = copy.deepcopy(M.DEFAULTS[step])
    cfg.update(over)
    return cfg


def make_plan(env, steps, pt=None, ft=None, merge_weight=0.5, seed=1):
    base = {"model": "bert", "family": "transformers", "path": str(env["bert"])}
    plan = {"recipe": "r", "steps": steps, "seed": seed, "deterministic": False, "base": base}
    if "pt" in steps:
        plan["pt"] = step_cfg("pt", **{"max_steps": 6, "batch_size": 4, "max_length": 16, "save_steps": 2,
                                       "learning_rate": 1e-3, **(pt or {}),
                                       "data": {"kind": "corpus", "name": "c", "path": str(env["corpus"])}})
    if "ft" in steps:
        plan["ft"] = step_cfg("ft", **{"max_steps": 4, "batch_size": 3, "max_length": 16, "save_steps": 2,
                                       "learning_rate": 1e-3, **(ft or {}),
                                       "data": {"kind": "retrieval", "name": "s", "path": str(env["set"])}})
    if "merge" in steps:
        plan["merge"] = {"weight": merge_weight, "with": base}
    return plan


def weights(path):
    from sentence_transformers import SentenceTransformer
    return {k: v.clone() for k, v in SentenceTransformer(str(path), device="cpu").state_dict().items()}


def run(env, plan, name, **kw):
    out = env["base"] / "out" / name
    manifest = train(plan, str(out), str(env["base"] / "work" / name), **kw)
    return out, manifest


def test_pt_loss_is_finite_and_goes_down(env):
    plan = make_plan(env, ["pt"], pt={"max_steps": 40, "batch_size": 8, "mask_rate": 0.3, "learning_rate": 3e-3,
                                      "save_steps": 100})
    out, manifest = run(env, plan, "pt_long")
    losses = np.array([p["loss"] for p in manifest["loss_curve"]["pt"]])
    assert len(losses) == 40 and np.isfinite(losses).all() and (losses > 0).all()
    assert losses[-10:].mean() < 0.85 * losses[:10].mean()  # 3.83 -> 3.09 measured (ln 60 words = 4.1)
    # the encoder changed, pooling and tokenizer are the base's: a sentence-transformers directory
    before, after = weights(env["bert"]), weights(out)
    assert set(before) == set(after)
    assert not all(np.array_equal(before[k].numpy(), after[k].numpy()) for k in before)
    assert (out / "modules.json").exists() and (out / "manifest.json").exists()
    assert not (env["base"] / "work" / "pt_long").exists()  # the work folder goes once the model is in place


def test_ft_widens_the_gap_between_positives_and_negatives(env):
    from sentence_transformers import SentenceTransformer

    def gap(path):
        m = SentenceTransformer(str(path), device="cpu")
        q = m.encode(QUESTIONS, normalize_embeddings=True)
        d = m.encode(DOCS, normalize_embeddings=True)
        sims = q @ d.T
        pos = np.diag(sims[:, :len(QUESTIONS)])
        neg = (sims.sum(axis=1) - pos) / (sims.shape[1] - 1)
        return float((pos - neg).mean())

    # no margin: the random tiny model scores some answers below other documents, and a margin drops those
    hn = {**M.DEFAULTS["ft"]["hard_negatives"], "relative_margin": None}
    plan = make_plan(env, ["ft"], ft={"max_steps": 30, "batch_size": 3, "learning_rate": 3e-3, "save_steps": 100,
                                      "hard_negatives": hn})
    out, manifest = run(env, plan, "ft_long")
    assert gap(out) > gap(env["bert"]) + 0.05
    assert manifest["runs"]["ft"]["mining"]["mined"] and manifest["runs"]["ft"]["mining"]["rows"] == len(QUESTIONS)
    assert all(np.isfinite(p["loss"]) for p in manifest["loss_curve"]["ft"])


def test_merge_is_the_exact_weighted_average():
    import torch
    a = {"w": torch.tensor([1.0, 2.0, -4.0]), "ids": torch.tensor([0, 1, 2])}
    b = {"w": torch.tensor([3.0, 6.0, 4.0]), "ids": torch.tensor([0, 1, 2])}
    out = average_state_dicts(a, b, 0.25)
    assert out["w"].tolist() == [2.5, 5.0, 2.0]  # 0.25 a + 0.75 b, by hand
    assert out["ids"].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="integer buffer"):
        average_state_dicts(a, {**b, "ids": torch.tensor([0, 1, 3])}, 0.5)
    with pytest.raises(ValueError, match="parameters differ"):
        average_state_dicts(a, {"w": b["w"]}, 0.5)


def test_merge_step_averages_the_trained_and_base_weights(env):
    ft_out, _ = run(env, make_plan(env, ["ft"]), "ft_only")
    merged_out, manifest = run(env, make_plan(env, ["ft", "merge"], merge_weight=0.3), "ft_merge")
    ft, base, merged = weights(ft_out), weights(env["bert"]), weights(merged_out)
    checked = 0
    for name in list(merged)[:6]:
        if merged[name].is_floating_point():
            expect = (0.3 * ft[name].double() + 0.7 * base[name].double()).float()
            assert np.array_equal(merged[name].numpy(), expect.numpy()), name
            checked += 1
    assert checked >= 3
    assert manifest["runs"]["merge"]["weight"] == 0.3 and manifest["data"]["merge"]["with"] == "bert"


def test_same_plan_gives_identical_weights_on_cpu(env):
    plan = make_plan(env, ["pt", "ft"])
    a, ma = run(env, plan, "det_a")
    b, mb = run(env, plan, "det_b")
    wa, wb = weights(a), weights(b)
    assert all(np.array_equal(wa[k].numpy(), wb[k].numpy()) for k in wa)
    assert ma["loss_curve"] == mb["loss_curve"]
    c, _ = run(env, make_plan(env, ["pt", "ft"], seed=2), "det_c")
    wc = weights(c)
    assert not all(np.array_equal(wa[k].numpy(), wc[k].numpy()) for k in wa)  # the seed matters


class Killed(Exception):
    pass


def test_a_killed_run_resumes_to_the_uninterrupted_weights(env):
    from transformers import TrainerCallback

    class KillAt(TrainerCallback):
        def __init__(self, step):
            self.step = step

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == self.step:
                raise Killed(f"killed after step {self.step}")

    plan = make_plan(env, ["pt", "ft"])
    full, _ = run(env, plan, "full")
    out, work = env["base"] / "out" / "resumed", env["base"] / "work" / "resumed"
    with pytest.raises(Killed):  # PT done; FT killed after step 3, its last checkpoint is step 2
        train(plan, str(out), str(work), callbacks={"ft": [KillAt(3)]})
    assert not out.exists()  # nothing that looks finished
    digest_dir = next(work.iterdir())
    assert (digest_dir / "0-pt" / "model").is_dir() and (digest_dir / "1-ft" / "checkpoints" / "checkpoint-2").is_dir()
    manifest = train(plan, str(out), str(work))
    assert manifest["runs"]["ft"]["resumed_from"].endswith("checkpoint-2")
    wf, wr = weights(full), weights(out)
    assert all(np.array_equal(wf[k].numpy(), wr[k].numpy()) for k in wf)
    full_manifest = json.loads((full / "manifest.json").read_text())
    assert [p["step"] for p in manifest["loss_curve"]["ft"]] == [1, 2, 3, 4]
    assert manifest["loss_curve"] == full_manifest["loss_curve"]


def test_a_changed_plan_never_resumes_stale_checkpoints(env):
    plan = make_plan(env, ["pt"])
    out, work = env["base"] / "out" / "stale", env["base"] / "work" / "stale"
    stale = work / "0123456789abcdef" / "0-pt" / "checkpoints" / "checkpoint-4"
    stale.mkdir(parents=True)
    manifest = train(plan, str(out), str(work))
    assert manifest["runs"]["pt"]["resumed_from"] is None


def test_manifest_says_what_made_the_model(env):
    plan = make_plan(env, ["pt", "ft"])
    _, m = run(env, plan, "manifest")
    assert m["recipe"] == "r" and m["steps"] == ["pt", "ft"] and m["seed"] == 1
    assert m["base"]["model"] == "bert" and m["base"]["path"] == str(env["bert"]) and "revision" in m["base"]
    assert m["base"]["origin"] == f"path {env['bert']}"
    assert len(m["data"]["pt"]["digest"]) == 64 and m["data"]["pt"]["examples"] == len(set(DOCS))
    assert len(m["data"]["ft"]["digest"]) == 64 and m["data"]["ft"]["split"] == "train"
    assert m["data"]["ft"]["pairs"] == len(QUESTIONS)
    assert [p["step"] for p in m["loss_curve"]["pt"]] == list(range(1, 7))
    assert set(m["versions"]) >= {"torch", "transformers", "sentence-transformers"}
    assert m["settings"]["pt"]["mask_rate"] == 0.15 and "default of this workflow" in m["defaults"]
    assert m["runs"]["pt"]["seconds"] > 0 and m["runs"]["pt"]["peak_rss_mb"] > 0
    mining = m["runs"]["ft"]["mining"]  # with the default margin some pairs lose their negative: counted
    assert mining["rows"] + mining["dropped"] == len(QUESTIONS) and mining["mode"] == "mined"
    assert mining["dropped_by_reason"] == ({"too_few_mined": mining["dropped"]} if mining["dropped"] else {})
    assert mining["negatives"] == {"wrong_answers": 0, "mined": mining["rows"]}
    pairs, docs, _, _ = ft_pairs(plan["ft"]["data"], "train")
    assert m["data"]["ft"]["digest"] == digest([pairs, docs]) and m["settings"]["ft"]["negatives"] == "mined"


def test_the_train_job_works_beside_its_output_and_digests_the_plan_as_before(env, monkeypatch):
    """rules/adapt.smk's adapt_train: the model directory its output, checkpoints in
    <models>/.work/<recipe>/ beside it (gone once the model is in place), device and threads from the
    job; the plan's digest is of its keys sorted, as when the plan came as JSON text."""
    from workflow_scripts.adapt.train import run_adapt_train
    from workflow_scripts.jobs import make_job
    plan = make_plan(env, ["pt"])
    plan = {key: plan[key] for key in reversed(plan)}  # built in another order
    out = env["base"] / "job" / "models" / "r"
    seen = {}
    real_train = train

    def spy(plan, out_dir, work_root, device, threads, log):
        seen.update(work=work_root, device=device, threads=threads)
        assert Path(work_root).is_relative_to(out.parent / ".work")
        return real_train(plan, out_dir, work_root, device, threads, log)

    monkeypatch.setattr("workflow_scripts.adapt.train.train", spy)
    for var, value in (("TQDM_DISABLE", "0"), ("HF_HUB_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
        monkeypatch.setenv(var, os.environ.get(var, value))  # what the job sets is undone after the test
    run_adapt_train(make_job(output=[str(out)], params={"plan": plan, "device": "cpu"}, wildcards={"recipe": "r"},
                             threads=2))
    assert seen == {"work": str(out.parent / ".work" / "r"), "device": "cpu", "threads": 2}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["plan_digest"] == digest(json.loads(json.dumps(plan, sort_keys=True))) != digest(plan)
    assert manifest["threads"] == 2 and manifest["device"] == "cpu" and manifest["steps"] == ["pt"]
    assert not (out.parent / ".work" / "r").exists()


# ---- FT negatives: mined, the questions' wrong answers, or both ---------------------------------

PAIRS = [("q1", "p1"), ("q2", "p2"), ("q3", "p3"), ("q4", "p4"), ("q5", "p5")]
WRONG = [["w1a", "p1", "w1b", "w1c"], ["w2a"], ["w3a", "w3a", "w3b"], [], []]
MINED = [["m1a", "m1b"], ["w2a", "m2a", "m2b"], ["m3a"], ["p4", "m4a", "m4b"], ["m5a"]]


def test_negative_rows_wrong_answers():
    rows, record = negative_rows(PAIRS, WRONG, None, "wrong_answers", 2)
    # q1: p1 is its positive (skipped), w1c not needed; q2 has one (dropped); q3's repeat is skipped; q4, q5: none
    assert rows == [("q1", "p1", ["w1a", "w1b"]), ("q3", "p3", ["w3a", "w3b"])]
    assert record == {"mode": "wrong_answers", "num_negatives": 2, "rows": 2, "dropped": 3,
                      "dropped_by_reason": {"no_wrong_answers": 3}, "negatives": {"wrong_answers": 4, "mined": 0}}
    rows, record = negative_rows(PAIRS, WRONG, None, "wrong_answers", 1)
    assert [r[2] for r in rows] == [["w1a"], ["w2a"], ["w3a"]] and record["dropped_by_reason"] == {"no_wrong_answers": 2}


def test_negative_rows_both_and_mined():
    rows, record = negative_rows(PAIRS, WRONG, MINED, "both", 2)
    # q2: its wrong answer, then the mined ones less the repeat w2a; q4: mined less its positive; q5: one mined only
    assert rows == [("q1", "p1", ["w1a", "w1b"]), ("q2", "p2", ["w2a", "m2a"]), ("q3", "p3", ["w3a", "w3b"]),
                    ("q4", "p4", ["m4a", "m4b"])]
    assert record == {"mode": "both", "num_negatives": 2, "rows": 4, "dropped": 1,
                      "dropped_by_reason": {"too_few_negatives": 1}, "negatives": {"wrong_answers": 5, "mined": 3}}
    rows, record = negative_rows(PAIRS, None, MINED, "mined", 2)
    assert rows == [("q1", "p1", ["m1a", "m1b"]), ("q2", "p2", ["w2a", "m2a"]), ("q4", "p4", ["m4a", "m4b"])]
    assert record["dropped_by_reason"] == {"too_few_mined": 2} and record["negatives"] == {"wrong_answers": 0, "mined": 6}
    rows, record = negative_rows(PAIRS, None, None, "mined", 0)  # in-batch negatives only: every pair is a row
    assert rows == [(q, p, []) for q, p in PAIRS] and record["dropped"] == 0
    with pytest.raises(ValueError, match="needs the wrong answers"):
        negative_rows(PAIRS, None, MINED, "both", 2)
    with pytest.raises(ValueError, match="unknown negatives mode 'nope'"):
        negative_rows(PAIRS, WRONG, MINED, "nope", 2)
    cfg = step_cfg("ft", negatives="wrong_answers")
    cfg["hard_negatives"] = {**cfg["hard_negatives"], "num_negatives": 0}
    with pytest.raises(ValueError, match="needs hard_negatives.num_negatives >= 1"):
        training_rows(None, PAIRS, [], WRONG, cfg, None)


# wrong answers of the tiny set's questions (q<i> asks for DOCS[i]); q5's only one is its own answer
WRONG_OF = {"q0": [DOCS[6], DOCS[7]], "q1": [DOCS[7]], "q2": [], "q3": [DOCS[6]], "q4": [DOCS[0]], "q5": [DOCS[5]]}


def with_wrong_answers(directory: Path, column=True) -> Path:
    beir_set(directory)
    frame = pl.DataFrame({"_id": list(WRONG_OF), "text": QUESTIONS})
    if column:
        frame = frame.with_columns(pl.Series("wrong_answers", list(WRONG_OF.values()), dtype=pl.List(pl.String)))
    frame.write_parquet(directory / "questions.parquet")
    return directory


def test_ft_pairs_reads_the_wrong_answers(env, tmp_path):
    data = {"kind": "retrieval", "name": "wa", "path": str(with_wrong_answers(tmp_path / "wa"))}
    pairs, docs, wrong, counts = ft_pairs(data, "train", "wrong_answers")
    assert dict(zip(pairs, wrong)) == {(QUESTIONS[i], DOCS[i]): WRONG_OF[f"q{i}"] for i in range(len(QUESTIONS))}
    assert counts["wrong_answers"] == 6 and counts["pairs_with_wrong_answers"] == 5
    assert ft_pairs(data, "train")[2] is None  # mined: questions.parquet is not read
    with pytest.raises(ValueError, match=r"retrieval set s: `ft.negatives: both` .*questions.parquet does not exist"):
        ft_pairs({"kind": "retrieval", "name": "s", "path": str(env["set"])}, "train", "both")
    no_column = {"kind": "retrieval", "name": "old", "path": str(with_wrong_answers(tmp_path / "old", column=False))}
    with pytest.raises(ValueError, match=r"retrieval set old: `ft.negatives: wrong_answers` .*no `wrong_answers` column"):
        ft_pairs(no_column, "train", "wrong_answers")


def test_ft_on_wrong_answers_end_to_end(env):
    s = with_wrong_answers(env["base"] / "set_wa")
    plan = make_plan(env, ["ft"], ft={"negatives": "wrong_answers"})
    plan["ft"]["data"]["path"] = str(s)
    _, m = run(env, plan, "ft_wrong")
    # one negative per row: q2 has none and q5's only one is its answer: both dropped
    assert m["runs"]["ft"]["mining"] == {"mode": "wrong_answers", "num_negatives": 1, "mined": False, "rows": 4,
                                         "dropped": 2, "dropped_by_reason": {"no_wrong_answers": 2},
                                         "negatives": {"wrong_answers": 4, "mined": 0}}
    assert m["runs"]["ft"]["examples"] == 4 and m["settings"]["ft"]["negatives"] == "wrong_answers"
    pairs = sorted(zip(QUESTIONS, DOCS))
    wrong = [WRONG_OF[f"q{QUESTIONS.index(q)}"] for q, _ in pairs]
    assert m["data"]["ft"]["digest"] == digest([pairs, sorted(set(DOCS)), wrong])  # the wrong answers are covered
    assert m["data"]["ft"]["wrong_answers"] == 6
    # both, two per row, no margin: the wrong answers (2, 1, 0, 1, 1, 0 usable) topped up from the 7 other documents
    hn = {**M.DEFAULTS["ft"]["hard_negatives"], "num_negatives": 2, "relative_margin": None}
    plan = make_plan(env, ["ft"], ft={"negatives": "both", "hard_negatives": hn})
    plan["ft"]["data"]["path"] = str(s)
    _, m = run(env, plan, "ft_both")
    assert m["runs"]["ft"]["mining"] == {"mode": "both", "num_negatives": 2, "mined": True, "rows": 6, "dropped": 0,
                                         "dropped_by_reason": {}, "negatives": {"wrong_answers": 5, "mined": 7}}


# ---- recipes -> models, config checks ---------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def default_config():
    """The adapt study's config: the default config has no recipes (they made `make run` long)."""
    return yaml.safe_load((ROOT / "resources" / "adapt" / "study.yaml").read_text())


def test_recipes_become_models_in_dependency_order():
    config = validate(default_config())
    names = M.order(config)
    assert names.index("minilm_pt") < names.index("minilm_ptft")
    assert names.index("minilm_ft") < names.index("minilm_ft_merged")
    M.register(config, "res")
    entry = config["models"]["minilm_ptft"]
    assert entry["family"] == "sentence_transformers" and entry["path"] == "res/models/minilm_ptft"
    assert entry["probes"] == ["retrieval", "domain_shift"] and entry["adapted"]["base"] == "minilm_pt"
    assert [M.adaptation(config, m) for m in ("minilm", "minilm_pt", "minilm_ft", "minilm_ptft", "minilm_ft_merged")] \
        == ["base", "PT", "FT", "PT-FT", "FT-merge"]
    assert M.root_base(config, "minilm_ft_merged") == "minilm"
    plan = M.plan(config, "minilm_ptft", "res")
    assert plan["base"]["path"] == "res/models/minilm_pt" and plan["ft"]["data"]["path"] == "res/retrieval/sets/specs_sample"
    assert M.inputs(config, "minilm_ptft", "res") == {"ft_data": "res/retrieval/sets/specs_sample",
                                                      "base": "res/models/minilm_pt"}
    assert M.inputs(config, "minilm_pt", "res") == {"pt_data": "res/retrieval/sets/specs_sample"}  # minilm: not ours


def test_a_changed_recipe_changes_only_its_plan_and_those_built_on_it():
    a = validate(default_config())
    cfg = default_config()
    cfg["adapt"]["recipes"]["minilm_pt"]["pt"]["learning_rate"] = 1e-4
    b = validate(cfg)
    M.register(a, "res")
    M.register(b, "res")
    same = {n for n in M.order(a) if M.plan(a, n, "res") == M.plan(b, n, "res")}
    assert same == {"minilm_ft", "minilm_ft_merged", "minilm_ptft"}  # minilm_ptft's plan names its base's path only
    # a retrained base still reruns minilm_ptft: its directory is an input (M.inputs), so its mtime counts


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["adapt"]["recipes"]["minilm_ft"].pop("datasets"), "fine-tuned on the 'train' questions"),
    (lambda c: (c["models"].update(tfidf={"family": "tfidf"}), c["adapt"]["recipes"]["minilm_ft"].update(base="tfidf")),
     "family 'tfidf'"),
    (lambda c: c["adapt"]["recipes"]["minilm_ft"].update(base="nope"), "no model or recipe named 'nope'"),
    (lambda c: c["adapt"]["recipes"].update(minilm={"base": "minilm", "steps": ["pt"]}), "a model of that name exists"),
    (lambda c: c["adapt"]["recipes"]["minilm_ft"]["ft"].update(retrieval="nope"), "no retrieval set named 'nope'"),
    (lambda c: c["adapt"]["recipes"]["minilm_ft"].update(pt={"mask_rate": 0.2}), "a step the recipe does not run"),
    (lambda c: c["adapt"]["recipes"]["minilm_ft_merged"]["merge"].update({"with": "minilm_ft"}), "with itself"),
    (lambda c: c["adapt"]["recipes"]["minilm_pt"].update(base="minilm_ptft"), "cycle"),
    (lambda c: c["adapt"]["recipes"]["minilm_pt"].update(datasets=["nope"]), "no probe dataset named 'nope'"),
    (lambda c: c["adapt"]["recipes"]["minilm_pt"].update(probes=["nope"]), "no probe named 'nope'"),
    (lambda c: c["adapt"]["recipes"]["minilm_ft"]["ft"].update(negatives="wrong_answers"),
     r"minilm_ft.ft.negatives`: `wrong_answers` trains on the questions' wrong answers.*'specs_sample' has none"),
    (lambda c: c["adapt"]["recipes"]["minilm_ft"]["ft"].update(retrieval="telecom_qa", negatives="both"),
     "'telecom_qa' has none"),
    (lambda c: c["adapt"]["recipes"]["minilm_ft"]["ft"].update(negatives="both", hard_negatives={"num_negatives": 0}),
     "num_negatives`: 0 gives no negatives"),
    (lambda c: c["domain_shift"]["datasets"]["telecom_general"]["specific"][0].update(retrieval="nope"),
     "no retrieval set named 'nope'"),
    (lambda c: c["domain_shift"]["datasets"]["telecom_general"]["agnostic"][0].update(parts=["queries"]),
     "only a retrieval source has parts"),
])
def test_config_checks_name_the_key(edit, message):
    cfg = default_config()
    edit(cfg)
    with pytest.raises(ConfigError, match=message):
        validate(cfg)


def test_schema_descriptions_name_the_defaults():
    """The paper published no hyper-parameters: the schema must say which values are ours, and say
    the values the code uses."""
    schema = yaml.safe_load((ROOT / "workflow_scripts" / "adapt" / "schema.yaml").read_text())
    recipe = schema["properties"]["recipes"]["additionalProperties"]["properties"]
    for step in ("pt", "ft"):
        props = recipe[step]["properties"]
        for key, value in M.DEFAULTS[step].items():
            if key in ("hard_negatives", "max_texts", "max_steps", "split", "loss"):
                continue
            assert f"default {value}" in props[key]["description"], (step, key)
    for key, value in M.DEFAULTS["ft"]["hard_negatives"].items():
        if value is not None:
            assert f"default {value}" in recipe["ft"]["properties"]["hard_negatives"]["properties"][key]["description"]
    assert "default 0.5" in recipe["merge"]["properties"]["weight"]["description"]
