"""Sample sets of the set-theoretic probe: (previous, S0, next, S1, S2) per window of an article.

A sample set (`settheory.datasets.<name>`) is built from an article collection (the shared articles
stage, `articles.<name>`) with a generator, or imported from a table.

Built sample sets:
1. Articles: every article of the collection whose sentences give at least one usable window; with
   `max_articles`, the ones with the smallest stable_id(seed, "settheory", set, article_id) (a seeded
   choice that does not depend on the order of the release).
2. Windows: three consecutive sentences (previous, S0, next), of the article's sentences cleaned first
   (`clean`, default true: articles.clean_news_sentences joins DailyMail's " . " line-break
   splits, repairs the rest, and marks fragments, which no window contains: `windows_dropped_fragment`;
   `sentences_joined`, `sentences_repaired`, `sentences_fragment_<reason>` counted; `window` is then
   the index in the cleaned sentences). A window is dropped when two consecutive
   sentences of it are equal after keeping only their alphanumeric characters (the reference code's
   rule; `equal_sentences`), or when a sentence has fewer than `min_words` or more than `max_words`
   whitespace words (`length`). Of the rest, `windows_per_article` are chosen per article with
   random.Random(stable_id(seed, "settheory", set, article_id)).
3. Fusions: S1 = fuse(previous, S0) and S2 = fuse(S0, next) by the set's generator
   (workflow_scripts/generator.py) with the set's prompt; items are the pairs {first, second}.
   Outputs are cached per (generator settings, rendered prompt), so a rerun never regenerates.
4. Echoes: a fusion that does not fuse. Words are the lower-cased alphanumeric runs; "matched"
   counts the words of one sequence found, in order, in another (difflib's matching blocks):
   - `empty`: no word at all;
   - `unfinished`: the generator stopped at max_new_tokens, not by itself (a cut-off sentence);
   - `repeat`: at least `echo_threshold` (0.9) of the fusion's words come, in order, from one input
     alone: it copies (part of) one sentence and drops the other's information;
   - `concatenation`: at least `echo_threshold` of the fusion's words come, in order, from the two
     inputs one after the other (either order), and it keeps at least `echo_threshold` of their
     words: it glues the sentences together with a few joining words or edits;
   - `prompt_copy`: the fusion repeats three consecutive words of the prompt (its system text or
     shots) that neither input contains: a small model pastes the few-shot examples into its answer
     ("The city orchestra's lower town was flooded ...").
   Why: for such a "fusion" TextUnion is the inputs' own text, TextOverlap's inputs share S0's words
   verbatim and every difference sample is a string difference, which any bag-of-words model passes
   by construction; the criteria would measure the generator's laziness, not the encoder. A window
   with an echo in either fusion is kept out of the samples (`keep_echoes: false`, the default),
   and counted per reason; with `keep_echoes: true` it stays, flagged in `s1_echo`/`s2_echo`.
5. Gate (`gate`): a fusion past the echo rule can still be no fusion. From the texts alone (content
   words: the lower-cased words outside a list of English function words, crudely stemmed):
   - `source_dropped`: it keeps less than `min_source_kept` (0.6) of one input's content words;
   - `hallucination`: more than `max_new_share` (0.3) of its content words are in neither input;
   - `too_short`: fewer words than `min_length_ratio` (0.7) times the longer input;
   - `too_long`: more words than `max_length_ratio` (1.3) times both inputs together;
   - `near_concatenation`: at most `max_edit_share` (0.25) word edits per input word (Levenshtein
     distance in words: insert, delete, substitute) away from the inputs joined in either order: a
     concatenation with small edits ("we" made "you", a joining "and").
   Every rule a fusion fails is counted (`fusions_gate_<rule>`; a fusion may fail several), the
   fusions it rejects (`fusions_rejected_gate`) and their windows (`windows_rejected_gate`, when no
   echo rejected them first); `fusions_accepted` passed both. A rejected fusion's first failed rule
   goes in `s1_echo` / `s2_echo` and its window is dropped like an echo's (kept and flagged with
   `keep_echoes: true`). The defaults were chosen on SmolLM2-135M's fusions of resources/settheory
   and CNN/DailyMail articles (/work/notes/fusions.md); `gate: {enabled: false}` turns it off.
   An answer past a served generator's `max_answer_chars` (flagged `too_long` by the generator) fails
   `too_long` whether the gate is on or not (`fusions_over_max_answer_chars`), never an echo rule;
   the edit distance is not computed for texts past EDIT_DISTANCE_MAX_WORDS (edit_share).
   The report page (`tables/settheory_fusions_<set>.csv`): 20 accepted and 10 rejected fusions (echo
   or gate), a seeded choice, beside their inputs with the gate's measures.
6. A built set left without a sample stops its job (require_samples), naming the counts per rule and
   what to change, instead of writing an empty text set that a later job fails on.
Imported sample sets (`file`): a table with columns previous, S0, next, S1, S2 (the reference code's
names; `columns` renames), Parquet, CSV, TSV or JSON Lines. Rows with a missing or empty text are
counted (`missing_text`) and repeated rows (`duplicate`); echoes are flagged, never dropped (the
table is the user's), and so are the gate's rejections. Its `generator` and `prompt` say what made it
(default "import:<file name>" and "unknown").

Output: samples.parquet, one row per sample: sample_id (uint64, stable_id("settheory", set,
article_id, window) or, imported, of the five texts), article_id, doc_id, window (index of S0 in the
article's sentences), previous, S0, next, S1, S2, s1_echo, s2_echo, generator ("name@digest"),
generator_spec (JSON), prompt (JSON of the prompt); the set's texts (the five sentences) as text
partitions; and a report with the counts of every step, examples of fusions and rejected ones, the
generator's provenance and throughput, the gate's thresholds and counts per rule (`gate_rejected`);
and the report page's table of fusions (tables/settheory_fusions_<set>.csv).

Job: run_settheory_samples (rule settheory_samples, rules/settheory.smk).
"""
from __future__ import annotations

import difflib
import heapq
import json
import random
import os
import re
import time
from collections import Counter
from pathlib import Path

import polars as pl

from workflow_scripts import articles as art
from workflow_scripts.common import atomic_path, setup_logging, stable_id
from workflow_scripts.generator import Generator, make_generator, spec_digest
from workflow_scripts.settheory.defaults import DEFAULT_SET
from workflow_scripts.texts import write_dataset

SENTENCES = ("previous", "S0", "next", "S1", "S2")
SCHEMA = {"sample_id": pl.UInt64, "article_id": pl.UInt64, "doc_id": pl.String, "window": pl.Int32,
          **{s: pl.String for s in SENTENCES}, "s1_echo": pl.String, "s2_echo": pl.String,
          "generator": pl.String, "generator_spec": pl.String, "prompt": pl.String}
ECHO_REASONS = ("empty", "unfinished", "repeat", "concatenation", "prompt_copy")
N_EXAMPLES = 8

# the quality gate's thresholds (module docstring, "Gate"); schema.yaml says the same defaults
GATE_DEFAULTS = {"enabled": True, "min_source_kept": 0.6, "max_new_share": 0.3, "min_length_ratio": 0.7,
                 "max_length_ratio": 1.3, "max_edit_share": 0.25}
GATE_REASONS = ("source_dropped", "hallucination", "too_short", "too_long", "near_concatenation")
N_GATE_ACCEPTED, N_GATE_REJECTED = 20, 10  # fusions on a sample set's report page
IMPORT_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".tab": "tsv",
                  ".jsonl": "jsonl", ".json": "jsonl"}


# ---- windows -----------------------------------------------------------------------------------

def alnum(text: str) -> str:
    """The text with only its alphanumeric characters (the reference code's duplicate test)."""
    return "".join(ch for ch in text if ch.isalnum())


def candidate_windows(sentences: list[str | None], min_words: int, max_words: int, counts: Counter) -> list[int]:
    """Indices i of S0 for the windows (i-1, i, i+1) that pass, counting the dropped ones per reason
    (a None sentence is a fragment that clean_news_sentences dropped)."""
    out = []
    for i in range(1, len(sentences) - 1):
        window = sentences[i - 1:i + 2]
        if any(s is None for s in window):
            counts["windows_dropped_fragment"] += 1
            continue
        keys = [alnum(s) for s in window]
        if keys[0] == keys[1] or keys[1] == keys[2]:
            counts["windows_dropped_equal_sentences"] += 1
            continue
        if any(not (min_words <= len(s.split()) <= max_words) for s in window):
            counts["windows_dropped_length"] += 1
            continue
        out.append(i)
    return out


def choose_windows(articles_dir: str, sampleset: str, spec: dict, seed: int, log) -> tuple[list[dict], Counter]:
    """The windows of a built sample set: [{article_id, doc_id, window, previous, S0, next}], sorted."""
    counts = Counter()
    max_articles = spec.get("max_articles")
    per_article = spec["windows_per_article"]
    heap: list[tuple[int, int, dict]] = []  # (-key, article_id, windows): the max_articles smallest keys
    kept = []
    for row in art.read_articles(articles_dir, ["article_id", "doc_id", "sentences"]):
        counts["articles_read"] += 1
        sentences = row["sentences"] or []
        if spec.get("clean", True):
            sentences, cleaned = art.clean_news_sentences(sentences)
            counts.update(cleaned)
        if len(sentences) < 3:
            counts["articles_too_few_sentences"] += 1
            continue
        counts["windows_candidates"] += len(sentences) - 2
        windows = candidate_windows(sentences, spec["min_words"], spec["max_words"], counts)
        if not windows:
            counts["articles_without_usable_window"] += 1
            continue
        key = stable_id(seed, "settheory", sampleset, row["article_id"])
        rng = random.Random(key)
        chosen = sorted(rng.sample(windows, min(per_article, len(windows))))
        entry = [{"article_id": row["article_id"], "doc_id": row["doc_id"], "window": i,
                  "previous": sentences[i - 1], "S0": sentences[i], "next": sentences[i + 1]} for i in chosen]
        if max_articles is None:
            kept.append((key, entry))
        elif len(heap) < max_articles:
            heapq.heappush(heap, (-key, row["article_id"], entry))
        elif -heap[0][0] > key:
            heapq.heapreplace(heap, (-key, row["article_id"], entry))
    if max_articles is not None:
        kept = [(-k, e) for k, _, e in heap]
    counts["articles_with_windows"] = counts["articles_read"] - counts["articles_too_few_sentences"] \
        - counts["articles_without_usable_window"]
    counts["articles_chosen"] = len(kept)
    windows = [w for _, entry in sorted(kept, key=lambda x: x[0]) for w in entry]
    counts["windows_chosen"] = len(windows)
    log.info("%s: %d articles read, %d chosen, %d windows", sampleset, counts["articles_read"], len(kept), len(windows))
    return windows, counts


# ---- echoes ------------------------------------------------------------------------------------

WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def matched(seq: list[str], other: list[str]) -> int:
    """Words of `seq` found, in order, in `other` (difflib's matching blocks, no junk heuristic)."""
    if not seq or not other:
        return 0
    sm = difflib.SequenceMatcher(None, seq, other, autojunk=False)
    return sum(block.size for block in sm.get_matching_blocks())


def trigrams(ws: list[str]) -> set[tuple[str, ...]]:
    return set(zip(ws, ws[1:], ws[2:]))


def prompt_trigrams(prompt: dict | None) -> set[tuple[str, ...]]:
    """Word trigrams of a prompt's fixed text: its system text and shots (not the item's template)."""
    if not prompt:
        return set()
    texts = [prompt.get("system") or ""] + [t for shot in prompt.get("shots", []) for t in shot]
    return set().union(*(trigrams(words(t)) for t in texts))


def echo_reason(fusion: str, first: str, second: str, threshold: float = 0.9, finished: bool = True,
                prompt_grams: set | None = None) -> str | None:
    """Why `fusion` of (first, second) is an echo (module docstring), or None for a real fusion."""
    f, a, b = words(fusion), words(first), words(second)
    if not f:
        return "empty"
    if not finished:
        return "unfinished"
    if max(matched(f, a), matched(f, b)) >= threshold * len(f):
        return "repeat"
    for joined in (a + b, b + a):
        m = matched(f, joined)
        if m >= threshold * len(f) and m >= threshold * len(joined):
            return "concatenation"
    if prompt_grams and (trigrams(f) & prompt_grams) - trigrams(a) - trigrams(b):
        return "prompt_copy"
    return None


# ---- the quality gate ----------------------------------------------------------------------------

# English function words: what is left of a sentence without them are its content words
FUNCTION_WORDS = frozenset("""
a an the and or but nor so yet for of in on at to from by with without about above after against along
among around as before behind below beneath beside between beyond during except inside into like near off
onto out outside over past since than through throughout till toward towards under until up upon via
within i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself
she her hers herself it its itself they them their theirs themselves this that these those who whom whose
which what whatever whoever when where why how all any both each either every few many more most much
neither no none not other others some such own same is am are was were be been being have has had having
do does did doing will would shall should can could may might must ought also just only very too then
there here now again still even ever if because while although though whether once s t d ll m re ve
said says say told according
""".split())


def stem(word: str) -> str:
    """A crude English stem, enough to match "injections" with "injection" and "lowered" with "lower"."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_words(ws: list[str]) -> list[str]:
    return [stem(w) for w in ws if w not in FUNCTION_WORDS]


def word_edits(x: list[str], y: list[str]) -> int:
    """Levenshtein distance in words (insert, delete, substitute: 1 each): NLTK's, on word lists."""
    from nltk.metrics.distance import edit_distance
    return edit_distance(x, y)


# NLTK's edit_distance refuses longer inputs (2000 words) and is quadratic below that
EDIT_DISTANCE_MAX_WORDS = 1000


def edit_share(fusion: list[str], joined: list[str]) -> float:
    """Word edits per input word from `joined` to `fusion`. Past EDIT_DISTANCE_MAX_WORDS, or when the
    fusion is over three times as long (> 2 edits per word, above any max_edit_share), the length
    difference stands in: a lower bound, which no fusion of that size needs to beat."""
    if max(len(fusion), len(joined)) > EDIT_DISTANCE_MAX_WORDS or len(fusion) > 3 * len(joined) + 10:
        return abs(len(fusion) - len(joined)) / max(len(joined), 1)
    return word_edits(fusion, joined) / max(len(joined), 1)


def gate_measures(fusion: str, first: str, second: str) -> dict:
    """What the gate reads of a fusion of (first, second): the share of each input's content words it
    keeps, the share of its own content words that are in neither input, its length in words against
    the longer input and against both, and its word edit distance to the nearer concatenation."""
    f, a, b = words(fusion), words(first), words(second)
    cf, ca, cb = content_words(f), content_words(a), content_words(b)
    have = set(cf)
    edits = [edit_share(f, joined) for joined in (a + b, b + a)]
    return {
        "kept_first": sum(w in have for w in ca) / len(ca) if ca else 1.0,
        "kept_second": sum(w in have for w in cb) / len(cb) if cb else 1.0,
        "new_share": sum(w not in set(ca) | set(cb) for w in cf) / len(cf) if cf else 0.0,
        "length_longer": len(f) / max(len(a), len(b), 1),
        "length_both": len(f) / max(len(a) + len(b), 1),
        "edit_share": min(edits),
    }


def gate_reasons(measures: dict, gate: dict) -> list[str]:
    """The gate rules a fusion fails (GATE_REASONS order), from its gate_measures."""
    out = []
    if min(measures["kept_first"], measures["kept_second"]) < gate["min_source_kept"]:
        out.append("source_dropped")
    if measures["new_share"] > gate["max_new_share"]:
        out.append("hallucination")
    if measures["length_longer"] < gate["min_length_ratio"]:
        out.append("too_short")
    if measures["length_both"] > gate["max_length_ratio"]:
        out.append("too_long")
    if measures["edit_share"] <= gate["max_edit_share"]:
        out.append("near_concatenation")
    return out


def fusion_page(rows: list[dict], seed: int, sampleset: str) -> list[dict]:
    """The report page's fusions: N_GATE_ACCEPTED accepted and N_GATE_REJECTED rejected ones, a seeded
    choice (random.Random(stable_id(seed, "settheory-page", set))), each beside its two inputs."""
    rng = random.Random(stable_id(seed, "settheory-page", sampleset))
    accepted = [r for r in rows if r["status"] == "accepted"]
    rejected = [r for r in rows if r["status"] != "accepted"]
    pick = lambda xs, n: [xs[i] for i in sorted(rng.sample(range(len(xs)), min(n, len(xs))))]
    return pick(accepted, N_GATE_ACCEPTED) + pick(rejected, N_GATE_REJECTED)


def write_fusion_page(path: str, page: list[dict]) -> None:
    columns = ["status", "reason", "first", "second", "fusion", "kept_first", "kept_second", "new_share",
               "length_longer", "edit_share"]
    frame = pl.DataFrame([{c: r.get(c) for c in columns} for r in page],
                         schema={c: (pl.Float64 if c in columns[5:] else pl.String) for c in columns}, orient="row")
    frame = frame.with_columns([pl.col(c).round(2) for c in columns[5:]])
    with atomic_path(path) as tmp:
        frame.write_csv(tmp)


# ---- building ----------------------------------------------------------------------------------

def prompt_json(prompt: dict) -> str:
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False)


def generator_label(name: str, spec: dict) -> str:
    return f"{name}@{spec_digest(spec)}"


def build(sampleset: str, spec: dict, seed: int, articles_dir: str, generator_name: str, generator_spec: dict,
          prompt: dict, device: str, cache: str | None, log, generator: Generator | None = None) -> tuple[pl.DataFrame, dict]:
    """The samples of a built sample set and its report."""
    spec = {**DEFAULT_SET, **spec}
    windows, counts = choose_windows(articles_dir, sampleset, spec, seed, log)
    gen = generator or make_generator(generator_spec, device, log, cache, generator_name)
    gate = {**GATE_DEFAULTS, **(spec.get("gate") or {})}
    items = [{"first": w["previous"], "second": w["S0"]} for w in windows] + \
            [{"first": w["S0"], "second": w["next"]} for w in windows]
    start = time.perf_counter()
    records = gen.generate_records(prompt, items) if items else []
    seconds = time.perf_counter() - start
    n = len(windows)
    grams = prompt_trigrams(prompt)
    rows, examples, rejected_examples, page_rows = [], [], [], []
    for j, w in enumerate(windows):
        fusions = records[j], records[n + j]
        # an answer cut at max_answer_chars is the gate's (`too_long`), not an echo
        reasons = [None if rec.get("too_long") else
                   echo_reason(rec["text"], item["first"], item["second"], spec["echo_threshold"], rec["finished"], grams)
                   for rec, item in zip(fusions, (items[j], items[n + j]))]
        for r in reasons:
            counts[f"fusions_echo_{r}" if r else "fusions_ok"] += 1
        gated = False
        for k, (rec, item) in enumerate(zip(fusions, (items[j], items[n + j]))):
            measures = gate_measures(rec["text"], item["first"], item["second"])
            failed = gate_reasons(measures, gate) if gate["enabled"] and not reasons[k] else []
            if rec.get("too_long"):  # past the generator's max_answer_chars: rejected, gate on or off
                failed = ["too_long", *[r for r in failed if r != "too_long"]]
                counts["fusions_over_max_answer_chars"] += 1
            for r in failed:
                counts[f"fusions_gate_{r}"] += 1  # every rule a fusion fails
            if failed:
                counts["fusions_rejected_gate"] += 1
                reasons[k] = failed[0]
                gated = True
            counts["fusions_accepted"] += not reasons[k]
            status = "accepted" if not reasons[k] else ("rejected: gate" if failed else "rejected: echo")
            page_rows.append({"status": status, "reason": ", ".join(failed) or reasons[k], "first": item["first"],
                              "second": item["second"], "fusion": rec["text"], **measures})
        if gated and not any(r in ECHO_REASONS for r in reasons):
            counts["windows_rejected_gate"] += 1
        row = {"sample_id": stable_id("settheory", sampleset, w["article_id"], w["window"]),
               "article_id": w["article_id"], "doc_id": w["doc_id"], "window": w["window"],
               "previous": w["previous"], "S0": w["S0"], "next": w["next"],
               "S1": fusions[0]["text"], "S2": fusions[1]["text"], "s1_echo": reasons[0], "s2_echo": reasons[1]}
        if any(r in ECHO_REASONS for r in reasons):
            counts["windows_rejected_echo"] += 1
        if any(reasons):
            for r, rec, item in zip(reasons, fusions, (items[j], items[n + j])):
                if r and len(rejected_examples) < N_EXAMPLES:
                    rejected_examples.append({"reason": r, "first": item["first"], "second": item["second"],
                                              "fusion": rec["raw"]})
            if not spec["keep_echoes"]:
                continue
        elif len(examples) < N_EXAMPLES:
            examples.append({k: row[k] for k in SENTENCES})
        rows.append(row)
    label = generator_label(generator_name, generator_spec)
    frame = finish(rows, label, generator_spec, prompt)
    fusions = 2 * n
    counts["fusions_requested"] = fusions
    counts["fusions_generated"] = gen.stats["generated"]
    counts["fusions_cached"] = gen.stats["cached"]
    counts["samples"] = frame.height
    echoes = sum(counts[f"fusions_echo_{r}"] for r in ECHO_REASONS)
    report = {
        "sampleset": sampleset, "kind": "built", "articles": articles_dir, "spec": spec, "seed": seed,
        "counts": dict(sorted(counts.items())),
        "echo_share": echoes / fusions if fusions else None,
        "echo_rule": f"words matched in order >= {spec['echo_threshold']} (module docstring of settheory/samples.py)",
        "generator": {"name": generator_name, "label": label, **gen.describe(), "stats": gen.stats},
        "generation_seconds": round(seconds, 3),
        "fusions_per_second": round(gen.stats["generated"] / gen.stats["seconds"], 4) if gen.stats["seconds"] else None,
        "prompt": prompt, "examples": examples, "rejected_examples": rejected_examples,
        "gate": gate, "gate_rejected": {r: counts[f"fusions_gate_{r}"] for r in GATE_REASONS},
        "fusion_page": fusion_page(page_rows, seed, sampleset),
    }
    log.info("%s: %d windows, %d fusions (%d generated, %d cached), %d echoes (%s), %d samples", sampleset, n, fusions,
             gen.stats["generated"], gen.stats["cached"], echoes,
             {r: counts[f"fusions_echo_{r}"] for r in ECHO_REASONS}, frame.height)
    return frame, report


def finish(rows: list[dict], label: str, generator_spec: dict | str, prompt: dict | str) -> pl.DataFrame:
    gspec = generator_spec if isinstance(generator_spec, str) else json.dumps(generator_spec, sort_keys=True)
    ptext = prompt if isinstance(prompt, str) else prompt_json(prompt)
    rows = [{**r, "generator": label, "generator_spec": gspec, "prompt": ptext} for r in rows]
    frame = pl.DataFrame(rows, schema=SCHEMA, orient="row") if rows else pl.DataFrame(schema=SCHEMA)
    return frame.unique("sample_id", keep="first", maintain_order=True).sort("sample_id")


def read_table(path: str, fmt: str | None) -> pl.DataFrame:
    fmt = fmt or IMPORT_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise ValueError(f"{path}: cannot tell the format from the extension; set `format` "
                         f"({', '.join(sorted(set(IMPORT_FORMATS.values())))})")
    if fmt == "parquet":
        return pl.read_parquet(path)
    if fmt == "jsonl":
        return pl.read_ndjson(path, infer_schema_length=None)
    return pl.read_csv(path, separator="\t" if fmt == "tsv" else ",", infer_schema=False, quote_char='"')


def import_samples(sampleset: str, spec: dict, log) -> tuple[pl.DataFrame, dict]:
    """An existing table of samples (previous, S0, next, S1, S2)."""
    path = spec["file"]
    table = read_table(path, spec.get("format"))
    columns = {**{s: s for s in SENTENCES}, **spec.get("columns", {})}
    missing = [c for c in columns.values() if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: no column(s) {missing} (has {table.columns}); expected {list(SENTENCES)}, "
                         "or `columns` naming them")
    threshold = spec.get("echo_threshold", DEFAULT_SET["echo_threshold"])
    counts, rows, seen, page_rows = Counter(), [], set(), []
    gate = {**GATE_DEFAULTS, **(spec.get("gate") or {})}
    for raw in table.select([pl.col(columns[s]).cast(pl.String).alias(s) for s in SENTENCES]).iter_rows(named=True):
        counts["rows_read"] += 1
        texts = {s: art.normalise(raw[s] or "") for s in SENTENCES}
        if not all(texts.values()):
            counts["rows_missing_text"] += 1
            continue
        key = tuple(texts[s] for s in SENTENCES)
        if key in seen:
            counts["rows_duplicate"] += 1
            continue
        seen.add(key)
        r1 = echo_reason(texts["S1"], texts["previous"], texts["S0"], threshold)
        r2 = echo_reason(texts["S2"], texts["S0"], texts["next"], threshold)
        for r in (r1, r2):
            counts[f"fusions_echo_{r}" if r else "fusions_ok"] += 1
        flags = []
        for r, (fusion, first, second) in zip((r1, r2), (("S1", "previous", "S0"), ("S2", "S0", "next"))):
            measures = gate_measures(texts[fusion], texts[first], texts[second])
            failed = gate_reasons(measures, gate) if gate["enabled"] and not r else []
            for g in failed:
                counts[f"fusions_gate_{g}"] += 1
            counts["fusions_rejected_gate"] += bool(failed)
            flags.append(r or (failed[0] if failed else None))
            page_rows.append({"status": "accepted" if not flags[-1] else ("rejected: gate" if failed else "rejected: echo"),
                              "reason": ", ".join(failed) or r, "first": texts[first], "second": texts[second],
                              "fusion": texts[fusion], **measures})
        r1, r2 = flags
        rows.append({"sample_id": stable_id("settheory", sampleset, *key), "article_id": None, "doc_id": None,
                     "window": None, **texts, "s1_echo": r1, "s2_echo": r2})
    generator = spec.get("generator", f"import:{Path(path).name}")
    prompt = spec.get("prompt", "unknown")
    frame = finish(rows, generator, json.dumps({"import": str(path)}), prompt)
    counts["samples"] = frame.height
    report = {"sampleset": sampleset, "kind": "import", "file": str(path), "spec": spec,
              "counts": dict(sorted(counts.items())), "generator": {"label": generator}, "prompt": prompt,
              "examples": [{k: r[k] for k in SENTENCES} for r in frame.head(N_EXAMPLES).iter_rows(named=True)],
              "gate": gate, "gate_rejected": {r: counts[f"fusions_gate_{r}"] for r in GATE_REASONS},
              "fusion_page": fusion_page(page_rows, spec.get("seed", 0), sampleset)}
    log.info("%s: imported %d samples from %s (%s)", sampleset, frame.height, path, dict(counts))
    return frame, report


class EmptySampleSet(ValueError):
    """A sample set with no sample: stopped in its own job, not downstream (TF-IDF's "empty vocabulary")."""


def require_samples(sampleset: str, report: dict) -> None:
    """Raise EmptySampleSet, with what emptied the set and what to change, when it holds no sample."""
    counts = report["counts"]
    if counts.get("samples", 0) > 0:
        return
    key = f"settheory.datasets.{sampleset}"
    if report.get("kind") == "import":
        raise EmptySampleSet(f"sample set {sampleset!r} ({key}): no sample in {report.get('file')} "
                             f"({counts.get('rows_read', 0)} rows read, {counts.get('rows_missing_text', 0)} with a "
                             f"missing text, {counts.get('rows_duplicate', 0)} repeated)")
    if not counts.get("windows_chosen"):
        raise EmptySampleSet(
            f"sample set {sampleset!r} ({key}): no usable window in its articles ({counts.get('articles_read', 0)} "
            f"articles read; windows dropped: {counts.get('windows_dropped_length', 0)} for length, "
            f"{counts.get('windows_dropped_equal_sentences', 0)} equal sentences, "
            f"{counts.get('windows_dropped_fragment', 0)} fragments); widen `min_words`/`max_words` or use "
            "another collection")
    echoes = {r: counts[f"fusions_echo_{r}"] for r in ECHO_REASONS if counts.get(f"fusions_echo_{r}")}
    gated = {r: counts[f"fusions_gate_{r}"] for r in GATE_REASONS if counts.get(f"fusions_gate_{r}")}
    raise EmptySampleSet(
        f"sample set {sampleset!r} ({key}): no sample left after the echo rule and the quality gate: "
        f"{counts.get('windows_chosen', 0)} windows, {counts.get('fusions_requested', 0)} fusions, "
        f"{counts.get('fusions_accepted', 0)} accepted; echoes per reason {echoes or 'none'}, gate rejections per "
        f"rule {gated or 'none'} (a fusion may fail several); windows rejected: "
        f"{counts.get('windows_rejected_echo', 0)} by an echo, {counts.get('windows_rejected_gate', 0)} by the gate. "
        f"To keep samples: a larger generator (`{key}.generator`, e.g. a served one, backend: openai), "
        f"`{key}.keep_echoes: true` (kept and flagged), looser thresholds under `{key}.gate` (or `enabled: false`), "
        f"or more windows (`max_articles`, `windows_per_article`). The rejected fusions are in the log above.")


def write(frame: pl.DataFrame, report: dict, out: str, text_files: list[str], report_path: str,
          fusions_path: str | None = None) -> None:
    texts = [t for s in SENTENCES for t in frame[s].to_list()]
    if fusions_path:
        write_fusion_page(fusions_path, report.get("fusion_page", []))
    write_dataset(frame, out, texts, text_files, report, report_path)


# ---- the jobs of rules/settheory.smk (workflow_scripts/jobs.py) ----
def run_settheory_samples(job) -> None:
    """A sample set's samples, texts, report and fusions page. params: spec (the set's config), seed,
    generation ({name, spec, prompt, device, cache} of a built set's generator; {} for an imported one)."""
    os.environ["OMP_NUM_THREADS"] = str(job.threads)  # a local generator's torch threads: the job's
    os.environ.setdefault("TQDM_DISABLE", "1")
    log = setup_logging(name="settheory")
    sampleset, spec = job.wildcards.dataset, job.params.spec
    if "file" in spec:
        frame, report = import_samples(sampleset, spec, log)
    else:
        gen = job.params.generation
        frame, report = build(sampleset, spec, job.params.seed, str(job.input.articles), gen["name"], gen["spec"],
                              gen["prompt"], gen["device"], gen["cache"], log)
    if frame.height == 0:  # the rejected fusions, before the job stops
        for example in report.get("rejected_examples", []):
            log.info("rejected (%s): %r + %r -> %r", example["reason"], example["first"], example["second"],
                     example["fusion"][:300])
    require_samples(sampleset, report)  # an empty set would fail later, in another job, naming neither
    write(frame, report, job.output.samples, list(job.output.texts), job.output.report, job.output.fusions)
