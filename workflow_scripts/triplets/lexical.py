"""Triplet transformations that change words in place (Zhu, Li & de Melo, seed 002): Not-Negation,
Quantifier-Negation and Synonym Substitution. Tokens, tags, Result and the decisions they share
(the first verb, case): parsing.py.

Decisions on the ambiguous cases:
- Not-Negation, adding: be, modals and auxiliary have/do take the contracted form (is -> isn't,
  will -> won't, can -> can't, have -> haven't, ...; also in questions: "Is it ...?" -> "Isn't it
  ...?"). am, may, might, shall, ought and dare have no usual contraction: "not" goes after them, and
  a question with one of them first is rejected ("inverted"), since "not" would belong after the
  subject. Clitics ('s 're 'm 'll 'd 've) take "not" after the token ("He's not"): 's and 'd are
  ambiguous (is/has, had/would), so rewriting them could pick the wrong word. have and do as main
  verbs, and all other verbs, get do-support with the lemma ("has a car" -> "doesn't have a car",
  "likes" -> "doesn't like", "went" -> "didn't go").
- Not-Negation, removing: a "not"/"n't" in the first verb group is deleted ("isn't" -> "is", "can't"
  and "cannot" -> "can", "won't" -> "will"); under do-support the verb takes the auxiliary's
  inflection ("does not like" -> "likes", "didn't go" -> "went", "Don't go" -> "Go"), except in
  questions and ellipsis ("Doesn't he like it?" -> "Does he like it?"). "ain't" is ambiguous
  (isn't/hasn't) -> "ambiguous_contraction". Any other negation (not/n't elsewhere, never, no,
  nobody, nothing, ...) -> "other_negation": removing it changes more than the polarity, and adding
  "not" beside it makes a double negative.
- Quantifier-Negation: A/An + a plain noun phrase + is/was + a verbal or locative predicate (VBG, VBN
  or a preposition: "A man is in the kitchen"); the copula is dropped as in the reference, so an
  adjective or noun predicate ("A man is tall") would come out ungrammatical -> rejected. A plural
  copula after "A" ("A group of kids are", "A few men are", "A man and a woman are") means a
  quantity or a coordination, not one indefinite ("There are no group of kids") -> "plural_subject".
  So the result is always "There is/was no X" ("There are no X" never comes out).
- Synonym Substitution: the main verb (last verb of the first verb group; the copula is not
  replaced) -> a WordNet synonym in the same inflection, chosen as _synonym() says (the dominant
  sense only; "no_synonym" is the common outcome); phrasal verbs (a particle follows) are rejected,
  since their meaning is not the verb's.
"""
from __future__ import annotations

import functools

from workflow_scripts.triplets.parsing import (ADVERB_TAGS, BE, CONTRACTED, DO, DO_TAG, FINITE, HAVE, MODALS, NEGATIONS,
                                               NEGATORS, NLTK_HINT, NP_TAGS, STEMS, VERB_TAGS, Parsed, Result,
                                               _as_parsed, _cap, _clitic, _first_finite, _first_verb, _inflect, _lemma,
                                               _match_case, _no, _ok, _pairs, _particle, _question, _verb_group,
                                               _word_start)


# Rejection reasons each transformation can give (fixed strings, for the datasets' reason counts).
REASONS = {
    "not_negation": ("empty", "no_verb", "other_negation", "inverted", "unknown_verb",
                     "ambiguous_contraction"),
    "quantifier_negation": ("empty", "no_indefinite_subject", "plural_subject", "no_verb",
                            "no_copula", "complex_subject", "already_negated", "predicate_not_verbal",
                            "coordinated_predicate"),
    "synonym_substitution": ("empty", "no_verb", "question", "no_main_verb", "copula", "phrasal_verb",
                             "unknown_verb", "frame_verb", "no_synonym"),
}


# --- Not-Negation ---------------------------------------------------------------------------------
def not_negation(sentence: str | Parsed) -> Result:
    """Negate the first finite verb ("is" -> "isn't", "likes" -> "doesn't like"), or remove the
    negation it already has ("isn't" -> "is", "doesn't like" -> "likes")."""
    p = _as_parsed(sentence)
    if not p.units:
        return _no("empty")
    i = _first_verb(p)
    if i is None:
        return _no("no_verb")
    group = _verb_group(p, i)
    negs = [j for j in group if p.words[j] in NEGATIONS]
    if any(w in NEGATIONS | NEGATORS for j, w in enumerate(p.words) if j not in negs[:1]):
        return _no("other_negation")
    return _remove_not(p, group, negs[0]) if negs else _insert_not(p, group)


def _insert_not(p: Parsed, group: list[int]) -> Result:
    i, word, tag = group[0], p.words[group[0]], p.tags[group[0]]
    pairs = _pairs(p)
    inverted = i == _word_start(p) and _question(p)
    has_verb_after = any(p.tags[j] in VERB_TAGS for j in group[1:])
    if _clitic(p, i):  # he's / I'm / we'll / they'd: "not" after the token
        pairs.insert(i + 1, ("not", True))
        return _ok(pairs, "not")
    imperative = _first_finite(p) is None  # _first_verb() found a sentence-initial verb
    auxiliary = not imperative and (tag == "MD" or word in BE or word in MODALS or
                                    (word in HAVE | DO and (has_verb_after or inverted)))
    if auxiliary:
        if word in CONTRACTED:
            pairs[i] = (_match_case(CONTRACTED[word], p.units[i]), p.spaces[i])
            return _ok(pairs, "contraction")
        if inverted:
            return _no("inverted")  # "May I go?": "not" belongs after the subject
        pairs.insert(i + 1, ("not", True))
        return _ok(pairs, "not")
    lemma = _lemma(word)
    if lemma is None:
        return _no("unknown_verb")
    aux = {"VBZ": "doesn't", "VBD": "didn't"}.get(tag, "don't")
    if i == _word_start(p) and p.units[i][:1].isupper():
        aux = _cap(aux)
    pairs[i:i + 1] = [(aux, p.spaces[i]), (lemma, True)]
    return _ok(pairs, "do_support")


def _remove_not(p: Parsed, group: list[int], neg: int) -> Result:
    i = group[0]
    pairs = _pairs(p)
    drop = {neg}
    if p.words[neg] == "n't":
        stem = p.words[neg - 1]
        if stem == "ai":
            return _no("ambiguous_contraction")
        if stem in STEMS:
            pairs[neg - 1] = (_match_case(STEMS[stem], p.units[neg - 1]), p.spaces[neg - 1])
    # under do-support the next word but adverbs is the bare verb, whatever its tag ("not like"
    # is often tagged IN); a subject in between means a question: "Doesn't he like it?"
    main = next((j for j in range(neg + 1, len(p)) if p.tags[j] not in ADVERB_TAGS), None)
    if main is not None and (p.tags[main] not in VERB_TAGS | {"IN"} or
                             _lemma(p.words[main]) != p.words[main]):
        main = None
    if p.words[i] in DO and main is not None:
        if i == _word_start(p):  # imperative "Don't go" (a question has its subject in between)
            pairs[main] = (_match_case(p.units[main], p.units[i]), p.spaces[i])
            drop.add(i)
            return _ok([u for j, u in enumerate(pairs) if j not in drop], "removed_do_support")
        lemma = _lemma(p.words[main])
        form = lemma and _inflect(lemma, DO_TAG[p.words[i]])
        if form is None:
            return _no("unknown_verb")
        pairs[main] = (form, p.spaces[main])
        drop.add(i)
        kept = [u for j, u in enumerate(pairs) if j not in drop]
        return _ok(kept, "removed_do_support")
    return _ok([u for j, u in enumerate(pairs) if j not in drop], "removed")


# --- Quantifier-Negation --------------------------------------------------------------------------
def quantifier_negation(sentence: str | Parsed) -> Result:
    """`A/An X is VP` -> `There is no X VP` ("A girl is playing" -> "There is no girl playing")."""
    p = _as_parsed(sentence)
    if not p.units:
        return _no("empty")
    if p.words[0] not in ("a", "an"):
        return _no("no_indefinite_subject")
    i = _first_finite(p)
    if i is None:
        return _no("no_verb")
    if i == 1:
        return _no("no_indefinite_subject")
    copula = p.words[i]
    if copula not in BE or _clitic(p, i):
        return _no("no_copula")
    if copula in ("are", "were") or p.words[1] == "few":
        return _no("plural_subject")  # "A group of kids are", "A few men are", "A man and a woman are"
    between_adjectives = {j for j in range(2, i - 1) if p.tags[j] == "CC" and
                          p.tags[j - 1].startswith("JJ") and p.tags[j + 1].startswith("JJ")}
    allowed = NP_TAGS | {"IN", "VBG", "VBN", "RB", "TO", "HYPH"}
    if any((p.tags[j] not in allowed and j not in between_adjectives) or p.words[j] in ("that", "which", "who")
           for j in range(1, i)):
        return _no("complex_subject")  # commas, coordination, relative clauses
    k = i + 1
    while k < len(p) and p.tags[k] in ADVERB_TAGS and p.words[k] not in NEGATIONS | {"never"}:
        k += 1
    if k < len(p) and p.words[k] in NEGATIONS | {"never"}:
        return _no("already_negated")
    if k >= len(p) or p.tags[k] not in ("VBG", "VBN", "IN"):
        return _no("predicate_not_verbal")  # "A man is tall" -> "There is no man tall"
    if any(p.words[j] == "and" and p.tags[j + 1] in FINITE for j in range(k, len(p) - 1)):
        # "A man is singing and is dancing" -> "There is no man singing and is dancing"
        return _no("coordinated_predicate")
    there = "There" if p.units[0][:1].isupper() else "there"
    subject = _pairs(p, range(1, i))
    subject[0] = (subject[0][0], True)
    pairs = [(there, p.spaces[0]), (copula, True), ("no", True)] + subject + _pairs(p, range(i + 1, len(p)))
    return _ok(pairs, f"there_{copula}_no")


# --- Synonym Substitution -------------------------------------------------------------------------
# Verbs whose WordNet synonyms take other complements ("said the purchase was expected" -> "told
# the purchase ...", "asked them to" -> "inquired them to", "made it worse" -> "did it worse"):
# reporting, cognition and light verbs are neither replaced nor used as replacements. Measured on
# the shared SICK/WSJ/MSRP build, say -> tell alone was 19% of Negation Detection's S+.
FRAME_VERBS = frozenset({"say", "tell", "ask", "think", "know", "believe", "make", "do", "have", "get", "go",
                         "become", "take", "give", "come", "let", "keep", "seem", "put", "set"})


@functools.lru_cache(maxsize=None)
def _synonym(lemma: str, tag: str) -> str | None:
    """The WordNet synonym of a verb lemma, deterministically: take the lemma's most frequent verb
    sense (the synset where the lemma's SemCor count is highest; ties: WordNet's order, itself by
    frequency) and, in it, the usable lemma with the highest count (ties: WordNet's order). Usable:
    a single alphabetic word, not the lemma itself nor "be", attested at least twice in that sense
    (rarer ones are mostly odd: "ride" -> "sit", "run" -> "lam"), that lemminflect can inflect to
    `tag`. Only the dominant sense is tried: a synonym of a rarer sense mostly changes the meaning
    ("run" -> "extend"), so the sentence is rejected instead."""
    from nltk.corpus import wordnet as wn
    try:
        synsets = wn.synsets(lemma, pos=wn.VERB)
    except LookupError as err:
        raise LookupError(NLTK_HINT) from err
    senses = [(lem.count(), -rank, synset) for rank, synset in enumerate(synsets)
              for lem in synset.lemmas() if lem.name().lower() == lemma]
    if not senses:  # wn.synsets also returns senses of other base forms ("saw" -> see)
        return None
    synset = max(senses, key=lambda s: s[:2])[2]
    usable = [lem for lem in synset.lemmas() if lem.name().isalpha()
              and lem.name().lower() not in (lemma, "be") and lem.name().lower() not in FRAME_VERBS
              and lem.count() >= 2
              and _inflect(lem.name().lower(), tag)]
    if not usable:
        return None
    return max(usable, key=lambda lem: lem.count()).name().lower()  # max keeps the first of ties


def synonym_substitution(sentence: str | Parsed) -> Result:
    """Replace the main verb by a WordNet synonym in the same inflection ("is talking" -> "is
    speaking")."""
    p = _as_parsed(sentence)
    if not p.units:
        return _no("empty")
    i = _first_verb(p)
    if i is None:
        return _no("no_verb")
    if _first_finite(p) is None:  # imperative: the tagger's tag of the verb is not to be trusted
        k, tag = i, "VB"
    elif i == _word_start(p) and _question(p):
        return _no("question")  # "Does he like it?": the main verb is after the subject
    else:
        verbs = [j for j in _verb_group(p, i) if p.tags[j] in VERB_TAGS - {"MD"}]
        if not verbs:
            return _no("no_main_verb")  # "He can."
        k = verbs[-1]
        tag = p.tags[k]
    if _clitic(p, k):
        return _no("copula" if p.words[k] in ("'s", "'re", "'m") else "no_main_verb")
    if _particle(p, k + 1):
        return _no("phrasal_verb")
    lemma = _lemma(p.words[k])
    if lemma is None:
        return _no("unknown_verb")
    if lemma == "be":
        return _no("copula")
    if lemma in FRAME_VERBS:
        return _no("frame_verb")
    synonym = _synonym(lemma, tag)
    if synonym is None:
        return _no("no_synonym")
    pairs = _pairs(p)
    pairs[k] = (_match_case(_inflect(synonym, tag), p.units[k]), p.spaces[k])
    return _ok(pairs, f"{lemma}>{synonym}")
