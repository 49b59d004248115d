"""How often the triplet transformations produce ungrammatical sentences, by a simple automatic check,
next to the same check's rate on original corpus sentences (its false-positive baseline).

Usage: NLTK_DATA=../shared/data/nltk_data python tests/benchmarks/triplets_grammar_check.py
           [--shared ../shared] [--seed 0] [--examples 2] [--json OUT.json]

Builds the five datasets on the shared data (SICK, WSJ sample, MSRP) as tests/triplets/test_datasets.py
does, tags every sentence with the NLTK tagger (parsing.parse, the tagger the transformations
use; no gold tags, so originals and outputs are tagged alike) and applies two checks:

1. tag trigram ("trigram"): a sentence is flagged when one of its POS-tag trigrams (sentence start
   and end included as <s> </s>) occurs neither in the WSJ sample's gold tags (3,914 sentences) nor
   in any *other* original sentence (all SICK, WSJ and MSRP sentences and the template sentences).
   An original sentence's own trigrams never vouch for itself nor for the sentences made from it
   (leave-one-out), so a rare but grammatical construction counts the same in S, S+ and S*: the S
   column's rate is the false-positive baseline. Word-order damage (Fixed Point Inversion: "Playing
   a guitar a man is </s>"), lost verbs and stray function words show up as unseen trigrams; a wrong
   word of the right class does not (the synonym "said" -> "told" in "Octel told the purchase was
   expected" keeps VBD DT NN VBD VBN).
2. agreement ("agree"): local rules for the errors the edits could make: a doubled word ("the
   the"), a double negation ("not not", "n't not"), a/an before the wrong sound (by first letter:
   "a" + a/e/i/o, "an" + a consonant other than h), a singular determiner (a, an, each, every,
   another) before a plural noun, "there is/was no" + plural noun, a do-auxiliary or modal followed by
   a non-base verb ("didn't went", "will goes"), and pronoun-verb agreement ("he don't", "they
   isn't") when the pronoun is not inverted after an auxiliary. Each rule can misfire on real
   text (the baseline shows how often); none judges meaning.

Prints one row per dataset: the share of S, S+ and S* flagged by each check, and the share of S+
and S* flagged for something their S does not have (a trigram not in S, a rule S does not break):
what the transformation introduced. Below, the checks' rates on 2,000 original sentences of each
source: the false-positive baseline (the S column is one too; for the "new" columns, the Fixed Point
Reorder S+, a second original sentence close to S, is). --examples N prints N sentences per dataset
and slot flagged as new.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SLOTS = ("s", "s_plus", "s_star")
DETS_SINGULAR = {"a", "an", "each", "every", "another"}
QUANTITY_ADJ = {"few", "couple", "dozen", "hundred", "thousand", "million", "billion", "great", "good", "lot"}
DO_FORMS = {"do", "does", "did", "don't", "doesn't", "didn't"}
SINGULAR_PRONOUNS = {"he", "she", "it"}
PLURAL_PRONOUNS = {"we", "they", "you"}
THIRD_ONLY = {"is", "was", "does", "has", "isn't", "wasn't", "doesn't", "hasn't"}
NON_THIRD = {"are", "were", "do", "have", "aren't", "weren't", "don't", "haven't"}
AUXILIARIES = {"is", "are", "was", "were", "do", "does", "did", "has", "have", "had", "will", "would", "can",
               "could", "should", "may", "might", "must", "shall"}  # "did it have", "would they have"


def shared_sources(shared: Path) -> dict:
    data = shared / "data"
    return {"sick": {"format": "sick", "file": str(data / "sick" / "SICK.txt")},
            "wsj": {"format": "treebank", "file": None},
            "msrp": {"format": "msrp", "file": [str(data / "msrp" / "msr_paraphrase_train.txt"),
                                                str(data / "msrp" / "msr_paraphrase_test.txt")]}}


SPECS = {"negation_detection": {"sources": ["sick", "wsj", "msrp"]},
         "negation_variants": {"sources": ["sick"]},
         "clause_relatedness": {"sources": ["wsj", "msrp"]},
         "argument_sensitivity": {},
         "fixed_point_reorder": {"sources": ["sick"]}}


def trigrams(tags) -> set[tuple[str, str, str]]:
    seq = ("<s>", "<s>", *tags, "</s>")
    return {seq[i:i + 3] for i in range(len(seq) - 2)}


class Tagger:
    """Units, lowercased words (ASCII apostrophes) and tags of a sentence, cached (parsing.parse)."""

    def __init__(self):
        from workflow_scripts.triplets.parsing import parse
        self.parse = parse
        self.cache: dict[str, tuple] = {}

    def __call__(self, text: str):
        got = self.cache.get(text)
        if got is None:
            p = self.parse(text)
            got = self.cache[text] = (p.units, p.words, p.tags)
        return got


def _base_form(word: str) -> bool:
    from lemminflect import getLemma
    lemmas = getLemma(word, upos="VERB", lemmatize_oov=False)
    return not lemmas or word in lemmas


def _acronym(unit: str) -> bool:
    return len(unit) > 1 and unit.isupper()


def agreement_errors(units, words, tags) -> list[str]:
    """Names of the agreement rules a tagged sentence breaks (see the module docstring)."""
    found = []
    n = len(words)
    for i, (w, t) in enumerate(zip(words, tags)):
        nxt, ntag, nunit = (words[i + 1], tags[i + 1], units[i + 1]) if i + 1 < n else ("", "", "")
        prev = words[i - 1] if i else ""
        if w.isalpha() and w == nxt:
            found.append("doubled_word")
        if (w in ("not", "n't") or w.endswith("n't")) and nxt in ("not", "n't"):
            found.append("double_negation")
        if w == "a" and nxt[:1] in ("a", "e", "i", "o") and not nxt.startswith(("one", "once", "eu")) \
                and not _acronym(nunit):
            found.append("a_an")
        if w == "an" and nxt[:1].isalpha() and nxt[:1] not in "aeiouh" and not _acronym(nunit):
            found.append("a_an")
        if w in DETS_SINGULAR and nxt not in QUANTITY_ADJ:
            j = i + 1
            while j < n and tags[j].startswith("JJ") and words[j] not in QUANTITY_ADJ:
                j += 1
            if j < n and tags[j] == "NNS" and words[j - 1] not in QUANTITY_ADJ:
                found.append("determiner_number")
        if w == "there" and nxt in ("is", "was", "isn't", "wasn't") and i + 2 < n and words[i + 2] == "no":
            j = i + 3
            while j < n and tags[j].startswith("JJ"):
                j += 1
            if j < n and tags[j] == "NNS":
                found.append("there_is_no_plural")
        if w in DO_FORMS or t == "MD":
            j = i + 1
            while j < n and (tags[j] in ("RB", "RBR", "RBS") or words[j] in ("n't", "not")):
                j += 1
            if j < n and tags[j].startswith("VB") and words[j].isalpha() and not _base_form(words[j]):
                found.append("auxiliary_verb_form")  # "didn't went", "will goes"
        if prev not in AUXILIARIES and (w in SINGULAR_PRONOUNS and nxt in NON_THIRD or
                                        w in PLURAL_PRONOUNS and nxt in THIRD_ONLY or
                                        w == "i" and nxt in {"is", "does", "has", "isn't", "doesn't", "hasn't",
                                                             "are", "were", "aren't", "weren't"}):
            found.append("pronoun_agreement")
    return found


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--examples", type=int, default=2)
    ap.add_argument("--json", help="write the rates here too")
    args = ap.parse_args(argv)
    shared = Path(args.shared)
    if "NLTK_DATA" not in os.environ:
        os.environ["NLTK_DATA"] = str(shared / "data" / "nltk_data")
    import nltk
    nltk.data.path.insert(0, os.environ["NLTK_DATA"])
    from workflow_scripts.common import setup_logging
    from workflow_scripts.triplets import datasets as D
    from workflow_scripts.triplets import sources as S

    started = time.monotonic()
    log = setup_logging(None, "grammar_check")
    log.setLevel("WARNING")
    sources = shared_sources(shared)
    frames = {name: D.build_dataset(name, spec, sources, {}, args.seed, log)[0] for name, spec in SPECS.items()}
    built = time.monotonic() - started

    gold = set()
    for _sid, _text, tags in S.read_sentences(sources["wsj"]):
        gold |= trigrams(tags)
    tag = Tagger()
    pool: dict[str, list[str]] = {name: [t for _i, t, _g in S.read_sentences(spec)] for name, spec in sources.items()}
    originals = set(t for texts in pool.values() for t in texts) | {s for f in frames.values() for s in f["s"]}
    df: Counter = Counter()
    for text in originals:
        df.update(trigrams(tag(text)[2]))

    def check(text: str, own: set[str]) -> tuple[set, list[str]]:
        """The sentence's trigrams that nothing vouches for, and the agreement rules it breaks."""
        units, words, tags = tag(text)
        mine = [trigrams(tag(o)[2]) for o in own if o in originals]
        unseen = {g for g in trigrams(tags) if g not in gold and df[g] - sum(g in m for m in mine) < 1}
        return unseen, agreement_errors(units, words, tags)

    rows, examples, out = [], {}, {"datasets": {}, "baseline": {}}
    for name, frame in frames.items():
        counts = Counter()
        for r in frame.iter_rows(named=True):
            base_unseen, base_agree = check(r["s"], {r["s"]})
            s_grams = trigrams(tag(r["s"])[2])
            for slot in SLOTS:
                unseen, agree = check(r[slot], {r["s"], r[slot]})
                new = bool(unseen - s_grams) or bool(set(agree) - set(base_agree))
                counts[slot, "trigram"] += bool(unseen)
                counts[slot, "agree"] += bool(agree)
                counts[slot, "new"] += new
                if slot != "s" and new and len(examples.setdefault((name, slot), [])) < args.examples:
                    why = " ".join(["unseen " + ",".join("_".join(g) for g in sorted(unseen - s_grams))]
                                   if unseen - s_grams else []) + " ".join(sorted(set(agree) - set(base_agree)))
                    examples[name, slot].append((r[slot], why))
        m = max(frame.height, 1)
        rates = {slot: {k: counts[slot, k] / m for k in ("trigram", "agree", "new")} for slot in SLOTS}
        rows.append((name, frame.height, rates))
        out["datasets"][name] = {"size": frame.height, **rates}

    base_rows = []
    for name, texts in pool.items():
        sample = random.Random(args.seed).sample(texts, min(2000, len(texts)))
        novel = agree = 0
        for text in sample:
            unseen, ag = check(text, {text})
            novel += bool(unseen)
            agree += bool(ag)
        m = len(sample)
        base_rows.append((f"{name} originals (sample)", m, {"trigram": novel / m, "agree": agree / m}))
        out["baseline"][name] = {"n": m, "trigram": novel / m, "agree": agree / m}

    def pct(x):
        return f"{100 * x:5.1f}"

    print(f"\nshare of sentences flagged (%), seed {args.seed}; built in {built:.0f} s, "
          f"checked in {time.monotonic() - started - built:.0f} s\n")
    head = (f"{'dataset':<22} {'n':>4} | {'trigram S':>9} {'S+':>5} {'S*':>5} | {'agree S':>7} {'S+':>5} {'S*':>5} |"
            f" {'new S+':>6} {'S*':>5}")
    print(head)
    print("-" * len(head))
    for name, n, r in rows:
        print(f"{name:<22} {n:>4} | {pct(r['s']['trigram']):>9} {pct(r['s_plus']['trigram'])} "
              f"{pct(r['s_star']['trigram'])} | {pct(r['s']['agree']):>7} {pct(r['s_plus']['agree'])} "
              f"{pct(r['s_star']['agree'])} | {pct(r['s_plus']['new']):>6} {pct(r['s_star']['new'])}")
    print("\nnew: flagged for a trigram S does not have or a rule S does not break (what the edit introduced)")
    print()
    print(f"{'baseline':<30} {'n':>5} | {'trigram':>7} {'agree':>6}")
    for name, n, r in base_rows:
        print(f"{name:<30} {n:>5} | {pct(r['trigram']):>7} {pct(r['agree']):>6}")
    if args.examples:
        print("\nflagged as new (examples):")
        for (name, slot), items in examples.items():
            for text, why in items:
                print(f"  {name}/{slot} [{why}]: {text}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
