"""The retrieval jobs on small sets: vectors from the `precomputed` family (checked for dimension and
coverage), search -> isotropy -> metrics -> aggregate on a BEIR folder (the rules' jobs), TF-IDF's
sparse store, ties by id, and the reference's answer-list scoring defect."""
import json

import numpy as np
import polars as pl
import pytest

from workflow_scripts import beir
from workflow_scripts.common import text_key
from workflow_scripts.embed import embed_partition
from workflow_scripts.encoders import ModelUnavailable
from workflow_scripts.jobs import make_job
from workflow_scripts.tfidf_fit import fit_tfidf
from workflow_scripts.retrieval.isotropy import isotropy_job, run_retrieval_isotropy
from workflow_scripts.retrieval.metrics import run_retrieval_metrics
from workflow_scripts.retrieval.search import run_retrieval_search, search_job
from workflow_scripts.retrieval.tables import run_retrieval_aggregate
from workflow_scripts.texts import write_text_partitions

DOCS = ["the base station sends the paging message", "the user equipment measures the reference signal",
        "handover moves a connection to another cell", "the core network stores the subscription",
        "a timer starts when the request is sent", "the same sentence twice", "the same sentence twice"]
QUERIES = {"q1": "which message does the base station send", "q2": "what does the user equipment measure",
           "q3": "what moves a connection to another cell", "q4": "where is the subscription stored",
           "q5": "the same sentence twice"}
QRELS = {"q1": "d0", "q2": "d1", "q3": "d2", "q4": "d3", "q5": "d6"}
SETTINGS = {"eval_split": "test", "top_k": 5, "random_per_query": 2}
METRICS = {"ks": [1, 2, 3, 4, 5], "top_k": 5, "bootstrap_b": 100, "draws": {"count": 20, "size": 3, "replace": False},
           "thresholds": {"draws": 30, "margin": 0.01, "percentiles": [20, 45], "rule": "paired_draws", "alpha": 0.05,
                          "metric": "accuracy"}, "coe": {"percentile": 10}}


def write_beir(directory):
    corpus = pl.DataFrame({"_id": [f"d{i}" for i in range(len(DOCS))], "title": [""] * len(DOCS), "text": DOCS})
    queries = pl.DataFrame({"_id": list(QUERIES), "text": list(QUERIES.values())})
    qrels = pl.DataFrame({"query-id": list(QRELS), "corpus-id": list(QRELS.values()), "score": [1] * len(QRELS)})
    beir.write_set(directory, corpus, queries, {"test": qrels}, {"kind": "test"})
    return directory


def fake_vectors(texts, dim=8, seed=0):
    """A vector per distinct text: similar words, similar vectors (bag of hashed words + noise)."""
    rng = np.random.default_rng(seed)
    out = []
    for t in texts:
        v = np.zeros(dim)
        for w in t.split():
            v[text_key(w) % dim] += 1
        out.append(v + 0.01 * rng.standard_normal(dim))
    return np.asarray(out, np.float32)


@pytest.fixture
def set_dir(tmp_path):
    return write_beir(tmp_path / "set")


def store_of(tmp_path, spec, log, name="pre"):
    texts = DOCS + list(QUERIES.values())
    files = [tmp_path / "texts" / "part-000.parquet"]
    write_text_partitions(texts, files)
    out = tmp_path / "stores" / name / "part-000"
    embed_partition(name, spec, "retrieval.t", 0, 1, [str(f) for f in files], str(out), 1, log)
    return [str(out)]


def parquet_vectors(tmp_path, texts, vectors, key="text"):
    path = tmp_path / "vectors.parquet"
    pl.DataFrame({key: texts, "vector": [list(map(float, v)) for v in vectors]}).write_parquet(path)
    return path


def test_precomputed_vectors_end_to_end(tmp_path, set_dir, log):
    texts = list(dict.fromkeys(DOCS + list(QUERIES.values())))
    vecs = fake_vectors(texts)
    spec = {"family": "precomputed", "vectors": str(parquet_vectors(tmp_path, texts, vecs)), "dim": 8}
    stores = store_of(tmp_path, spec, log)
    manifest = json.loads((tmp_path / "stores/pre/part-000/manifest.json").read_text())
    assert manifest["family"] == "precomputed" and manifest["dim"] == 8 and "precomputed vectors" in manifest["origin"]
    out = tmp_path / "out"
    # the jobs of rules/retrieval.smk, as the rules hand them over
    pair = {"wildcards": {"dataset": "t", "model": "pre"}, "log": None}
    files = {"topk": str(out / "topk.parquet"), "similarities": str(out / "sims.parquet"),
             "search": str(out / "search.json"), "transform_topk": str(out / "ttopk.parquet")}
    run_retrieval_search(make_job(input={"set": str(set_dir), "stores": stores},
                                  output={"topk": files["topk"], "similarities": files["similarities"],
                                          "summary": files["search"]},
                                  params={"spec": spec, "settings": SETTINGS, "seed": 3, "device": "cpu"},
                                  resources={"shard_rows": 4, "query_batch": 2, "extra_candidates": 1}, **pair))
    summary = json.loads((out / "search.json").read_text())
    assert summary["queries"] == 5 and summary["corpus"] == 7
    assert summary["search"]["shards"] == 2 and summary["search"]["query_batch"] == 2  # the job's resources
    topk = pl.read_parquet(out / "topk.parquet")
    assert topk.columns == ["query_id", "rank", "corpus_id", "score"]
    assert topk.group_by("query_id").len()["len"].to_list() == [5] * 5
    # the duplicated sentence: d5 and d6 have the same text, hence the same vector and score: d5 first (id asc)
    q5 = topk.filter(pl.col("query_id") == "q5").sort("rank")
    assert q5["corpus_id"][:2].to_list() == ["d5", "d6"] and q5["score"][0] == q5["score"][1]
    sims = pl.read_parquet(out / "sims.parquet")
    assert sims.filter(pl.col("kind") == "random").height == 10
    random = sims.filter(pl.col("kind") == "random").join(pl.DataFrame({"query_id": list(QRELS),
                                                                        "answer": list(QRELS.values())}), on="query_id")
    texts_of = dict(zip([f"d{i}" for i in range(len(DOCS))], DOCS))
    assert all(texts_of[c] != texts_of[a] for c, a in zip(random["corpus_id"], random["answer"]))  # not the answer, by text
    # C equals the answer's score in the ranking (one exact scoring everywhere)
    c_q1 = sims.filter((pl.col("kind") == "correct") & (pl.col("query_id") == "q1"))["similarity"][0]
    ranked = topk.filter((pl.col("query_id") == "q1") & (pl.col("corpus_id") == "d0"))["score"]
    if ranked.len():
        assert ranked[0] == c_q1
    iso_settings = {"eval_split": "test", "ks": [5], "transforms": ["standardise", "whiten", "pca"], "fit_on": "corpus",
                    "whiten_epsilon": 1e-6, "pca_components": 3}
    run_retrieval_isotropy(make_job(input={"set": str(set_dir), "stores": stores},
                                    output={"isotropy": str(out / "iso.parquet"), "topk": files["transform_topk"]},
                                    params={"spec": spec, "settings": iso_settings, "device": "cpu"}, **pair))
    iso = pl.read_parquet(out / "iso.parquet")
    assert set(iso["transform"]) == {"none", "standardise", "whiten", "pca"}
    assert iso.filter(pl.col("transform") == "pca")["dim"].to_list() == [3, 3]
    corpus = iso.filter(pl.col("vectors") == "corpus")
    assert corpus.filter(pl.col("transform") != "pca")["isoscore"].is_nan().all()  # 7 vectors in 8 dims
    assert 0 < corpus.filter(pl.col("transform") == "pca")["isoscore"][0] <= 1  # 7 vectors in 3 dims
    assert "more vectors than dimensions" in iso["note"][0]
    outputs = {name: str(out / f"{name}.parquet") for name in ("metrics", "thresholds", "summary", "replicates",
                                                                "outcomes")}
    run_retrieval_metrics(make_job(input=files, output=outputs, params={"settings": METRICS, "seed": 3}, **pair))
    summary = pl.read_parquet(outputs["summary"])
    assert set(summary["transform"]) == {"none", "standardise", "whiten", "pca"}
    assert summary["n_corpus"].to_list() == [7] * len(summary)
    base = summary.filter((pl.col("transform") == "none") & (pl.col("k") == 5)).row(0, named=True)
    assert base["accuracy_full"] == 1.0  # 7 documents, top 5: q5's answer d6 is second; the rest are found
    outcomes = pl.read_parquet(outputs["outcomes"]).filter(pl.col("statistic") == "accuracy@5")
    assert outcomes["correct"].all() and outcomes.height == 5
    # the aggregate: pair i's files are its inputs `<file>_i`, the pairs a plain list of names
    tables, plots = tmp_path / "tables", tmp_path / "plots" / "retrieval"
    run_retrieval_aggregate(make_job(
        input={"summary_0": outputs["summary"], "isotropy_0": str(out / "iso.parquet"),
               "similarities_0": files["similarities"], "topk_0": files["topk"]},
        output={"accuracy": str(tables / "retrieval_accuracy.csv"), "isotropy": str(tables / "retrieval_isotropy.csv"),
                "correlations": str(tables / "retrieval_correlations.csv"),
                "tables": [str(tables / f"retrieval_table{i}.csv") for i in (1, 2, 3)],
                "plots": [str(plots / "t" / "accuracy_vs_k.png"), str(plots / "t" / "similarities.png")]},
        params={"pairs": [{"dataset": "t", "model": "pre"}], "datasets": ["t"], "seed": 3,
                "settings": {"table_k": 5, "correlations_k": 5, "bootstrap_b": 20,
                             "transforms": iso_settings["transforms"]}}))
    accuracy = pl.read_csv(tables / "retrieval_accuracy.csv")
    assert accuracy.filter(pl.col("k") == 5)[["set", "model", "accuracy_full"]].rows() == [("t", "pre", 1.0)]
    assert all((tables / f"retrieval_table{i}.csv").is_file() for i in (1, 2, 3))
    assert (plots / "t" / "accuracy_vs_k.png").stat().st_size > 0 and (plots / "t" / "similarities.png").is_file()


def test_precomputed_checks_coverage_dimension_and_digest(tmp_path, log):
    texts = list(dict.fromkeys(DOCS + list(QUERIES.values())))
    vecs = fake_vectors(texts)
    path = parquet_vectors(tmp_path, texts[:-1], vecs[:-1])  # one text has no vector
    with pytest.raises(ModelUnavailable, match="1 of .* texts have no vector"):
        store_of(tmp_path, {"family": "precomputed", "vectors": str(path)}, log)
    path = parquet_vectors(tmp_path, texts, vecs)
    with pytest.raises(ValueError, match="8 dimensions, the config says dim 16"):
        store_of(tmp_path, {"family": "precomputed", "vectors": str(path), "dim": 16}, log)
    with pytest.raises(ValueError, match="sha256"):
        store_of(tmp_path, {"family": "precomputed", "vectors": str(path), "sha256": "0" * 64}, log)
    bad = vecs.copy()
    bad[0, 0] = np.nan
    path = parquet_vectors(tmp_path, texts, bad)
    with pytest.raises(ValueError, match="non-finite"):
        store_of(tmp_path, {"family": "precomputed", "vectors": str(path)}, log)


def test_precomputed_npy_by_id_with_whitespace_differences(tmp_path, set_dir, log):
    ids = [f"d{i}" for i in range(len(DOCS))] + list(QUERIES)
    texts = DOCS + list(QUERIES.values())
    vecs = fake_vectors(texts)
    np.save(tmp_path / "v.npy", vecs)
    (tmp_path / "rows.txt").write_text("\n".join(ids) + "\n")
    spec = {"family": "precomputed", "vectors": str(tmp_path / "v.npy"), "rows": str(tmp_path / "rows.txt"), "key": "id",
            "id_texts": [str(set_dir)]}
    stores = store_of(tmp_path, spec, log)
    from workflow_scripts.vector_store import VectorStore
    got, _ = VectorStore(stores).lookup(np.array([text_key(DOCS[2])], np.uint64))
    np.testing.assert_array_equal(got[0], vecs[2])
    # texts match after whitespace normalisation; an id naming two texts is refused
    (tmp_path / "rows.txt").write_text("\n".join(ids) + "\n")
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"_id": "d0", "text": "something else"}) + "\n")
    with pytest.raises(ValueError, match="names two different texts"):
        store_of(tmp_path, {**spec, "id_texts": [str(set_dir), str(other)]}, log, name="x")
    (tmp_path / "t.txt").write_text("\n".join("  " + t.replace(" ", "   ") for t in texts) + "\n")
    store_of(tmp_path, {"family": "precomputed", "vectors": str(tmp_path / "v.npy"), "rows": str(tmp_path / "t.txt")},
             log, name="y")


def test_tfidf_sparse_store_is_searched_exactly(tmp_path, set_dir, log):
    files = [tmp_path / "texts" / "part-000.parquet"]
    write_text_partitions(DOCS + list(QUERIES.values()), files)
    spec = {"family": "tfidf"}
    fitted = tmp_path / "fit.json"
    fit_tfidf(spec, None, str(fitted), log, [str(files[0])], scope="retrieval.t")
    out_store = tmp_path / "stores" / "tfidf" / "part-000"
    embed_partition("tfidf", spec, "retrieval.t", 0, 1, [str(files[0])], str(out_store), 1, log, fitted=str(fitted))
    out = tmp_path / "out"
    search_job(str(set_dir), [str(out_store)], "tfidf", spec, "t", SETTINGS, 3, "cpu", 1, str(out / "topk.parquet"),
               str(out / "sims.parquet"), str(out / "search.json"), log)
    topk = pl.read_parquet(out / "topk.parquet")
    # brute force with scikit-learn's own cosine on the same vectors
    from sklearn.metrics.pairwise import cosine_similarity
    from workflow_scripts.vector_store import VectorStore
    store = VectorStore([str(out_store)])
    dvec, _ = store.lookup(np.array([text_key(t) for t in DOCS], np.uint64))
    for qi, (qid, qtext) in enumerate(QUERIES.items()):
        qv, _ = store.lookup(np.array([text_key(qtext)], np.uint64))
        scores = cosine_similarity(qv, dvec)[0]
        order = np.lexsort((np.arange(len(DOCS)), -np.round(scores, 12)))[:5]
        got = topk.filter(pl.col("query_id") == qid).sort("rank")
        assert got["corpus_id"].to_list() == [f"d{i}" for i in order]
        np.testing.assert_allclose(got["score"].to_numpy(), scores[order], atol=1e-6)
    iso = isotropy_job(str(set_dir), [str(out_store)], "tfidf", spec, "t",
                       {"eval_split": "test", "ks": [5], "transforms": ["pca"], "fit_on": "corpus",
                        "whiten_epsilon": 1e-6, "pca_components": 2, "search": {}}, "cpu", 1,
                       str(out / "iso.parquet"), str(out / "ttopk.parquet"), log)
    assert iso["isoscore"].is_nan().all() and "sparse store" in iso["note"][0]
    assert pl.read_parquet(out / "ttopk.parquet").height == 0


def test_reference_answer_list_scoring_counts_a_copy_as_a_miss():
    """methods.md: the reference searches the answers aligned to its questions (a sentence repeated
    once per question it answers) and scores by row index. Two questions answered by the same
    sentence: the reference must miss one of them at k = 1 (the copy ranks first for it); searched
    against the distinct sentences and judged by qrels, both are hits."""
    answer = np.array([1.0, 0.0], np.float32)
    other = np.array([0.6, 0.8], np.float32)
    questions = np.array([[0.9, 0.1], [0.95, 0.05]], np.float32)
    aligned = np.stack([answer, answer])  # the reference's answer rows: one per question
    top1 = np.argsort(questions @ aligned.T, axis=1)[:, -1:]
    reference_hits = [i in top1[i] for i in range(2)]
    assert reference_hits.count(True) == 1
    distinct = np.stack([answer, other])  # deduplicated sentences; both questions' qrels name row 0
    from workflow_scripts.retrieval.search import dot64, rank_order
    scores = np.stack([dot64(np.broadcast_to(q, distinct.shape).copy(), distinct) for q in questions])
    ranked = rank_order(scores, np.broadcast_to(np.arange(2), scores.shape))
    assert (ranked[:, 0] == 0).all()


def test_the_query_texts_job_writes_every_question_once(tmp_path, set_dir):
    from workflow_scripts.retrieval.query_texts import run_retrieval_query_texts

    parts = [str(tmp_path / "q" / f"part-{p:03d}.parquet") for p in range(2)]
    run_retrieval_query_texts(make_job(input={"set": str(set_dir)}, output={"texts": parts}))
    texts = pl.concat([pl.read_parquet(p) for p in parts])["text"].to_list()
    # q5's text is also a document's: only the questions are this text set
    assert sorted(texts) == sorted(QUERIES.values())
