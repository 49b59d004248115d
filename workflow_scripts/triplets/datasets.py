"""The five sentence-triplet datasets of Zhu, Li & de Melo (seed 002), and user-supplied ones.

A dataset is a table of triplets (S, S+, S*): an embedding passes a triplet when S is closer to S+
than to S* ("strict"), or, for Negation Variants, when S+ and S* are closer to each other than either
is to S. The built-in kinds (also the default dataset names) and the transformations of
lexical.py and structural.py that make them:

| kind                 | S                          | S+                        | S*                          | paper |
|----------------------|----------------------------|---------------------------|-----------------------------|-------|
| negation_detection   | a corpus sentence          | synonym_substitution(S)   | not_negation(S)             | 674   |
| negation_variants    | a sentence starting A/An   | not_negation(S)           | quantifier_negation(S)      | 516   |
| clause_relatedness   | a reporting sentence       | embedded_clause(S)        | S, its embedded clause negated | 567 |
| argument_sensitivity | a template sentence        | passivization(S)          | argument_reordering(S)      | 445   |
| fixed_point_reorder  | SICK sentence_A            | its sentence_B partner    | fixed_point_inversion(S)    | 623   |

(Negation Variants follows the paper's Table 3 naming; its §2.2 lists the slots in another order.)

- Sources (sources.py): negation_detection reads any sentence source (SICK, WSJ, MSRP, lines);
  negation_variants the sentences whose first word is A/An; clause_relatedness the sentences shorter
  than `clause_max_tokens` (30: the reference code's WSJ filter, applied here to every source) that
  contain a form of say/think/know/tell (lemminflect's inflections; a cheap necessary condition,
  embedded_clause decides); fixed_point_reorder the pairs of `sick` sources that pass the partner
  rule below; argument_sensitivity no source at all.
- Clause Relatedness S*: the clause extracted for S+ is found again in S (same text up to the case
  of its first letter; its sentence-final punctuation may have been appended), negated with
  not_negation on the tags it had inside S, and put back in its place: the surrounding text stays byte
  for byte, the first letter keeps its case in S ('"We made our own decision," he said.' -> '"We
  didn't make our own decision," he said.'). The paper's examples and the reference code negate the
  embedded verb, not the reporting one. When the clause cannot be placed: "s_star:clause_not_found"
  or "s_star:ambiguous_clause".
- Argument Sensitivity comes from templates, as in the reference code: `X <verb>s Y.` (transitive
  verbs) and `X <verb>s Y to VP.` (control verbs ask, teach, allow, encourage, persuade, command),
  names × verbs × (verb phrases) × tenses (simple present, simple past), inflected by lemminflect. The
  two template families are shuffled separately (seeded) and alternated, so both are represented.
  The template's own words get their known tags (names NNP, the verb VBZ/VBD, "to" TO), the verb
  phrase the tagger's: alone, the tagger reads "Lilly admired Noah." as Lilly/RB admired/VBN.
  S+ is the passive with the agent ("Abigail is asked by Harley to bake some muffins."; settings
  passive_agent=false gives the reference's agentless "Abigail is asked to bake some muffins."),
  S* the swapped arguments.
- Fixed Point Reorder partners (settings sick_partners): relatedness > min_relatedness (4.6),
  label ENTAILMENT, neither sentence negated, word-level Levenshtein distance d = max_word_distance
  (1) or 1 - d / (mean length in words) in (min_similarity, 1) = (0.85, 1). match="reference" (the
  default) reproduces the reference code's select_similar_sentence exactly: words are split on single
  spaces (a trailing space in SICK becomes an empty word that counts in the distance) and "negated"
  is the unanchored regex not|n't (so "another" counts as negated). On the shared SICK.txt this
  keeps 481 pairs; match="words" (whitespace words, negation words only) keeps 491.
- Rejections are counted per source and reason, the reason prefixed by the slot that failed:
  "s_plus:no_synonym", "s_star:other_negation", "s_plus:unchanged" (S+ == S), "s_star:unchanged",
  "s_star:same_as_s_plus", "s:duplicate" (a triplet already kept), "s:transform_error" (an
  exception inside a transformation: logged, counted, never expected). Per source tried == kept +
  sum(rejected); sentences a kind cannot use at all are not tried but counted as "ineligible".
- Selection: each kind's candidates, all sources together, are shuffled with
  random.Random(f"{seed}:{dataset name}") and tried in that order until max_triplets are kept
  (default: the paper's size). Each sentence is parsed (tagged) once; both transformations reuse
  the parse. WSJ sentences use their gold tags.
- Rows: id (uint64, common.stable_id(dataset name, S, S+, S*): the same triplet always gets the same
  id; triplets are unique, so ids are), s, s_plus, s_star, source ("sick:1234:A" = pair 1234's
  sentence_A, "wsj:wsj_0001.mrg#3", "msrp:702876", "reported_speech:reported_speech.txt:12", "sick:1234" for a
  pair, "template"), rule (the rules of the two transformations, "say>tell;do_support").
- User datasets: spec {"file", "format" (tsv|csv|parquet, default from the extension), "columns"
  {"s", "s_plus", "s_star", "id" (optional)}, "scoring" (strict|negation_variants), "max_triplets"
  (optional: the first N rows kept)}. Rows in file order; a row with an empty or missing text is
  rejected ("<slot>:missing_text"), a repeated triplet ("s:duplicate"); texts are
  whitespace-normalised and otherwise taken as given. source = "<file name>:<id or row number>".

Job: run_triplets_build (rules/triplets.smk), which writes triplets.parquet, the texts and the report.
"""
from __future__ import annotations

import copy
import csv
import functools
import random
import re
import time
from collections import Counter
from pathlib import Path
from typing import Callable, NamedTuple

import polars as pl

from workflow_scripts.common import n_tokens, setup_logging, stable_id
from workflow_scripts.nltk_data import prepend_nltk_data
from workflow_scripts.triplets import sources as src
from workflow_scripts.triplets.lexical import not_negation, quantifier_negation, synonym_substitution
from workflow_scripts.triplets.parsing import FINAL, NEGATIONS, NEGATORS, REPORTING, Parsed, Result, parse
from workflow_scripts.triplets.structural import (argument_reordering, embedded_clause, fixed_point_inversion,
                                                  passivization)

PAPER_SIZES = {"negation_detection": 674, "negation_variants": 516, "clause_relatedness": 567,
               "argument_sensitivity": 445, "fixed_point_reorder": 623}
KINDS = tuple(PAPER_SIZES)
SLOTS = ("s", "s_plus", "s_star")
# subject, verb: the template's subject name and verb lemma (argument_sensitivity; null elsewhere).
# Triplets sharing them are not independent: scores.py resamples these clusters, not triplets.
# cluster: the connected component of S in the pair graph of the dataset's SICK and MSRP sources
# (sources.pair_components; null for other sources' sentences, which are their own unit): the two
# near-identical sentences of a pair, and sentences chained through pairs, are one unit.
COLUMNS = ("id", "s", "s_plus", "s_star", "source", "rule", "subject", "verb", "cluster")
SCHEMA = {"id": pl.UInt64, "s": pl.String, "s_plus": pl.String, "s_star": pl.String,
          "source": pl.String, "rule": pl.String, "subject": pl.String, "verb": pl.String, "cluster": pl.String}
SCORINGS = ("strict", "negation_variants")
USER_FORMATS = {".tsv": "tsv", ".tab": "tsv", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
N_EXAMPLES = 5

RESOURCES = Path(__file__).resolve().parents[2] / "resources" / "triplets"

DEFAULT_SETTINGS = {
    "fixed_point_pivot": 3,  # the reference code's words[3:] + words[:3]; or "seeded"
    "passive_agent": True,
    "clause_max_tokens": 30,
    "sick_partners": {"min_relatedness": 4.6, "max_word_distance": 1, "min_similarity": 0.85,
                      "match": "reference"},
    "templates": {
        "names": ["Lilly", "Imogen", "Harley", "Abigail", "Matilda", "Sophia", "Oliver", "Jack",
                  "Emma", "Noah", "Lucas", "Chloe", "Henry", "Oscar", "Ella", "Samuel"],
        "transitive_verbs": ["like", "love", "admire", "help", "call", "visit", "follow", "meet",
                             "greet", "thank", "hug", "push", "chase", "watch", "praise", "blame",
                             "trust", "invite", "kiss", "hate"],
        "control_verbs": ["ask", "teach", "allow", "encourage", "persuade", "command"],
        # SICK-style activities ("A man is playing a guitar" -> "play a guitar")
        "verb_phrases": ["play the guitar", "ride a horse", "slice an onion", "bake some muffins",
                         "compete in a match", "read a book", "sing a song", "clean the kitchen",
                         "paint the fence", "feed the dog", "climb the wall", "cook dinner",
                         "play the piano", "wash the car", "write a letter", "draw a picture",
                         "plant a tree", "fix the bicycle", "cut the grass", "walk the dog"],
        "tenses": ["present", "past"],
    },
}

# The small offline inputs under resources/triplets/ (written for this project, not corpus text).
DEFAULT_SOURCES = {
    "sick_sample": {"format": "sick", "file": str(RESOURCES / "sick_sample.tsv")},
    "reported_speech": {"format": "lines", "file": str(RESOURCES / "reported_speech.txt")},
}
DEFAULT_DATASETS = {
    "negation_detection": {"sources": ["sick_sample", "reported_speech"]},
    "negation_variants": {"sources": ["sick_sample"]},
    "clause_relatedness": {"sources": ["reported_speech"]},
    "argument_sensitivity": {},
    "fixed_point_reorder": {"sources": ["sick_sample"]},
}
# Source formats each kind can read.
KIND_FORMATS = {"negation_detection": src.FORMATS, "negation_variants": src.FORMATS,
                "clause_relatedness": src.FORMATS, "fixed_point_reorder": ("sick",),
                "argument_sensitivity": ()}


class Candidate(NamedTuple):
    source: str  # the source's name in the config ("sick", "wsj", ...), or "template"
    source_id: str  # the sentence's id inside it
    text: str
    tags: list | None = None
    partner: str | None = None  # fixed_point_reorder: sentence_B
    cluster: tuple | None = None  # argument_sensitivity: (subject, verb lemma) of the template


# --- settings -------------------------------------------------------------------------------------
def merge_settings(settings: dict | None) -> dict:
    """DEFAULT_SETTINGS with `settings` on top (nested dicts merged key by key), validated."""
    out = copy.deepcopy(DEFAULT_SETTINGS)
    for key, value in (settings or {}).items():
        if key not in out:
            raise ValueError(f"unknown triplet setting {key!r} (known: {', '.join(out)})")
        if isinstance(out[key], dict):
            if not isinstance(value, dict):
                raise ValueError(f"triplet setting {key} must be a mapping")
            unknown = set(value) - set(out[key])
            if unknown:
                raise ValueError(f"unknown keys in triplet setting {key}: {sorted(unknown)}")
            out[key].update(value)
        else:
            out[key] = value
    pivot = out["fixed_point_pivot"]
    if not (pivot == "seeded" or (isinstance(pivot, int) and not isinstance(pivot, bool) and pivot >= 1)):
        raise ValueError(f'fixed_point_pivot must be a positive int or "seeded", not {pivot!r}')
    if not isinstance(out["passive_agent"], bool):
        raise ValueError("passive_agent must be true or false")
    if not isinstance(out["clause_max_tokens"], int) or out["clause_max_tokens"] < 2:
        raise ValueError("clause_max_tokens must be an integer >= 2")
    if out["sick_partners"]["match"] not in ("reference", "words"):
        raise ValueError('sick_partners.match must be "reference" or "words"')
    t = out["templates"]
    if not set(t["tenses"]) <= {"present", "past"} or not t["tenses"]:
        raise ValueError('templates.tenses must be a non-empty subset of ["present", "past"]')
    if len(set(t["names"])) < 2:
        raise ValueError("templates.names needs at least two names")
    return out


# --- the candidate loop ---------------------------------------------------------------------------
def _new_source_stats() -> dict:
    return {"eligible": 0, "ineligible": Counter(), "tried": 0, "kept": 0, "rejected": Counter()}


def _select(name: str, candidates: list[Candidate], make: Callable, max_triplets: int, stats: dict,
            log) -> list[dict]:
    """Try candidates in order until max_triplets distinct triplets are kept."""
    rows: list[dict] = []
    seen: set[tuple[str, str, str]] = set()
    started = time.monotonic()
    tried = 0
    for cand in candidates:
        if len(rows) >= max_triplets:
            break
        st = stats[cand.source]
        st["tried"] += 1
        tried += 1
        try:
            out = make(cand)
        except Exception as err:  # noqa: BLE001 - one sentence must not stop the build
            log.warning("%s: %s %s: %s: %r", name, cand.source, cand.source_id, type(err).__name__, cand.text)
            out = "s:transform_error"
        if isinstance(out, str):
            reason = out
        else:
            s, s_plus, s_star, rule = out
            reason = ("s_plus:unchanged" if s_plus == s else "s_star:unchanged" if s_star == s else
                      "s_star:same_as_s_plus" if s_star == s_plus else
                      "s:duplicate" if (s, s_plus, s_star) in seen else None)
        if reason:
            st["rejected"][reason] += 1
        else:
            seen.add((s, s_plus, s_star))
            label = "template" if cand.source == "template" else f"{cand.source}:{cand.source_id}"
            subject, verb = cand.cluster or (None, None)
            rows.append({"s": s, "s_plus": s_plus, "s_star": s_star, "source": label, "rule": rule,
                         "subject": subject, "verb": verb})
            st["kept"] += 1
        if tried % 1000 == 0:
            log.info("%s: tried %d, kept %d (%.1f s)", name, tried, len(rows), time.monotonic() - started)
    log.info("%s: tried %d, kept %d of %d wanted, %d candidates (%.1f s)", name, tried, len(rows),
             max_triplets, len(candidates), time.monotonic() - started)
    return rows


def _seeded(items: list, seed: int, name: str) -> list:
    items = list(items)
    random.Random(f"{seed}:{name}").shuffle(items)
    return items


def _two(plus: Result, star: Result, s: str, rule_plus: str | None = None):
    if not plus.ok:
        return f"s_plus:{plus.reason}"
    if not star.ok:
        return f"s_star:{star.reason}"
    return s, plus.sentence, star.sentence, f"{rule_plus or plus.rule};{star.rule}"


def _parse(cand: Candidate) -> Parsed:
    return parse(cand.text, cand.tags)


# --- kinds ----------------------------------------------------------------------------------------
def _make_negation_detection(cand: Candidate, settings: dict, seed: int):
    p = _parse(cand)
    return _two(synonym_substitution(p), not_negation(p), p.text)


def _make_negation_variants(cand: Candidate, settings: dict, seed: int):
    p = _parse(cand)
    return _two(not_negation(p), quantifier_negation(p), p.text)


def _make_clause_relatedness(cand: Candidate, settings: dict, seed: int):
    p = _parse(cand)
    clause = embedded_clause(p)
    if not clause.ok:
        return f"s_plus:{clause.reason}"
    negated = negate_embedded(p, clause.sentence)
    if not negated.ok:
        return f"s_star:{negated.reason}"
    return p.text, clause.sentence, negated.sentence, f"{clause.rule};clause_{negated.rule}"


def _make_argument_sensitivity(cand: Candidate, settings: dict, seed: int):
    p = parse(cand.text)  # tagged, then the template's own words get their known tags
    known = cand.tags or []
    if tuple(p.units[:len(known)]) == tuple(w for w, _ in known):
        p = Parsed(p.text, p.units, p.spaces, tuple(t for _, t in known) + p.tags[len(known):], p.words)
    return _two(passivization(p, agent=settings["passive_agent"]), argument_reordering(p), p.text)


def _make_fixed_point_reorder(cand: Candidate, settings: dict, seed: int):
    p = _parse(cand)
    star = fixed_point_inversion(p, settings["fixed_point_pivot"], seed=seed,
                                   sentence_id=f"{cand.source}:{cand.source_id}")
    return _two(Result(cand.partner, rule="entailment_partner"), star, p.text)


MAKERS = {"negation_detection": _make_negation_detection, "negation_variants": _make_negation_variants,
          "clause_relatedness": _make_clause_relatedness, "argument_sensitivity": _make_argument_sensitivity,
          "fixed_point_reorder": _make_fixed_point_reorder}


# --- Clause Relatedness S*: negate the clause inside the sentence ----------------------------------
def _unit_offsets(p: Parsed) -> list[int]:
    """Character offset of each unit in p.text (units joined as parse() split them)."""
    offsets, pos = [], 0
    for k, (unit, space) in enumerate(zip(p.units, p.spaces)):
        pos += bool(k and space)
        offsets.append(pos)
        pos += len(unit)
    return offsets


def _same_but_first_case(found: str, clause: str) -> bool:
    k = next((i for i, c in enumerate(clause) if c.isalnum()), 0)
    return len(found) == len(clause) and found[:k] == clause[:k] and found[k + 1:] == clause[k + 1:] \
        and found[k:k + 1].lower() == clause[k:k + 1].lower()


def clause_span(p: Parsed, clause: str) -> tuple[int, int] | str:
    """Units [start, end) of p whose text is `clause` (up to its first letter's case; without the
    sentence-final punctuation embedded_clause may have appended), or a reason."""
    offsets = _unit_offsets(p)
    ends = {offsets[k] + len(p.units[k]): k + 1 for k in range(len(p))}
    bodies = [clause]
    if len(p) and p.words[-1] in FINAL and clause.endswith(p.units[-1]):
        bodies.append(clause[:-len(p.units[-1])].rstrip(" "))
    for body in bodies:
        found = [(a, ends[offsets[a] + len(body)]) for a in range(len(p))
                 if offsets[a] + len(body) in ends
                 and _same_but_first_case(p.text[offsets[a]:offsets[a] + len(body)], body)]
        if len(found) == 1:
            return found[0]
        if found:
            return "ambiguous_clause"
    return "clause_not_found"


def negate_embedded(p: Parsed, clause: str) -> Result:
    """S with its embedded clause (as embedded_clause() extracted it) negated by not_negation, on
    the clause's units and tags inside S; the rest of S is kept byte for byte."""
    span = clause_span(p, clause)
    if isinstance(span, str):
        return Result(reason=span)
    a, b = span
    units, spaces = p.units[a:b], (False,) + p.spaces[a + 1:b]
    text = "".join((" " if k and sp else "") + u for k, (u, sp) in enumerate(zip(units, spaces)))
    sub = Parsed(text, units, spaces, p.tags[a:b], p.words[a:b])
    negated = not_negation(sub)
    if not negated.ok:
        return negated
    offsets = _unit_offsets(p)
    out = p.text[:offsets[a]] + negated.sentence + p.text[offsets[b - 1] + len(p.units[b - 1]):]
    return Result(sentence=out, rule=negated.rule)


@functools.lru_cache(maxsize=1)
def _reporting_forms() -> frozenset[str]:
    """Every inflection of say/think/know/tell (lemminflect): a sentence without one has no
    reporting verb for embedded_clause()."""
    from lemminflect import getAllInflections
    forms = set(REPORTING)
    for lemma in REPORTING:
        for values in getAllInflections(lemma, upos="VERB").values():
            forms.update(values)
    return frozenset(forms)


# --- candidates per kind --------------------------------------------------------------------------
def _word_distance(a: list[str], b: list[str]) -> int:
    """Word-level Levenshtein distance: NLTK's edit distance on word lists."""
    from nltk.metrics.distance import edit_distance
    return edit_distance(a, b)


_REFERENCE_NEGATION = re.compile("not|n't")  # the reference code's, unanchored on purpose
_NEGATION_WORDS = NEGATIONS | NEGATORS
_WORD = re.compile(r"[a-z]+(?:['\u2019][a-z]+)*")


def _words(text: str) -> list[str]:
    """Lowercased words with inner apostrophes ASCII ("Isn\u2019t," -> "isn't")."""
    return [w.replace("\u2019", "'") for w in _WORD.findall(text.lower())]


def partner_reason(pair: src.SickPair, rule: dict) -> str | None:
    """Why a SICK pair is no Fixed Point Reorder partner pair (None: it is one)."""
    if pair.label != "ENTAILMENT":
        return "not_entailment"
    if not pair.relatedness > rule["min_relatedness"]:
        return "low_relatedness"
    if rule["match"] == "reference":
        negated = _REFERENCE_NEGATION.search(pair.raw_a) or _REFERENCE_NEGATION.search(pair.raw_b)
        wa, wb = pair.raw_a.split(" "), pair.raw_b.split(" ")
    else:
        wa, wb = pair.sentence_a.split(), pair.sentence_b.split()
        negated = any(w in _NEGATION_WORDS or w.endswith("n't") for w in _words(pair.sentence_a + " " + pair.sentence_b))
    if negated:
        return "negated"
    d = _word_distance(wa, wb)
    similarity = 1 - d / ((len(wa) + len(wb)) / 2)
    if d == rule["max_word_distance"] or rule["min_similarity"] < similarity < 1:
        return None
    return "dissimilar"


def _sentence_candidates(kind: str, names: list[str], sources: dict, settings: dict,
                         stats: dict, read: dict) -> list[Candidate]:
    cands = []
    forms = _reporting_forms() if kind == "clause_relatedness" else None
    for name in names:
        spec = sources[name]
        read[name] = src.new_stats()
        st = stats[name]
        for sid, text, tags in src.read_sentences(spec, read[name]):
            if kind == "negation_variants" and text.split()[0].lower() not in ("a", "an"):
                st["ineligible"]["no_indefinite_article"] += 1
            elif kind == "clause_relatedness" and n_tokens(text) >= settings["clause_max_tokens"]:
                st["ineligible"]["too_long"] += 1
            elif kind == "clause_relatedness" and not forms.intersection(
                    w.split("'")[0] for w in _words(text)):
                st["ineligible"]["no_reporting_verb_form"] += 1
            else:
                st["eligible"] += 1
                cands.append(Candidate(name, sid, text, tags))
    return cands


def _pair_candidates(names: list[str], sources: dict, settings: dict, stats: dict,
                     read: dict) -> list[Candidate]:
    rule = settings["sick_partners"]
    cands = []
    for name in names:
        spec = sources[name]
        read[name] = src.new_stats()
        st = stats[name]
        for pair in src.sick_pairs(spec, read[name]):
            reason = partner_reason(pair, rule)
            if reason:
                st["ineligible"][reason] += 1
            else:
                st["eligible"] += 1
                cands.append(Candidate(name, pair.pair_id, pair.sentence_a, None, pair.sentence_b))
    return cands


def template_sentences(templates: dict) -> tuple[list[tuple[str, tuple]], list[tuple[str, tuple]]]:
    """All transitive (`X likes Y.`) and control (`X asks Y to VP.`) template sentences, in list
    order, each with the (word, tag) pairs of its template part (names NNP, the verb VBZ or VBD,
    "to" TO): the tagger alone reads "Lilly admired Noah." as Lilly/RB admired/VBN and "Chloe hugs
    Emma." as hugs/NNS. Verbs are inflected by lemminflect (VBZ: a name is third person singular)."""
    from lemminflect import getInflection
    tags = {"present": "VBZ", "past": "VBD"}
    forms = {}
    for verb in templates["transitive_verbs"] + templates["control_verbs"]:
        for tense in templates["tenses"]:
            found = getInflection(verb, tag=tags[tense], inflect_oov=False)
            if not found:
                raise ValueError(f"template verb {verb!r}: lemminflect has no {tags[tense]} form")
            forms[verb, tense] = found[0]
    names = list(dict.fromkeys(templates["names"]))
    people = [(x, y) for x in names for y in names if x != y]

    def known(x, verb, tense, y, control):
        return tuple([(w, "NNP") for w in x.split()] + [(forms[verb, tense], tags[tense])] +
                     [(w, "NNP") for w in y.split()] + ([("to", "TO")] if control else []))

    transitive = [(f"{x} {forms[v, t]} {y}.", known(x, v, t, y, False)) for v in templates["transitive_verbs"]
                  for t in templates["tenses"] for x, y in people]
    control = [(f"{x} {forms[v, t]} {y} to {vp}.", known(x, v, t, y, True)) for v in templates["control_verbs"]
               for t in templates["tenses"] for vp in templates["verb_phrases"] for x, y in people]
    return transitive, control


def _template_candidates(settings: dict, seed: int, name: str, stats: dict) -> list[Candidate]:
    transitive, control = template_sentences(settings["templates"])
    transitive = _seeded(transitive, seed, f"{name}:transitive")
    control = _seeded(control, seed, f"{name}:control")
    mixed = [s for pair in zip(transitive, control) for s in pair]
    shorter = min(len(transitive), len(control))
    mixed += transitive[shorter:] + control[shorter:]
    stats["template"]["eligible"] = len(mixed)
    lemmas = _template_verb_lemmas(settings["templates"])
    return [Candidate("template", text, text, list(known), cluster=_template_cluster(known, lemmas))
            for text, known in mixed]


def _template_verb_lemmas(templates: dict) -> dict[str, str]:
    """{inflected form: lemma} of the template verbs (the forms template_sentences writes)."""
    from lemminflect import getInflection
    tags = {"present": "VBZ", "past": "VBD"}
    return {found[0]: verb for verb in templates["transitive_verbs"] + templates["control_verbs"]
            for tense in templates["tenses"] if (found := getInflection(verb, tag=tags[tense], inflect_oov=False))}


def _template_cluster(known: tuple, lemmas: dict[str, str]) -> tuple[str, str]:
    """(subject, verb lemma) of a template sentence from its known (word, tag) pairs: the names
    before the verb, and the verb (present and past forms of one verb are one cluster)."""
    at = next(i for i, (_, tag) in enumerate(known) if tag in ("VBZ", "VBD"))
    return " ".join(w for w, _ in known[:at]), lemmas.get(known[at][0], known[at][0])


# --- building -------------------------------------------------------------------------------------
def _frame(name: str, rows: list[dict]) -> pl.DataFrame:
    ids = [stable_id(name, r["s"], r["s_plus"], r["s_star"]) for r in rows]
    if len(set(ids)) != len(ids):
        raise RuntimeError(f"{name}: id collision among {len(ids)} triplets")
    data = {"id": ids, **{c: [r[c] for r in rows] for c in COLUMNS[1:]}}
    return pl.DataFrame(data, schema=SCHEMA)


def _report(name: str, kind: str, scoring: str, target, max_triplets, frame: pl.DataFrame,
            stats: dict, read: dict, sources: dict, settings_used: dict, seed: int) -> dict:
    per_source = {}
    for source, st in stats.items():
        entry = {"tried": st["tried"], "kept": st["kept"], "rejected": dict(sorted(st["rejected"].items())),
                 "eligible": st["eligible"], "ineligible": dict(sorted(st["ineligible"].items()))}
        if source in sources:
            entry.update(format=sources[source].get("format"), file=sources[source].get("file"))
        if source in read:
            r = read[source]
            entry.update({"records": r["records"], "pairs" if "pairs" in r else "sentences":
                          r.get("pairs", r["sentences"]), "skipped": dict(sorted(r["skipped"].items()))})
        per_source[source] = entry
    rejected = Counter()
    for st in stats.values():
        rejected.update(st["rejected"])
    return {"dataset": name, "kind": kind, "scoring": scoring, "target_size": target,
            "max_triplets": max_triplets, "size": frame.height, "seed": seed,
            "tried": sum(st["tried"] for st in stats.values()),
            "rejected": dict(sorted(rejected.items())), "sources": per_source,
            "settings": settings_used,
            "examples": frame.head(N_EXAMPLES).drop("id").to_dicts()}


def build_dataset(name: str, spec: dict, sources: dict[str, dict], settings: dict, seed: int,
                  log) -> tuple[pl.DataFrame, dict]:
    """One dataset's triplets (columns id, s, s_plus, s_star, source, rule) and its report."""
    spec = dict(spec or {})
    if "file" in spec:
        return build_user_dataset(name, spec, log)
    kind = spec.get("kind", name)
    if kind not in KINDS:
        raise ValueError(f"dataset {name}: unknown kind {kind!r} (known: {', '.join(KINDS)}; or give a file)")
    settings = merge_settings(settings)
    max_triplets = spec.get("max_triplets", PAPER_SIZES[kind])
    if not isinstance(max_triplets, int) or max_triplets < 1:
        raise ValueError(f"dataset {name}: max_triplets must be a positive integer")
    names = list(spec.get("sources") or ([] if kind == "argument_sensitivity" else
                                         [n for n, s in sources.items() if s.get("format") in KIND_FORMATS[kind]]))
    for source in names:
        if source not in sources:
            raise ValueError(f"dataset {name}: source {source!r} is not configured ({', '.join(sources)})")
        if sources[source].get("format") not in KIND_FORMATS[kind]:
            raise ValueError(f"dataset {name}: {kind} cannot use source {source!r} of format "
                             f"{sources[source].get('format')!r}")
    if kind != "argument_sensitivity" and not names:
        raise ValueError(f"dataset {name}: no source for {kind}")
    log.info("%s (%s): sources %s, up to %d triplets", name, kind, names or ["template"], max_triplets)
    started = time.monotonic()
    read: dict = {}
    if kind == "argument_sensitivity":
        stats = {"template": _new_source_stats()}
        cands = _template_candidates(settings, seed, name, stats)
    else:
        stats = {n: _new_source_stats() for n in names}
        if kind == "fixed_point_reorder":
            cands = _pair_candidates(names, sources, settings, stats, read)
        else:
            cands = _sentence_candidates(kind, names, sources, settings, stats, read)
        cands = _seeded(cands, seed, name)
    log.info("%s: %d candidates read (%.1f s)", name, len(cands), time.monotonic() - started)
    rows = _select(name, cands, lambda c: MAKERS[kind](c, settings, seed), max_triplets, stats, log)
    components = src.pair_components([sources[n] for n in names])
    for r in rows:
        r["cluster"] = components.get(r["s"])
    frame = _frame(name, rows)
    used = {"fixed_point_reorder": {"fixed_point_pivot": settings["fixed_point_pivot"],
                                    "sick_partners": settings["sick_partners"]},
            "argument_sensitivity": {"passive_agent": settings["passive_agent"],
                                     "templates": {k: (v if k == "tenses" else len(v))
                                                   for k, v in settings["templates"].items()}},
            "clause_relatedness": {"clause_max_tokens": settings["clause_max_tokens"]}}.get(kind, {})
    scoring = "negation_variants" if kind == "negation_variants" else "strict"
    report = _report(name, kind, scoring, PAPER_SIZES[kind], max_triplets, frame, stats, read, sources,
                     used, seed)
    report["seconds"] = round(time.monotonic() - started, 2)
    return frame, report


# --- user datasets --------------------------------------------------------------------------------
def _read_user_rows(path: Path, fmt: str, wanted: list[str]) -> list[dict]:
    if fmt == "parquet":
        frame = pl.read_parquet(path)
        missing = [c for c in wanted if c not in frame.columns]
        if missing:
            raise ValueError(f"{path}: no column(s) {missing} (has {frame.columns})")
        return frame.select(wanted).to_dicts()
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = (csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE) if fmt == "tsv" else csv.reader(f))
        header = [h.strip() for h in next(reader, [])]
        missing = [c for c in wanted if c not in header]
        if missing:
            raise ValueError(f"{path}: no column(s) {missing} (has {header})")
        where = {c: header.index(c) for c in wanted}
        return [{c: (row[i] if i < len(row) else None) for c, i in where.items()}
                for row in reader if any(cell.strip() for cell in row)]


def build_user_dataset(name: str, spec: dict, log) -> tuple[pl.DataFrame, dict]:
    """A dataset given as a table with three text columns (see the module docstring)."""
    path = Path(spec["file"])
    if not path.exists():
        raise FileNotFoundError(f"dataset {name}: {path} not found")
    fmt = spec.get("format") or USER_FORMATS.get(path.suffix.lower())
    if fmt not in ("tsv", "csv", "parquet"):
        raise ValueError(f"dataset {name}: format of {path} unknown; give format tsv, csv or parquet")
    scoring = spec.get("scoring", "strict")
    if scoring not in SCORINGS:
        raise ValueError(f"dataset {name}: scoring must be one of {SCORINGS}")
    columns = {"s": "s", "s_plus": "s_plus", "s_star": "s_star", **(spec.get("columns") or {})}
    id_column = columns.get("id")
    wanted = [columns[slot] for slot in SLOTS] + ([id_column] if id_column else [])
    max_triplets = spec.get("max_triplets")
    rows_in = _read_user_rows(path, fmt, wanted)
    st = _new_source_stats()
    st["eligible"] = len(rows_in)
    rows, seen = [], set()
    for number, row in enumerate(rows_in, 1):
        if max_triplets is not None and len(rows) >= max_triplets:
            break
        st["tried"] += 1
        texts = [src.normalise(str(row[columns[slot]])) if row[columns[slot]] is not None else ""
                 for slot in SLOTS]
        empty = next((slot for slot, text in zip(SLOTS, texts) if not text), None)
        if empty or tuple(texts) in seen:
            st["rejected"][f"{empty}:missing_text" if empty else "s:duplicate"] += 1
            continue
        seen.add(tuple(texts))
        ident = row[id_column] if id_column and row[id_column] not in (None, "") else number
        rows.append({"s": texts[0], "s_plus": texts[1], "s_star": texts[2],
                     "source": f"{path.name}:{ident}", "rule": "user", "subject": None, "verb": None,
                     "cluster": None})
        st["kept"] += 1
    log.info("%s: %d rows, kept %d, rejected %s", name, len(rows_in), len(rows), dict(st["rejected"]))
    frame = _frame(name, rows)
    stats = {"file": st}
    report = _report(name, "user", scoring, None, max_triplets, frame, stats, {},
                     {"file": {"format": fmt, "file": str(path)}}, {"columns": columns}, seed=None)
    report["sources"]["file"]["records"] = len(rows_in)
    return frame, report


# --- outputs ---------------------------------------------------------------------------------------
def write_outputs(frame: pl.DataFrame, report: dict, out: str, texts_out: list[str], report_out: str) -> dict:
    """triplets.parquet, the texts of all three columns (hash-partitioned), the report; each atomic."""
    from workflow_scripts.texts import write_dataset
    return write_dataset(frame, out, [t for col in SLOTS for t in frame[col].to_list()], texts_out, report, report_out)


# ---- the jobs of rules/triplets.smk (workflow_scripts/jobs.py) ----
def run_triplets_build(job) -> None:
    # the workflow's NLTK download folder first (parsing imports nltk only when it tags, after this)
    prepend_nltk_data(job.params.nltk_dir)
    log = setup_logging(name="triplets")
    dataset = job.wildcards.dataset
    frame, report = build_dataset(dataset, job.params.spec, job.params.sources, job.params.settings,
                                  job.params.seed, log)
    report = write_outputs(frame, report, job.output.triplets, list(job.output.texts), job.output.report)
    log.info("%s: %d triplets written to %s (%s)", dataset, frame.height, job.output.triplets, report["texts"])
