"""English grammatical negation by addition, in the manner of SNCSE (Wang et al. 2022).

A sentence without a negation gets one: "not" after the first auxiliary, copula or modal, or
do-support ("does/did/do not" + base form of the first finite main verb). A sentence that cannot
be negated safely comes back as (None, reason, None); nothing is guessed.

Choices for the ambiguous cases:
- Tokens are whitespace words, kept verbatim except the verb replaced by its base form under
  do-support. Punctuation keeps its place in the word sequence: trailing punctuation of the token
  that "not" follows moves onto "not" ("It is." -> "It is not."), and leading punctuation of a
  replaced verb moves onto the first inserted word ('"Close' -> '"Do not close').
- Contracted auxiliaries 'm 're 'll 'd 've and verbal 's take "not" after the whole token ("it's
  not", "I'll not", "I'd not", "we've not"): grammatical for both readings of 's (is/has) and 'd
  (had/would), where "won't"-style rewrites would change a token. Without the tagger 's counts only
  after a pronoun ("John's" may be possessive). "Let's go." -> "Let's not go." (reason "auxiliary").
- Inversion (an auxiliary as first word, or in a sentence ending in "?"): "not" goes after a
  subject pronoun ("Is it raining?" -> "Is it not raining?"). With a noun-phrase subject the place is
  unclear -> reason "inverted".
- With the tagger the first verb-ish token decides, even inside a leading subordinate clause. Without
  it, the first be-form/modal decides; a have/do form first, or nothing found -> "needs_tagger".
- The perceptron tagger mis-tags many sentence-initial imperatives ("Close" -> RB). The first word is
  re-tagged, lowercased, after "Please"; it counts as an imperative if it then comes out VB/VBP, is
  a WordNet verb lemma and the next word is not a finite verb ("Work is hard." stays declarative).
- VBD/VBZ verbs WordNet does not know -> "unknown_verb" rather than a guessed base form.
- A sentence is tagged left to right only as far as its decision reads tags (the tagger's tag of
  word i depends on words up to i+2 only): the same results as tagging whole sentences, several times faster.
- The tagger mode's results depend on the NLTK data and version: nltk_resources() names them
  (package@digest, no paths); Snakemake reruns the perturbation when they change, and its report
  records them. Without the data it falls back to the rules, as if use_tagger were false.
NLTK's tagger and WordNet files (where they are, their identity) and the fast tagger: tagger.py.
Reasons: auxiliary, do_support, already_negated, no_verb, needs_tagger, empty, inverted, unknown_verb.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import importlib.metadata
import os
import re
from dataclasses import dataclass

from workflow_scripts.csc.tagger import (_SELF_CHECK, TAGGER_FILES, TAGGER_PACKAGE, VERB_SUBSTITUTIONS, VERIFIED_NLTK,
                                         WORDNET_FILES, WORDNET_PACKAGE, _crc_of, _fingerprint, _NeedTags,
                                         _nltk_version, _package_files, _Perceptron, _read_package, _sizes_crcs,
                                         _SpanTags, _TaggerFiles, _Tags)

BE = {"am", "is", "are", "was", "were"}
MODALS = {"can", "could", "will", "would", "shall", "should", "may", "might", "must"}
HAVE = {"have", "has", "had"}
DO = {"do", "does", "did"}
NEGATORS = {"not", "never", "no", "nobody", "nothing", "none", "nowhere", "neither", "nor", "cannot",
            # apostrophe-less n't forms that are not also ordinary words (unlike "cant", "wont")
            "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "hasnt", "havent", "hadnt",
            "couldnt", "wouldnt", "shouldnt", "aint"}
SUBJECT_PRONOUNS = {"i", "you", "he", "she", "it", "we", "they", "there"}
S_PRONOUNS = {"it", "he", "she", "that", "this", "there", "here", "what", "who", "where", "how"}
DETERMINERS = {"a", "an", "the", "this", "that", "these", "those", "my", "your", "his", "her", "its",
               "our", "their"}
NOT_IMPERATIVE = {"please", "welcome"}  # verb lemmas that open sentences as interjections
NP_TAGS = {"DT", "PDT", "PRP$", "CD", "JJ", "JJR", "JJS", "NN", "NNS", "NNP", "NNPS"}
FINITE = {"VBZ", "VBD", "VBP", "MD"}
ADVERBS = {"RB", "RBR", "RBS"}
DO_FORM = {"VBZ": "does", "VBD": "did", "VBP": "do", "VB": "do"}
EDGES = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)
CLITIC = re.compile(r"^(.*[a-z0-9])('s|'m|'re|'ll|'ve|'d)$")


@dataclass(slots=True)
class _Sent:
    """A sentence's whitespace tokens and its units (the words the tagger reads: a token, or a
    stem and its clitic), one list per attribute of a unit."""
    toks: list[str]
    cores: list[str]  # tokens with leading/trailing punctuation stripped
    texts: list[str]  # each unit as fed to the tagger (case kept, apostrophes normalised)
    ws: list[str]  # lowercased, for matching
    kinds: list[str]  # "word", "stem" (followed by a clitic in the same token), "clitic" or "poss"
    at: list[int]  # index of the unit's whitespace token
    question: bool


_NEGATED = None  # _token() of a token that is a negation


def _token(tok: str) -> tuple | None:
    """A whitespace token's core (punctuation stripped) and its units' texts, lowercased forms
    and kinds, or _NEGATED. Depends on the token alone, so _parse caches it."""
    pre, core, post = EDGES.match(tok).groups()
    if not core:
        return core, (), (), ()
    norm = core.replace("\u2019", "'").replace("\u2018", "'")
    low = norm.lower()
    if low in NEGATORS or low.endswith("n't"):
        return _NEGATED
    m = CLITIC.match(low)
    if m:
        cut = len(m.group(1))
        return core, (norm[:cut], norm[cut:]), (low[:cut], low[cut:]), ("stem", "clitic")
    if low.endswith("s") and post[:1] in ("'", "\u2019"):
        return core, (norm, "'"), (low, "'"), ("word", "poss")  # "analysts'": tag as PTB does
    return core, (norm,), (low,), ("word",)


_TOKENS: dict[str, tuple] = {}  # _token() of frequent tokens (the first ones seen, bounded)
_WORDS: dict[str, tuple] = {}  # of those, the one-unit tokens as (core, text, w, kind)
_TOKENS_MAX = 100_000


def _token_cached(tok: str):
    found = _token(tok)
    if len(_TOKENS) < _TOKENS_MAX:
        _TOKENS[tok] = found
        if found is not _NEGATED and len(found[1]) == 1:
            _WORDS[tok] = (found[0], found[1][0], found[2][0], found[3][0])
    return found


def _parse(sentence: str) -> _Sent | tuple:
    toks = sentence.split()
    if not toks:
        return None, "empty", None
    question = sentence.rstrip().rstrip("\"')]\u201d\u2019\u00bb").endswith("?")
    words = list(map(_WORDS.get, toks))
    if None not in words:  # every token known, one unit each: the common case, without a loop
        cores, texts, ws, kinds = map(list, zip(*words))
        return _Sent(toks, cores, texts, ws, kinds, list(range(len(toks))), question)
    cores: list[str] = []
    texts: list[str] = []
    ws: list[str] = []
    kinds: list[str] = []
    at: list[int] = []
    for i, tok in enumerate(toks):
        found = _TOKENS.get(tok, False)
        if found is False:
            found = _token_cached(tok)
        if found is _NEGATED:
            return None, "already_negated", None
        core, t, w, k = found
        cores.append(core)
        texts += t
        ws += w
        kinds += k
        at += [i] * len(t)
    if not texts:
        return None, "empty", None
    return _Sent(toks, cores, texts, ws, kinds, at, question)


def _after(s: _Sent, i: int) -> tuple[str, str, int]:
    """Insert "not" after token i; the token's trailing punctuation moves onto "not"."""
    pre, core, post = EDGES.match(s.toks[i]).groups()
    out = s.toks[:i] + [pre + core, "not" + post] + s.toks[i + 1:]
    return " ".join(out), "auxiliary", i + 1


def _do_support(s: _Sent, i: int, aux: str, base: str) -> tuple[str, str, int]:
    """Replace token i by aux + "not" + base, keeping its punctuation and sentence-initial capital."""
    pre, core, post = EDGES.match(s.toks[i]).groups()
    if i == s.at[0] and core[:1].isupper():
        aux = aux.capitalize()
        base = base.lower() if core[1:].islower() or len(core) == 1 else base
    out = s.toks[:i] + [pre + aux, "not", base + post] + s.toks[i + 1:]
    return " ".join(out), "do_support", i


# --- what the results depend on, planned without loading anything (Snakemake params) -------------
RULES_ONLY = {"mode": "rules"}  # no tagger: reads no NLTK data, depends on no NLTK version


@functools.lru_cache(maxsize=8)
def _planned(use_tagger: bool, nltk_data: str | None, home: str | None) -> tuple[dict, tuple[str, ...]]:
    if not use_tagger:
        return RULES_ONLY, ()
    try:
        version = importlib.metadata.version("nltk")
    except importlib.metadata.PackageNotFoundError:
        return RULES_ONLY, ("nltk (Python package)",)
    tagger = _package_files("taggers", TAGGER_PACKAGE, TAGGER_FILES)
    wordnet = _package_files("corpora", WORDNET_PACKAGE, WORDNET_FILES)
    missing = tuple(name for name, found in ((TAGGER_PACKAGE, tagger), (WORDNET_PACKAGE, wordnet)) if not found)
    return (RULES_ONLY, missing) if missing else (_fingerprint(version, tagger, wordnet), ())


def nltk_resources(use_tagger: bool = True) -> tuple[dict, list[str]]:
    """(fingerprint, missing NLTK packages) of the grammatical negation on this machine, without
    loading anything: {"mode": "rules"}, or {"mode": "tagger", "nltk": version, "tagger": ...,
    "wordnet": ...} with each package's name@digest. GrammaticalNegator(use_tagger).fingerprint
    is the same, computed from what it loaded."""
    fingerprint, missing = _planned(bool(use_tagger), os.environ.get("NLTK_DATA"), os.environ.get("HOME"))
    return dict(fingerprint), list(missing)


def grammatical_negation_plan(perturb_settings: dict, language: str) -> dict | None:
    """What a corpus's grammatical negation depends on, for Snakemake params: None where the
    corpus gets none, else nltk_resources()'s fingerprint. Same defaults as perturb.py."""
    settings = perturb_settings.get("grammatical_negation", {})
    if not settings.get("enabled", True) or language not in settings.get("languages", ["en"]):
        return None
    return nltk_resources(settings.get("use_tagger", True))[0]

# --- negating ------------------------------------------------------------------------------
PREFIX_TAGS = 8  # words per sentence negate_many tags in a batch (decisions read 6 on average)
PREFIX_BATCH = 10_000  # sentences per batch


class GrammaticalNegator:
    def __init__(self, use_tagger: bool = True, lazy_tags: bool = True):
        """use_tagger: load NLTK's tagger and WordNet verbs (else rules only; see the module
        docstring). lazy_tags=False tags whole sentences with nltk's own tag() (the reference
        the tests compare the lazy tagging against)."""
        self.has_tagger = False
        self.tagger_error: str | None = None  # why the tagger could not be loaded, for logs
        self.missing: list[str] = []  # NLTK packages use_tagger asked for and not found
        self.fingerprint = dict(RULES_ONLY)  # what the results depend on (see nltk_resources)
        self._tagger = self._perceptron = None
        self._verb_lemmas: frozenset[str] = frozenset()
        self._verb_exceptions: dict[str, list[str]] = {}
        self._verb_rules: list[tuple[str, str]] = []
        if use_tagger:
            if not (lazy_tags and _nltk_version() in VERIFIED_NLTK and self._load_files()):
                self._load(lazy_tags)

    def _load_files(self) -> bool:
        """The fast path from the NLTK data files alone, without importing nltk (see
        VERIFIED_NLTK); False where they are missing or the tagger needs nltk's own code."""
        tagger_files = _read_package("taggers", TAGGER_PACKAGE, TAGGER_FILES)
        wordnet_files = _read_package("corpora", WORDNET_PACKAGE, WORDNET_FILES)
        if tagger_files is None or wordnet_files is None:
            return False  # nltk's loading reports what is missing
        tagger = _TaggerFiles(tagger_files)
        perceptron = _Perceptron(tagger)
        if not perceptron.exact:
            return False
        self._set_wordnet(wordnet_files, list(VERB_SUBSTITUTIONS))
        self._tagger, self._perceptron, self.has_tagger = tagger, perceptron, True
        self.fingerprint = _fingerprint(_nltk_version(), _sizes_crcs(tagger_files), _sizes_crcs(wordnet_files))
        return True

    def _load(self, lazy_tags: bool) -> None:
        try:
            import nltk
        except ImportError as e:
            self.missing, self.tagger_error = ["nltk (Python package)"], f"ImportError: {e}"
            return
        # nltk reads NLTK_DATA only when imported; honour it if it was set later
        for p in reversed(os.environ.get("NLTK_DATA", "").split(os.pathsep)):
            if p and p not in nltk.data.path:
                nltk.data.path.insert(0, p)
        errors = {}
        tagger = wordnet = None
        try:
            from nltk.tag.perceptron import PerceptronTagger
            loc = nltk.data.find(f"taggers/{TAGGER_PACKAGE}/")
            tagger = (PerceptronTagger(loc=loc), {n: _crc_of(loc.join(n)) for n in TAGGER_FILES})
        except (ImportError, LookupError, OSError, ValueError) as e:
            errors[TAGGER_PACKAGE] = e
        try:
            wordnet = self._load_wordnet(nltk)
        except (ImportError, LookupError, OSError, ValueError) as e:
            errors[WORDNET_PACKAGE] = e
        if errors:
            self.missing = list(errors)
            e = next(iter(errors.values()))
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip(" *")]
            self.tagger_error = f"{type(e).__name__}: {lines[0] if lines else ''}"
            self._verb_lemmas, self._verb_exceptions = frozenset(), {}
            return
        self._tagger = tagger[0]
        self.fingerprint = _fingerprint(nltk.__version__, tagger[1], wordnet)
        self.has_tagger = True
        if lazy_tags:
            perceptron = _Perceptron(self._tagger)
            words = [s.split() for s in _SELF_CHECK]
            if perceptron.exact and all(
                    [_Tags(perceptron, None, w)[i] for i in range(len(w))] == [t for _, t in self._tagger.tag(w)]
                    for w in words):
                self._perceptron = perceptron
            else:
                self.tagger_error = "nltk's tagger differs from the fast path: tagging whole sentences with nltk"

    def _load_wordnet(self, nltk) -> dict[str, tuple[int, int]]:
        """The verb lemmas and irregular verb forms of WordNet, found where nltk.corpus.wordnet
        finds them (a folder, else the zip). Read from the two files themselves (WordNet's WNDB
        format): nltk's WordNet reader takes seconds and 180 MB per process loading all of it."""
        from nltk.corpus.reader.wordnet import WordNetCorpusReader
        try:
            root = nltk.data.find(f"corpora/{WORDNET_PACKAGE}")
        except LookupError:
            root = nltk.data.find(f"corpora/{WORDNET_PACKAGE}.zip/{WORDNET_PACKAGE}/")
        texts = {}
        for name in WORDNET_FILES:
            with root.join(name).open() as f:
                texts[name] = f.read()
        self._set_wordnet(texts, list(WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS["v"]))
        return _sizes_crcs(texts)

    def _set_wordnet(self, texts: dict[str, bytes], verb_rules: list[tuple[str, str]]) -> None:
        """Verb lemmas from index.verb and irregular forms from verb.exc (WordNet's WNDB format)."""
        lemmas = set()
        for line in texts["index.verb"].decode("utf-8").splitlines():
            if line and not line.startswith(" "):  # lines opening with spaces are the licence
                fields = line.split()
                if len(fields) > 1 and fields[1] == "v":
                    lemmas.add(fields[0])
        exceptions = {}
        for line in texts["verb.exc"].decode("utf-8").splitlines():
            terms = line.split()
            if terms:
                exceptions[terms[0]] = terms[1:]
        self._verb_lemmas, self._verb_exceptions = frozenset(lemmas), exceptions
        self._verb_rules = verb_rules

    def verb_lemmas(self, form: str) -> list[str]:
        """WordNet's base forms of a verb form, in WordNet's morphy order: the form itself if it
        is a verb lemma, then its listed irregular bases or else its regular suffix rewrites
        (what nltk's private wordnet._morphy(form, "v") returns)."""
        forms = self._verb_exceptions.get(form)
        if forms is None:
            forms = [form[:-len(old)] + new for old, new in self._verb_rules if form.endswith(old)]
        out: list[str] = []
        for f in [form, *forms]:
            if f in self._verb_lemmas and f not in out:
                out.append(f)
        return out

    def negate(self, sentence: str) -> tuple[str | None, str, int | None]:
        """Return (negated_text, reason, position); position indexes the first inserted word
        in the output's whitespace tokens. See the module docstring for the reasons."""
        s = _parse(sentence)
        if isinstance(s, tuple):
            return s
        if not self.has_tagger:
            return self._rules(s)
        # a sentence is tagged only as far as its decision reads tags
        return self._tagged(s, _Tags(self._perceptron, self._tagger, s.texts, lambda tag: self._first_tag(s, tag)))

    def negate_many(self, sentences: list[str]) -> list[tuple[str | None, str, int | None]]:
        """negate() of each sentence; with the fast tagger, the sentences are tagged together in
        spans (_Perceptron.tag_spans): the same tags, a fraction of the cost of one at a time."""
        if self._perceptron is None or not self._perceptron.batchable:
            return [self.negate(s) for s in sentences]
        with _no_gc():
            out = []
            for lo in range(0, len(sentences), PREFIX_BATCH):
                out += self._negate_batch(sentences[lo:lo + PREFIX_BATCH])
            return out

    def _negate_batch(self, sentences: list[str]) -> list[tuple[str | None, str, int | None]]:
        """Rounds: tag the next span of every sentence not yet decided (PREFIX_TAGS words, then
        twice as many each round), then decide each one again from its tags so far; a decision
        that reads a tag not yet computed raises _NeedTags and waits for the next round.
        Deciding is a function of the tags read, so the results are negate()'s."""
        out: list = [_parse(s) for s in sentences]
        todo = [i for i, s in enumerate(out) if not isinstance(s, tuple)]
        words = {i: out[i].texts for i in todo}
        tags: dict[int, list[str]] = {i: [] for i in todo}
        first: dict[int, str] = {}
        span = PREFIX_TAGS
        while todo:
            self._perceptron.tag_spans([words[i] for i in todo], [tags[i] for i in todo], span)
            if not first:  # every sentence has its first tag now: the imperative re-tagging, together
                retag = {i: w for i in todo if (w := self._retag_words(out[i], tags[i][0])) is not None}
                retagged = {i: [] for i in retag}
                self._perceptron.tag_spans(list(retag.values()), list(retagged.values()), 3)
                first = {i: self._first_from_retag(tags[i][0], retag[i], retagged[i]) if i in retag
                         else tags[i][0] for i in todo}
            waiting = []
            for i in todo:
                try:
                    out[i] = self._tagged(out[i], _SpanTags(tags[i], len(words[i]), first[i]))
                except _NeedTags:
                    waiting.append(i)
            todo, span = waiting, span * 2
        return out

    def _retag_words(self, s: _Sent, tag: str) -> list[str] | None:
        """The perceptron tagger mis-tags many sentence-initial imperatives ("Close" -> RB): a
        first word that is a WordNet verb lemma is re-tagged, lowercased, after "Please" (these
        words; None where the tagger's tag stands)."""
        w = s.ws[0]
        if (tag == "VB" or s.kinds[0] != "word" or not w.isalpha() or w in NOT_IMPERATIVE
                or w in BE or w in MODALS or w in HAVE or w in DO or w not in self._verb_lemmas):
            return None
        return ["Please", s.texts[0].lower(), *s.texts[1:]]

    @staticmethod
    def _first_from_retag(tag: str, words: list[str], retagged) -> str:
        """VB/VBP after "Please", not followed by a finite verb, makes the first word an imperative (VB)."""
        if retagged[1] not in ("VB", "VBP"):
            return tag
        if len(words) > 2 and (words[2].lower() in BE or retagged[2] in FINITE):
            return tag
        return "VB"

    def _first_tag(self, s: _Sent, tag: str) -> str:
        """The tag of the first word, after the imperative re-tagging (_retag_words)."""
        words = self._retag_words(s, tag)
        if words is None:
            return tag
        return self._first_from_retag(tag, words, _Tags(self._perceptron, self._tagger, words))

    def _inverted(self, s: _Sent, k: int, tags):
        """Place "not" for the auxiliary at unit k: after it, or after an inverted subject pronoun."""
        has_next = k + 1 < len(s.ws)
        if k > 0 and not s.question:
            return _after(s, s.at[k])
        if has_next and s.kinds[k + 1] == "word" and s.ws[k + 1] in SUBJECT_PRONOUNS:
            return _after(s, s.at[k + 1])
        if tags is None:  # no tags: cannot tell "Who is coming?" from "Why is the sky blue?"
            return (None, "inverted", None) if k == 0 else (None, "needs_tagger", None)
        if not has_next or tags[k + 1] in NP_TAGS:
            return None, "inverted", None
        return _after(s, s.at[k])  # e.g. "Who is coming?": the wh-word is the subject

    def _rules(self, s: _Sent):
        """Tagger-free mode: the first be-form or modal (or contracted auxiliary) decides."""
        ws, kinds, n = s.ws, s.kinds, len(s.ws)
        for k, (w, kind) in enumerate(zip(ws, kinds)):
            if kind == "stem" and w == "let":
                return _after(s, s.at[k])
            if kind == "clitic":
                if w != "'s" or ws[k - 1] in S_PRONOUNS:  # else maybe possessive
                    return _after(s, s.at[k])
                continue
            if kind != "word":  # a stem or a possessive '
                continue
            if w in MODALS:
                # a capitalised modal after the first word is a name ("In May ..."); after a
                # determiner it is a noun ("the can", "his will")
                if (k > 0 and (s.cores[s.at[k]][:1].isupper() or ws[k - 1] in DETERMINERS)):
                    continue
                if k == 0 and not (k + 1 < n and ws[k + 1] in SUBJECT_PRONOUNS):
                    continue  # "May is warm.", "Will Smith ...": may be a name
                return self._inverted(s, k, None)
            if w in BE:
                return self._inverted(s, k, None)
            if w in HAVE or w in DO:
                return None, "needs_tagger", None  # auxiliary or main verb: needs tags
        return None, "needs_tagger", None

    def _tagged(self, s: _Sent, tags: _Tags):
        """Tagger mode: the first verb-ish token decides. Tags are read only where a decision
        needs them (each read tags the sentence up to there)."""
        ws, kinds, at, n = s.ws, s.kinds, s.at, len(s.ws)
        for k, (w, kind) in enumerate(zip(ws, kinds)):
            if kind == "stem" and w == "let":
                return _after(s, at[k])
            if kind == "clitic":
                t = tags[k]
                if t in FINITE or t == "VB":  # 's tagged POS is a possessive
                    return _after(s, at[k])
                continue
            if kind != "word":  # a stem or a possessive '
                continue
            nxt_pronoun = k + 1 < n and kinds[k + 1] == "word" and ws[k + 1] in SUBJECT_PRONOUNS
            noun_modal = k > 0 and ws[k - 1] in DETERMINERS  # "The can is empty."
            if w in BE or (k == 0 and w in MODALS and nxt_pronoun) or (not noun_modal and tags[k] == "MD"):
                return self._inverted(s, k, tags)
            if w in HAVE or w in DO:
                # auxiliary if a participle (have) / base verb (do) follows, possibly after an
                # inverted subject pronoun and adverbs: "Have you ever seen it?", "I do like it."
                inv = (k == 0 or s.question) and nxt_pronoun
                j = k + 2 if inv else k + 1
                while j < n and tags[j] in ADVERBS:
                    j += 1
                if inv and s.question:  # "Do you like it?" (the tagger often misses that VB)
                    return _after(s, at[k + 1])
                # the tagger reads some participles as VBD ("has said") and "like" after "do"
                # as a preposition ("I do like it.")
                verb_follows = j < n and (tags[j] in ("VBN", "VBD") if w in HAVE
                                          else (tags[j] == "VB" or ws[j] == "like"))
                if verb_follows:
                    return _after(s, at[k + 1] if inv else at[k])
                if s.question and k + 1 < n and tags[k + 1] in NP_TAGS:
                    return None, "inverted", None  # "Does the cat sleep?"
            t = tags[k]
            if t == "VB":
                if (k > 0 and tags[k - 1] == "TO") or (k == 0 and w in NOT_IMPERATIVE):
                    continue  # infinitive ("To err is human."), or "Welcome to ...", "Please help."
                return _do_support(s, at[k], "do", s.cores[at[k]])  # imperative or mis-tagged VBP
            if t in ("VBZ", "VBD", "VBP"):
                base = self._base(w, t) if t != "VBP" else s.cores[at[k]]
                if base is None:
                    return None, "unknown_verb", None
                return _do_support(s, at[k], DO_FORM[t], base)
        return None, "no_verb", None

    def _base(self, w: str, tag: str) -> str | None:
        # the tag says the form is inflected, so prefer a lemma other than the word itself
        # ("saw" -> "see", "found" -> "find", "lay" -> "lie"); WordNetLemmatizer.lemmatize
        # would return the shortest candidate, often the word itself
        cands = self.verb_lemmas(w)
        other = [c for c in cands if c != w]
        return min(other or cands, key=len) if cands else None


@contextlib.contextmanager
def _no_gc():
    """The cyclic garbage collector off while a batch is negated: the batch makes millions of
    short-lived objects without cycles (refcounting frees them), and each collection they set off
    would traverse the tagger's 75,000 weight dictionaries (half of negate_many's time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
