"""What the English sentence transformations of Zhu, Li & de Melo's sentence triplets (seed 002)
share: tokens and tags (parse, Parsed), the outcome (Result), closed word classes and helpers.
The transformations themselves are in lexical.py (Not-Negation, Quantifier-Negation, Synonym
Substitution: words changed in place) and structural.py (Embedded Clause Extraction,
Passivization, Argument Reordering, Fixed Point Inversion: constituents extracted or moved).

Each transformation is a pure function: a sentence (whitespace-tokenised text, or a Parsed from
parse(), to tag once and transform several times) in, a Result out: the new sentence, or a short
rejection reason listed in its module's REASONS. Nothing is guessed: what the rules cannot handle
reliably is rejected. Tags come from nltk.pos_tag (averaged perceptron tagger), synonyms from
WordNet, inflection from lemminflect; the word lists here are small closed classes (auxiliaries,
contractions, pronouns, negators, particles, linking verbs, temporal nouns, subordinators).

Tokens. A whitespace token is split into units the way the Penn Treebank tokenises (the tagger was
trained on that): leading/trailing punctuation and clitics ("is|n't", "ca|n't", "it|'s", "can|not")
become units glued to their neighbour. Edits replace, insert, delete or move whole units, so an
untouched word comes back byte for byte and no edit cuts into a word (the reference code's
unanchored regexes produced "motorcyclis nott"). Text already tokenised the Treebank way can come
with its own tags, one per whitespace token (the WSJ sample's gold tags): parse(text, tags).

Decisions every transformation follows:
- "First verb" is the first finite verb (VBZ/VBD/VBP/MD) of the main clause: participles and
  gerunds inside the subject ("A man wearing a hat is ...") do not carry the clause's polarity, nor
  does a verb in the subject's relative clause ("Doctors who treated her have ...") or a VBD-tagged
  participle after a determiner/adjective ("the registered voters"). A sentence-initial verb with no
  finite verb is an imperative ("Close the door." -> "Don't close the door."). The tagger alone
  decides otherwise: a reduced relative it tags VBD ("The man accused of ... was") is negated.
- Case everywhere: a word moved to the front is capitalised; the original first word, moved away, is
  lowercased unless tagged NNP/NNPS, "I", an acronym or a word WordNet knows only capitalised
  ("French"). Introduced words use ASCII apostrophes.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass


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
