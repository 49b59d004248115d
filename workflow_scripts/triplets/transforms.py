"""English sentence transformations of Zhu, Li & de Melo's sentence triplets (seed 002).

Each transformation is a pure function: a sentence (whitespace-tokenised text, or a Parsed from
parse(), to tag once and transform several times) in, a Result out: the new sentence, or a short
rejection reason listed in REASONS. Nothing is guessed: what the rules cannot handle reliably is
rejected. Tags come from nltk.pos_tag (averaged perceptron tagger), synonyms from WordNet, inflection
from lemminflect; the word lists here are small closed classes (auxiliaries, contractions, pronouns,
negators, particles, linking verbs, temporal nouns, subordinators).

Tokens. A whitespace token is split into units the way the Penn Treebank tokenises (the tagger was
trained on that): leading/trailing punctuation and clitics ("is|n't", "ca|n't", "it|'s", "can|not")
become units glued to their neighbour. Edits replace, insert, delete or move whole units, so an
untouched word comes back byte for byte and no edit cuts into a word (the reference code's
unanchored regexes produced "motorcyclis nott"). Text already tokenised the Treebank way can come
with its own tags, one per whitespace token (the WSJ sample's gold tags): parse(text, tags).

Decisions on the ambiguous cases:
- "First verb" is the first finite verb (VBZ/VBD/VBP/MD) of the main clause: participles and
  gerunds inside the subject ("A man wearing a hat is ...") do not carry the clause's polarity, nor
  does a verb in the subject's relative clause ("Doctors who treated her have ...") or a VBD-tagged
  participle after a determiner/adjective ("the registered voters"). A sentence-initial verb with no
  finite verb is an imperative ("Close the door." -> "Don't close the door."). The tagger alone
  decides otherwise: a reduced relative it tags VBD ("The man accused of ... was") is negated.
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
- Case everywhere: a word moved to the front is capitalised; the original first word, moved away, is
  lowercased unless tagged NNP/NNPS, "I", an acronym or a word WordNet knows only capitalised
  ("French"). Introduced words use ASCII apostrophes.
"""
from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass

# Rejection reasons each transformation can give (fixed strings, for the datasets' reason counts).
_SVO_REASONS = ("empty", "question", "no_verb", "complex_subject", "negated", "complex_verb",
                "already_passive", "copula", "stative_verb", "unknown_verb", "phrasal_verb",
                "no_object", "reflexive", "ditransitive", "complex_object", "coordinated_predicate")
REASONS = {
    "not_negation": ("empty", "no_verb", "other_negation", "inverted", "unknown_verb",
                     "ambiguous_contraction"),
    "quantifier_negation": ("empty", "no_indefinite_subject", "plural_subject", "no_verb",
                            "no_copula", "complex_subject", "already_negated", "predicate_not_verbal",
                            "coordinated_predicate"),
    "synonym_substitution": ("empty", "no_verb", "question", "no_main_verb", "copula", "phrasal_verb",
                             "unknown_verb", "frame_verb", "no_synonym"),
    "embedded_clause": ("empty", "no_reporting_verb", "ambiguous_object", "no_clause"),
    "passivization": _SVO_REASONS + ("not_passivizable",),
    "argument_reordering": _SVO_REASONS + ("unchanged",),
    "fixed_point_inversion": ("empty", "too_short", "unchanged"),
}


@dataclass(frozen=True, slots=True)
class Result:
    """A transformation's outcome: sentence set and reason None, or sentence None and a reason."""
    sentence: str | None = None
    reason: str | None = None
    rule: str | None = None  # which variant produced the sentence, e.g. "contraction", "passive_simple"

    @property
    def ok(self) -> bool:
        return self.sentence is not None


def _no(reason: str) -> Result:
    return Result(reason=reason)


# --- closed word classes --------------------------------------------------------------------------
VERB_TAGS = {"VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "MD"}
FINITE = {"VBD", "VBP", "VBZ", "MD"}
ADVERB_TAGS = {"RB", "RBR", "RBS"}
NOUN_TAGS = {"NN", "NNS", "NNP", "NNPS"}
HEAD_TAGS = NOUN_TAGS | {"PRP", "CD"}
NP_TAGS = {"DT", "PDT", "PRP$", "CD", "JJ", "JJR", "JJS", "PRP", "POS", "$", "#"} | NOUN_TAGS
NP_START = NP_TAGS - {"POS"}
FINAL = {".", "!", "?", "..."}
ADJECTIVE_SLOT = {"DT", "PDT", "PRP$", "JJ", "JJR", "JJS", "CD", "POS", "IN", "TO"}
OPEN_QUOTES = {'"', "\u201c", "``"}
CLOSE_QUOTES = {'"', "\u201d", "''"}

BE = {"be", "am", "is", "are", "was", "were", "been", "being"}
HAVE = {"have", "has", "had"}
DO = {"do", "does", "did"}
NEGATIONS = {"not", "n't"}
NEGATORS = {"never", "no", "nobody", "nothing", "none", "nowhere", "neither", "nor", "noone",
            # apostrophe-less n't forms that are not ordinary words
            "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "hasnt", "havent", "hadnt",
            "couldnt", "wouldnt", "shouldnt", "aint"}
CONTRACTED = {"is": "isn't", "are": "aren't", "was": "wasn't", "were": "weren't", "do": "don't",
              "does": "doesn't", "did": "didn't", "has": "hasn't", "have": "haven't", "had": "hadn't",
              "will": "won't", "would": "wouldn't", "can": "can't", "could": "couldn't",
              "should": "shouldn't", "must": "mustn't", "need": "needn't"}
UNCONTRACTED = {"am", "may", "might", "shall", "ought", "dare"}
MODALS = {"will", "would", "can", "could", "should", "must", "may", "might", "shall", "ought"}
AUXILIARIES = BE | HAVE | DO | set(CONTRACTED) | UNCONTRACTED
STEMS = {"ca": "can", "wo": "will", "sha": "shall"}  # what is left of can't, won't, shan't
DO_TAG = {"does": "VBZ", "did": "VBD", "do": "VBP"}
NOMINATIVE = {"me": "i", "him": "he", "her": "she", "us": "we", "them": "they", "whom": "who"}
ACCUSATIVE = {v: k for k, v in NOMINATIVE.items()}
BE_FORM = {("present", "1s"): "am", ("present", "3s"): "is", ("present", "pl"): "are",
           ("past", "1s"): "was", ("past", "3s"): "was", ("past", "pl"): "were"}
REPORTING = {"say", "think", "know", "tell"}
# Verbs whose noun phrase after them is no object that could become a subject.
LINKING = {"become", "remain", "stay", "seem", "appear"}
STATIVE = {"have", "cost", "weigh", "total", "equal", "resemble", "lack", "mean", "contain", "number"}
# "X wants Y to VP" is not "Y is wanted by X to VP": these do not passivize before "to VP".
NO_PASSIVE_BEFORE_TO = {"want", "like", "love", "hate", "prefer", "need", "wish", "expect"}
# Temporal nouns: after a verb they are adverbials, not objects ("The movie opens this weekend").
TIME_NOUNS = {"today", "tonight", "yesterday", "tomorrow", "morning", "afternoon", "evening",
              "night", "day", "week", "weekend", "month", "year", "time", "monday", "tuesday",
              "wednesday", "thursday", "friday", "saturday", "sunday"}
PARTICLES = {"up", "down", "out", "off", "away", "back", "over"}
MEASURES = {"%", "percent", "point", "points", "cent", "cents"}
# Prepositions that can open an adverbial clause: the by-phrase goes before them.
SUBORDINATORS = {"as", "because", "while", "if", "although", "though", "since", "that", "whether",
                 "until", "unless", "before", "after", "once", "whereas"}

NLTK_HINT = ("NLTK data missing: install averaged_perceptron_tagger_eng and wordnet with "
             "`python -m nltk.downloader averaged_perceptron_tagger_eng wordnet` and point NLTK_DATA "
             "at that folder")


# --- tokens and tags (the shared helper) ---------------------------------------------------------
@dataclass(frozen=True)
class Parsed:
    """A sentence as tagged units; spaces[i] says whether a space precedes unit i."""
    text: str
    units: tuple[str, ...]
    spaces: tuple[bool, ...]
    tags: tuple[str, ...]
    words: tuple[str, ...]  # units lowercased with ASCII apostrophes, for matching

    def __len__(self) -> int:
        return len(self.units)


_OPEN = set("\"\u201c\u2018([{`\u00ab")
_CLOSE = set("\"\u201d\u2019)]}.,;:!?\u2026\u00bb'")
_CLITICS = ("n't", "'s", "'re", "'ve", "'ll", "'d", "'m")
_ABBREV = re.compile(r"^(?:[A-Za-z]\.)+$|^(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Inc|Corp|Co|Ltd|vs|etc)\.$")
_PUNCT_RUN = re.compile(r"\.+|``|''|.", re.S)


def _norm(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'").lower()


def _split_token(tok: str) -> list[str]:
    """One whitespace token as PTB-style units (punctuation and clitics split off)."""
    if _norm(tok) in _CLITICS or not any(c.isalnum() for c in tok):
        return [tok]
    start, end = 0, len(tok)
    while tok[start] in _OPEN or (tok[start] in "'\u2018" and tok[start + 1] in "'\u2018") or \
            (tok[start] in "'\u2018" and tok[start + 1].isalpha()):
        start += 1  # opening quotes and brackets, PTB's '' included
    while tok[end - 1] in _CLOSE:
        end -= 1
    if end < len(tok) and tok[end] == "." and _ABBREV.match(tok[start:end + 1]):
        end += 1  # "U.S.", "Mr.": the dot belongs to the word
    core, low = tok[start:end], _norm(tok[start:end])
    parts = [core]
    for clitic in _CLITICS:
        if low.endswith(clitic) and len(low) > len(clitic) and low[-len(clitic) - 1].isalpha():
            parts = [core[:-len(clitic)], core[-len(clitic):]]
            break
    else:
        if low == "cannot":
            parts = [core[:3], core[3:]]
    return _PUNCT_RUN.findall(tok[:start]) + parts + _PUNCT_RUN.findall(tok[end:])


def _tag(texts: list[str], spaces: list[bool]) -> list[str]:
    import nltk  # imported here: the module itself loads without NLTK data
    feed = []
    for i, text in enumerate(texts):
        if text in ('"', "\u201c", "\u201d"):  # the tagger knows PTB quotes and dashes only
            text = "``" if (i == 0 or spaces[i]) and text != "\u201d" else "''"
        elif text in ("\u2014", "\u2013"):
            text = "--"
        feed.append(text.replace("\u2019", "'").replace("\u2018", "'"))
    try:
        return [tag for _, tag in nltk.pos_tag(feed)]
    except LookupError as err:
        raise LookupError(NLTK_HINT) from err


def parse(sentence: str, tags: list[str] | None = None) -> Parsed:
    """Split a sentence into units and tag them. Given `tags` (e.g. the WSJ sample's gold tags),
    one per whitespace token, the tokens are taken as units unsplit (Penn Treebank tokenised text);
    otherwise tags must be one per unit."""
    texts: list[str] = []
    spaces: list[bool] = []
    tokens = sentence.split()
    for tok in tokens:
        units = [tok] if tags is not None and len(tags) == len(tokens) else _split_token(tok)
        for k, unit in enumerate(units):
            texts.append(unit)
            spaces.append(k == 0)
    if tags is None:
        tags = _tag(texts, spaces) if texts else []
    elif len(tags) != len(texts):
        raise ValueError(f"{len(tags)} tags for {len(texts)} units {texts}")
    return Parsed(" ".join(sentence.split()), tuple(texts), tuple(spaces), tuple(tags),
                  tuple(_norm(t) for t in texts))


def _as_parsed(sentence: str | Parsed) -> Parsed:
    return sentence if isinstance(sentence, Parsed) else parse(sentence)


def _render(pairs: list[tuple[str, bool]]) -> str:
    return "".join((" " if k and space else "") + text for k, (text, space) in enumerate(pairs))


def _pairs(p: Parsed, span=None) -> list[tuple[str, bool]]:
    span = range(len(p)) if span is None else span
    return [(p.units[j], p.spaces[j]) for j in span]


def _ok(pairs: list[tuple[str, bool]], rule: str) -> Result:
    return Result(sentence=_render(pairs), rule=rule)


def _edge(text: str) -> int:
    """Index of the first letter or digit (leading quotes and brackets skipped)."""
    return next((k for k, c in enumerate(text) if c.isalnum()), 0)


def _cap(text: str) -> str:
    k = _edge(text)
    return text[:k] + text[k:k + 1].upper() + text[k + 1:]


@functools.lru_cache(maxsize=4096)
def _lowercase_word(word: str, tag: str) -> bool:
    """Whether a capitalised content word is a common word (WordNet lists it in lowercase for its
    part of speech: "Big", "Shares") rather than a proper one ("French", tagged JJ)."""
    pos = {"J": "a", "N": "n", "V": "v", "R": "r"}.get(tag[:1])
    if pos is None:
        return True  # function words: determiners, pronouns, prepositions, numbers
    from nltk.corpus import wordnet as wn
    low = word.lower()
    bases = {low, wn.morphy(low, pos)}
    return any(lem.name() in bases for syn in wn.synsets(low, pos) for lem in syn.lemmas())


def _decap(text: str, tag: str) -> str:
    """Lowercase a sentence-initial word that moves away, unless it is a name, "I", an acronym or
    a proper adjective."""
    k = _edge(text)
    word = text[k:].rstrip(".,;:!?\"')").replace("\u2019", "'")
    stem = word[:-3] if word.lower().endswith("n't") else word.split("'")[0]  # "Don't", "It's"
    if tag in ("NNP", "NNPS") or stem == "I" or (len(stem) > 1 and stem.isupper()) or not stem.isalpha():
        return text
    if stem.lower() not in AUXILIARIES | MODALS | set(STEMS) and not _lowercase_word(stem, tag):
        return text
    return text[:k] + text[k:k + 1].lower() + text[k + 1:]


def _match_case(new: str, old: str) -> str:
    if len(old) > 1 and old.isupper():
        return new.upper()
    return _cap(new) if old[:1].isupper() else new


def _word_start(p: Parsed) -> int | None:
    return next((j for j, u in enumerate(p.units) if any(c.isalnum() for c in u)), None)


def _question(p: Parsed) -> bool:
    words = [w for w in p.words if w not in CLOSE_QUOTES and w not in (")", "]")]
    return bool(words) and words[-1] == "?"


def _first_finite(p: Parsed) -> int | None:
    """The first finite verb of the main clause, as far as tags tell: a verb inside a relative
    clause of the subject ("Doctors who treated her have ...", "Pennsylvania, which has ..., is")
    and a VBD-tagged participle after a determiner or adjective ("the registered voters") are
    skipped."""
    relative = False
    for j, tag in enumerate(p.tags):
        if tag in ("WDT", "WP") and j > 0:
            relative = True
        elif tag in FINITE:
            if relative:
                relative = False
            elif not (tag == "VBD" and j > 0 and p.tags[j - 1] in ADJECTIVE_SLOT and _participle(p.words[j])):
                return j
    return None


def _participle(word: str) -> bool:
    lemma = _lemma(word)
    return lemma is not None and _inflect(lemma, "VBN") == word


def _first_verb(p: Parsed) -> int | None:
    """The first finite verb; in a question, a first word that is an auxiliary (the tagger reads
    "May I go?" as the month); in an imperative, the sentence-initial verb."""
    start = _word_start(p)
    if start is None:
        return None
    if _question(p) and p.words[start] in AUXILIARIES:
        return start
    i = _first_finite(p)
    if i is not None:
        return i
    if p.words[start] == "please" and start + 1 < len(p):
        start += 1
    return start if p.tags[start] == "VB" or _imperative(p, start) else None


def _imperative(p: Parsed, start: int) -> bool:
    """The tagger mis-tags many sentence-initial imperatives ("Close the door." -> Close/RB): the
    first word counts as a verb if it is a verb's base form and is tagged VB when re-tagged
    lowercased after "Please" (where the tagger expects an imperative)."""
    word = p.words[start]
    if _lemma(word) != word:
        return False
    texts, spaces = list(p.units), list(p.spaces)
    texts[start] = texts[start].lower()
    if start == 0 or p.words[start - 1] != "please":
        texts.insert(start, "Please")
        spaces.insert(start, True)
        start += 1
    return _tag(texts, spaces)[start] == "VB"


def _verb_group(p: Parsed, i: int) -> list[int]:
    """Verb i with the verbs, adverbs and negations right after it ("is n't really playing")."""
    j = i + 1
    while j < len(p) and (p.tags[j] in VERB_TAGS | ADVERB_TAGS or p.words[j] in NEGATIONS):
        j += 1
    return list(range(i, j))


def _particle(p: Parsed, j: int) -> bool:
    """A verb particle ("picking up", "putting away": the tagger often says RB for these)."""
    return j < len(p) and (p.tags[j] == "RP" or (p.tags[j] in ADVERB_TAGS and p.words[j] in PARTICLES))


def _clitic(p: Parsed, j: int) -> bool:
    return p.words[j] in _CLITICS[1:]  # 's 're 've 'll 'd 'm, glued or (PTB) not


def _lemma(word: str) -> str | None:
    from lemminflect import getLemma
    found = getLemma(_norm(word), upos="VERB", lemmatize_oov=False)
    return found[0] if found else None


def _inflect(lemma: str, tag: str) -> str | None:
    from lemminflect import getInflection
    found = getInflection(lemma, tag=tag, inflect_oov=False)
    return found[0] if found else None


def _np_end(p: Parsed, j: int) -> int:
    """End of the noun phrase starting at unit j (j itself when there is none). After a head noun
    only compounds, "'s", "of NP" and "and NP" continue it, so "told reporters the deal" splits."""
    head = False
    n = len(p)
    while j < n:
        tag, word = p.tags[j], p.words[j]
        nxt = p.tags[j + 1] if j + 1 < n else ""
        if head:
            if tag in NOUN_TAGS and p.tags[j - 1] != "PRP":
                j += 1
            elif tag == "POS" or (word == "of" and nxt in NP_START) or \
                    (tag == "CC" and word in ("and", "or", "&") and nxt in NP_START):
                head = False
                j += 1
            else:
                break
        elif tag in NP_START or (tag in ADVERB_TAGS and nxt.startswith("JJ")) or \
                (tag == "CC" and j and p.tags[j - 1].startswith("JJ") and nxt.startswith("JJ")) or \
                (word == "of" and j and p.tags[j - 1] == "CD" and nxt in NP_START):  # "three of the seats"
            # "her" tagged PRP$ with no noun after it is the object pronoun
            head = tag in NOUN_TAGS or tag == "PRP" or (word == "her" and nxt not in NP_START)
            j += 1
        else:
            break
    return j


def _is_np(p: Parsed, start: int, end: int) -> bool:
    return end > start and (p.tags[end - 1] in HEAD_TAGS or p.words[end - 1] == "her")


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
