"""Triplet transformations that extract or move constituents (Zhu, Li & de Melo, seed 002): Embedded
Clause Extraction, Passivization, Argument Reordering and Fixed Point Inversion. Tokens, tags,
Result and the decisions they share (the first verb, case): parsing.py.

Decisions on the ambiguous cases:
- Embedded Clause Extraction: say/think/know/tell (any form) as the first finite verb's main verb,
  with "that" or without, "that" a little later ("said on Monday that"), an object for tell ("told
  reporters (that) ..."), or a quotation ('He said: "..."'); a quotation placed first ('"...," he
  said.') and a trailing report ("..., officials said.") also give their clause. The clause must have
  a subject and a finite verb; its first letter is capitalised, the final punctuation kept.
- Passivization and Argument Reordering share one parse: SUBJ (a plain noun phrase: determiners,
  adjectives, nouns, pronouns, "of", "and") + a verb group that is simple present/past, progressive
  (is eating), perfect (has eaten) or modal (can eat) + OBJ (a noun phrase) + the rest. Anything else
  is rejected: negation in the group, clitic auxiliaries, copula, linking (become, remain, ...) and
  stative (have, cost, ...) main verbs, existing passives, two objects, particles, a relative clause,
  apposition or coordinated verb after the object, a finite verb after it (then the "object" was the
  subject of a complement clause: "said exports would fall"), measure phrases ("rose 5 %"), questions.
  The auxiliary agrees with the new subject; pronouns change case (he <-> him, ...). Passive puts
  "by SUBJ" after the prepositional phrases that follow the object and before anything else
  ("Meat is being sliced with a knife by a woman", "Abigail was asked by Harley to bake muffins");
  agent=False drops it (the reference's "Abigail is asked to bake muffins" form). A coordinated
  object followed by a verb is cut at its last "and" when a determiner or pronoun follows it
  ("cutting an onion and a man is watching" -> OBJ "an onion"); a temporal noun after the verb is
  no object ("opens this weekend"). "X wants/likes/expects Y to VP" does not passivize. Where the
  prepositional phrases after the object attach is not known: "by SUBJ" after them is right for
  adverbial ones (SICK's "with a knife") and misplaced after noun modifiers (WSJ's "a team of
  researchers from the Institute ... by Dr. Talcott").
- Fixed Point Inversion works on whitespace words as the reference code does: words[k:] + words[:k],
  sentence-final . ! ? kept at the end; k is a fixed index (reference: 3) or "seeded":
  random.Random(f"{seed}:{sentence_id}").randrange(1, n). The result is sentence-cased.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

from workflow_scripts.triplets.parsing import (ACCUSATIVE, ADVERB_TAGS, BE, BE_FORM, CLOSE_QUOTES, FINAL, FINITE, HAVE,
                                               HEAD_TAGS, LINKING, MEASURES, NEGATIONS, NEGATORS, NO_PASSIVE_BEFORE_TO,
                                               NOMINATIVE, NP_START, NP_TAGS, OPEN_QUOTES, REPORTING, STATIVE,
                                               SUBORDINATORS, TIME_NOUNS, VERB_TAGS, Parsed, Result, _as_parsed, _cap,
                                               _clitic, _decap, _first_finite, _inflect, _is_np, _lemma, _match_case,
                                               _no, _np_end, _ok, _pairs, _particle, _question, _render, _verb_group,
                                               _word_start)


# Rejection reasons each transformation can give (fixed strings, for the datasets' reason counts).
_SVO_REASONS = ("empty", "question", "no_verb", "complex_subject", "negated", "complex_verb",
                "already_passive", "copula", "stative_verb", "unknown_verb", "phrasal_verb",
                "no_object", "reflexive", "ditransitive", "complex_object", "coordinated_predicate")
REASONS = {
    "embedded_clause": ("empty", "no_reporting_verb", "ambiguous_object", "no_clause"),
    "passivization": _SVO_REASONS + ("not_passivizable",),
    "argument_reordering": _SVO_REASONS + ("unchanged",),
    "fixed_point_inversion": ("empty", "too_short", "unchanged"),
}


# --- Embedded Clause Extraction -------------------------------------------------------------------
def embedded_clause(sentence: str | Parsed) -> Result:
    """`X said/thinks/knew/told Y (that) CLAUSE` -> CLAUSE; a quotation placed first, or a clause
    before a trailing ", X said", is the clause too."""
    p = _as_parsed(sentence)
    if not p.units:
        return _no("empty")
    found = _quote_first(p)
    if found:
        return found
    i = _first_finite(p)
    if i is not None and i > 0:
        verbs = [j for j in _verb_group(p, i) if p.tags[j] in VERB_TAGS - {"MD"}]
        if verbs and _lemma(p.words[verbs[-1]]) in REPORTING:
            return _complement(p, verbs[-1])
    return _report_last(p) or _no("no_reporting_verb")


def _final_punct(p: Parsed) -> list[tuple[str, bool]]:
    return [(p.units[-1], p.spaces[-1])] if p.words[-1] in FINAL else []


def _clause_ok(p: Parsed, start: int, end: int) -> bool:
    """A clause: a subject ("there", or a noun phrase with prepositional phrases), adverbs, then a
    finite verb ("said Monday it will" has no such subject: "Monday it")."""
    if start >= end:
        return False
    j = start + 1 if p.tags[start] == "EX" else _np_end(p, start)
    if j == start or (p.tags[start] != "EX" and not _is_np(p, start, j)):
        return False
    while j < end and p.tags[j] == "IN" and p.words[j] not in SUBORDINATORS and \
            _is_np(p, j + 1, _np_end(p, j + 1)):
        j = _np_end(p, j + 1)
    while j < end and p.tags[j] in ADVERB_TAGS:
        j += 1
    return j < end and p.tags[j] in FINITE


def _quotation_ok(p: Parsed, start: int, end: int) -> bool:
    """A quotation is taken whole when it is a sentence of any kind (a question, an imperative)."""
    return end > start and (any(p.tags[j] in VERB_TAGS for j in range(start, end)) or
                            _lemma(p.words[start]) == p.words[start])


def _clause(p: Parsed, start: int, end: int, rule: str, tail=()) -> Result:
    pairs = _pairs(p, range(start, end)) + list(tail)
    pairs[0] = (_cap(pairs[0][0]), False)
    return _ok(pairs, rule)


def _complement(p: Parsed, k: int) -> Result:
    n = len(p)
    j = k + 1
    rule = "bare"
    if _lemma(p.words[k]) == "tell":  # "told reporters (that) ...": skip the object
        end = _np_end(p, j)
        if not _is_np(p, j, end):
            return _no("ambiguous_object")
        j = end
    if j < n and p.words[j] in TIME_NOUNS and _clause_ok(p, j + 1, n):
        j += 1  # "said Monday it will ..."
    if j < n and p.words[j] in (",", ":") and j + 1 < n and p.words[j + 1] in OPEN_QUOTES:
        j += 1
    if j < n and p.words[j] in OPEN_QUOTES:  # He said: "We will win."
        close = _closing_quote(p, j + 1)
        if close is None or not _quotation_ok(p, j + 1, close):
            return _no("no_clause")
        inner_end = close - 1 if p.words[close - 1] in (",", ":") else close
        tail = [] if p.words[inner_end - 1] in FINAL else _final_punct(p)
        return _clause(p, j + 1, inner_end, "quote", tail)
    if j < n and p.words[j] == "that":
        j, rule = j + 1, "that"
    elif j < n and (p.tags[j] in ("IN", "RB", "NNP", ",") and p.words[j] != "of"):
        # "said on Monday that", "said yesterday that": a short adjunct, then "that"
        for q in range(j + 1, min(j + 7, n)):
            if p.words[q] == "that":
                j, rule = q + 1, "that"
                break
            if p.tags[q] not in NP_TAGS | {"IN", "RB", ","}:
                break
    if not _clause_ok(p, j, n):
        return _no("no_clause")
    return _clause(p, j, n, rule)


def _closing_quote(p: Parsed, start: int) -> int | None:
    """The first closing quote from unit start: glued to the word before it, or PTB's ''."""
    return next((q for q in range(start, len(p)) if p.words[q] in CLOSE_QUOTES and
                 (not p.spaces[q] or p.words[q] == "''")), None)


def _report_tail(p: Parsed, start: int, end: int) -> bool:
    """Units start..end are a short report: a noun phrase and one reporting verb ("he said",
    "said the company")."""
    verbs = [j for j in range(start, end) if p.tags[j] in VERB_TAGS]
    return 0 < end - start <= 7 and len(verbs) == 1 and p.tags[verbs[0]] in FINITE and \
        _lemma(p.words[verbs[0]]) in REPORTING and \
        all(p.tags[j] in NP_TAGS | {"CC"} for j in range(start, end) if j != verbs[0])


def _quote_first(p: Parsed) -> Result | None:
    """'"We will win," he said.' -> 'We will win.'"""
    n = len(p)
    if p.words[0] not in OPEN_QUOTES:
        return None
    close = _closing_quote(p, 1)
    if close is None:
        return None
    inner_end = close - 1 if p.words[close - 1] in (",", ":") else close
    start = close + 1 + (close + 1 < n and p.words[close + 1] == ",")
    end = n - 1 if p.words[-1] in FINAL else n
    if not _report_tail(p, start, end) or not _quotation_ok(p, 1, inner_end):
        return None
    tail = [] if p.words[inner_end - 1] in FINAL else _final_punct(p)
    return _clause(p, 1, inner_end, "quote_first", tail)


def _report_last(p: Parsed) -> Result | None:
    """'The purchase was expected, Octel said.' -> 'The purchase was expected.'"""
    n = len(p)
    end = n - 1 if p.words[-1] in FINAL else n
    comma = next((c for c in range(end - 1, 0, -1) if p.words[c] == ","), None)
    if comma is None or not _report_tail(p, comma + 1, end):
        return None
    start, stop = 0, comma
    quoted = p.words[0] in OPEN_QUOTES and p.words[stop - 1] in CLOSE_QUOTES
    if quoted:
        start, stop = 1, stop - 1
    if not (_quotation_ok if quoted else _clause_ok)(p, start, stop):
        return None
    return _clause(p, start, stop, "report_last", _final_punct(p))


# --- Passivization and Argument Reordering --------------------------------------------------------
@dataclass(frozen=True)
class _Clause:
    subject: range
    verbs: tuple[int, ...]  # the verb group: (main,) or (auxiliary, main)
    adverbs: tuple[int, ...]  # adverbs between auxiliary and main verb ("is carefully deboning")
    obj: range
    form: str  # simple | progressive | perfect | modal
    lemma: str


def _svo(p: Parsed) -> _Clause | str:
    """SUBJ VERB-GROUP OBJ REST, or the reason it is not that."""
    if not p.units:
        return "empty"
    if _question(p):
        return "question"
    i = _first_finite(p)
    if i is None:
        return "no_verb"
    if _np_end(p, 0) != i or not _is_np(p, 0, i):
        return "complex_subject"
    if any(p.words[j] in NEGATORS for j in range(i)):
        return "negated"  # "Nobody is ..."
    group = _verb_group(p, i)
    if any(p.words[j] in NEGATIONS | NEGATORS for j in group):
        return "negated"
    while p.tags[group[-1]] not in VERB_TAGS:
        group.pop()  # adverbs after the main verb belong to the rest ("barking noisily")
    adverbs = tuple(j for j in group if p.tags[j] not in VERB_TAGS)
    group = [j for j in group if p.tags[j] in VERB_TAGS]
    if any(p.words[j] in ("being", "been") and p.tags[j + 1] in ("VBN", "VBD") for j in group[:-1]):
        return "already_passive"  # "is being sliced", "has been cut"
    if any(_clitic(p, j) for j in group) or len(group) > 2:
        return "complex_verb"
    first, main = p.words[group[0]], p.tags[group[-1]]
    if len(group) == 1:
        form = "simple" if p.tags[i] != "MD" else ""
    elif first in BE:
        form = "progressive" if main == "VBG" else "passive" if main in ("VBN", "VBD") else ""
    elif first in HAVE:
        form = "perfect" if main in ("VBN", "VBD") else ""
    else:
        form = "modal" if p.tags[i] == "MD" and main == "VB" else ""
    if form == "passive":
        return "already_passive"
    if not form:
        return "complex_verb"
    k = group[-1]
    lemma = _lemma(p.words[k])
    if lemma is None:
        return "unknown_verb"
    if lemma == "be" or lemma in LINKING:
        return "copula"  # "became one of the first": a predicate, not an object
    if lemma in STATIVE:
        return "stative_verb"  # "A man has a hat" -> "A hat is had by a man"
    if _particle(p, k + 1):
        return "phrasal_verb"
    end = _np_end(p, k + 1)
    if not _is_np(p, k + 1, end):
        return "no_object"
    if end < len(p) and p.tags[end] in VERB_TAGS:
        # "cutting an onion and a man is watching": the object ends at the last "and" when a
        # determiner or pronoun starts a clause there ("said the Philippines and Thailand would")
        cut = max((j for j in range(k + 2, end - 1) if p.words[j] == "and"), default=None)
        if cut is None or not _is_np(p, k + 1, cut) or lemma in REPORTING or \
                p.tags[cut + 1] not in ("DT", "PRP", "PRP$"):
            return "complex_object"
        end = cut
    if any(p.words[j].endswith(("self", "selves")) for j in range(k + 1, end)):
        return "reflexive"
    if p.words[end - 1] in TIME_NOUNS or all(p.tags[j] in ("CD", "$", "#") or p.words[j] in MEASURES
                                             for j in range(k + 1, end)):
        return "no_object"  # "opens this weekend", "rose 0.5 %": adverbials, not objects
    if end < len(p):
        tag, word = p.tags[end], p.words[end]
        after = p.tags[end + 1] if end + 1 < len(p) else ""
        if tag in NP_START:
            return "ditransitive"
        if _particle(p, end):
            return "phrasal_verb"
        if tag in VERB_TAGS or tag in ("WDT", "WP", "WP$") or word == "that":
            return "complex_object"
        if word == "of":
            return "complex_object"  # the object's "of" phrase could not be read ("of $ 5")
        if word == "," and (after in NP_START | ADVERB_TAGS | {"WDT", "WP", "WP$"} or
                            p.words[end + 1] == "or"):
            return "complex_object"  # ", who ...", ", formerly a ...": an apposition or relative clause
    if any(p.tags[j] == "CC" and p.tags[j + 1] in VERB_TAGS for j in range(end, len(p) - 1)):
        return "coordinated_predicate"  # "... and is running": its subject would change
    for j in range(end, len(p)):  # a finite verb before any clause opener: the "object" was the
        if p.tags[j] in FINITE:    # subject of a complement ("said exports at year-end would")
            return "complex_object"
        if p.tags[j] in ("CC", "WDT", "WP", "WP$", "WRB") or p.words[j] in SUBORDINATORS:
            break
    return _Clause(range(0, i), tuple(group), adverbs, range(k + 1, end), form, lemma)


def _agent_slot(p: Parsed, j: int) -> int:
    """Where "by SUBJ" goes in the rest starting at unit j: after the prepositional phrases that
    follow the object ("sliced with a knife by a woman"), before anything else (a comma, "to VP",
    an adverbial clause), so that it attaches to the passive verb."""
    start = j
    while j < len(p) and p.tags[j] == "IN" and p.words[j] not in SUBORDINATORS | {"by"}:
        end = _np_end(p, j + 1)
        if not _is_np(p, j + 1, end) or (end < len(p) and p.tags[end] in FINITE):
            break  # not a prepositional phrase, or the start of a clause ("after the dossier was")
        j = end
    if j < len(p) and (p.tags[j] in NP_START | VERB_TAGS or p.words[j] == "by"):
        return start  # where the phrases end is unclear ("at the same time a wave moves in")
    return j


def _agreement(p: Parsed, span: range) -> str:
    """Person/number of a noun phrase for verb agreement: "1s", "3s" or "pl"."""
    head_end = next((j for j in span if p.words[j] == "of"), span.stop)
    if any(p.words[j] == "and" for j in range(span.start, head_end)):  # not "secretary of X and Y"
        return "pl"
    head = max((j for j in range(span.start, head_end) if p.tags[j] in HEAD_TAGS or p.words[j] == "her"),
               default=span.stop - 1)
    word = p.words[head]
    if word in ("i", "me"):
        return "1s"
    if p.tags[head] == "CD" and word not in ("one", "1"):
        return "pl"
    if word in ("we", "us", "they", "them", "you", "these", "those") or p.tags[head] in ("NNS", "NNPS"):
        return "pl"
    if p.tags[head] == "NN":  # irregular plurals the tagger calls singular ("mice")
        from lemminflect import getLemma
        lemma = getLemma(word, upos="NOUN", lemmatize_oov=False)
        if lemma and lemma[0] != word:
            return "pl"
    return "3s"


def _noun_phrase(p: Parsed, span: range, case: str, first: bool) -> list[tuple[str, bool]]:
    """The phrase's units with pronouns in `case` ("nom"/"acc"); capitalised when `first`, its
    sentence-initial word lowercased when it moves away."""
    table = NOMINATIVE if case == "nom" else ACCUSATIVE
    out = []
    for j in span:
        text = p.units[j]
        pronoun = p.tags[j] == "PRP" or (p.words[j] == "her" and j == span.stop - 1)
        if pronoun and p.words[j] in table:
            new = table[p.words[j]]
            text = "I" if new == "i" else new if p.words[j] == "i" else _match_case(new, text)
        if j == 0:
            text = _decap(text, p.tags[j])
        out.append((text, p.spaces[j]))
    out[0] = (_cap(out[0][0]) if first else out[0][0], True)
    return out


def _tense(p: Parsed, j: int) -> str:
    return "past" if p.tags[j] == "VBD" or p.words[j] in ("was", "were", "had") else "present"


def passivization(sentence: str | Parsed, agent: bool = True) -> Result:
    """`SUBJ VERB OBJ REST` -> `OBJ is/was VERB-ed by SUBJ REST` (also progressive, perfect and
    modal groups: "is being eaten", "has been eaten", "can be eaten")."""
    p = _as_parsed(sentence)
    c = _svo(p)
    if isinstance(c, str):
        return _no(c)
    if c.lemma in NO_PASSIVE_BEFORE_TO and c.obj.stop < len(p) and p.tags[c.obj.stop] == "TO":
        return _no("not_passivizable")  # "Bond bulls would like the Fed to recognize ..."
    participle = _inflect(c.lemma, "VBN")
    if participle is None:
        return _no("unknown_verb")
    agr = _agreement(p, c.obj)
    aux = c.verbs[0]
    if c.form == "simple":
        group = [BE_FORM[_tense(p, aux), agr]]
    elif c.form == "progressive":
        group = [BE_FORM[_tense(p, aux), agr], "being"]
    elif c.form == "perfect":
        group = ["had" if p.words[aux] == "had" else "has" if agr == "3s" else "have", "been"]
    else:
        group = [p.units[aux], "be"]
    adverbs = [p.units[j] for j in c.adverbs]  # after the first auxiliary: "is carefully being cut"
    group = group[:1] + adverbs + group[1:] + [participle]
    pairs = _noun_phrase(p, c.obj, "nom", True) + [(w, True) for w in group]
    slot = _agent_slot(p, c.obj.stop)
    pairs += _pairs(p, range(c.obj.stop, slot))
    if agent:
        pairs += [("by", True)] + _noun_phrase(p, c.subject, "acc", False)
    pairs += _pairs(p, range(slot, len(p)))
    return _ok(pairs, f"passive_{c.form}")


def argument_reordering(sentence: str | Parsed) -> Result:
    """Swap subject and object of a simple transitive clause ("X likes Y" -> "Y likes X", "X asks Y
    to VP" -> "Y asks X to VP"); the verb agrees with its new subject."""
    p = _as_parsed(sentence)
    c = _svo(p)
    if isinstance(c, str):
        return _no(c)
    agr = _agreement(p, c.obj)
    aux = c.verbs[0]
    group = [p.units[j] for j in c.verbs]
    if c.form == "simple" and p.tags[aux] in ("VBZ", "VBP"):
        group = [_inflect(c.lemma, "VBZ" if agr == "3s" else "VBP")]
    elif c.form == "progressive":
        group[0] = BE_FORM[_tense(p, aux), agr]
    elif c.form == "perfect" and p.words[aux] != "had":
        group[0] = "has" if agr == "3s" else "have"
    group = group[:-1] + [p.units[j] for j in c.adverbs] + group[-1:]
    pairs = _noun_phrase(p, c.obj, "nom", True) + [(w, True) for w in group]
    pairs += _noun_phrase(p, c.subject, "acc", False) + _pairs(p, range(c.obj.stop, len(p)))
    out = _render(pairs)
    if out.lower() == p.text.lower():
        return _no("unchanged")  # "The dog chased the dog."
    return Result(sentence=out, rule=f"reorder_{c.form}")


# --- Fixed Point Inversion ------------------------------------------------------------------------
def fixed_point_inversion(sentence: str | Parsed, pivot: int | str = 3, *, seed=None,
                          sentence_id=None) -> Result:
    """words[k:] + words[:k] on whitespace words; k = `pivot` (the reference code uses 3), or with
    pivot="seeded" random.Random(f"{seed}:{sentence_id}").randrange(1, n) (n = number of words)."""
    p = _as_parsed(sentence)
    words = p.text.split()
    if not words:
        return _no("empty")
    final = ""  # the sentence-final punctuation stays at the end, attached or not as it was
    match = re.match(r"^(.*?)([.!?]+)$", words[-1])
    if match and match.group(1):
        words[-1], final = match.group(1), match.group(2)
    elif match and len(words) > 1:
        final = " " + words.pop()
    n = len(words)
    if pivot == "seeded":
        if seed is None or sentence_id is None:
            raise ValueError('pivot="seeded" needs seed and sentence_id')
        if n < 2:
            return _no("too_short")
        k = random.Random(f"{seed}:{sentence_id}").randrange(1, n)
    elif isinstance(pivot, int) and not isinstance(pivot, bool) and pivot >= 1:
        k = pivot
        if n <= k:
            return _no("too_short")
    else:
        raise ValueError(f'pivot must be a positive int or "seeded", not {pivot!r}')
    start = _word_start(p)
    first_tag = p.tags[start] if start is not None else ""
    out = words[k:] + [_decap(words[0], first_tag)] + words[1:k]
    out[0] = _cap(out[0])
    out[-1] += final
    result = " ".join(out)
    if result.lower() == p.text.lower():
        return _no("unchanged")  # "go go go go"
    return Result(sentence=result, rule=f"pivot_{k}")
