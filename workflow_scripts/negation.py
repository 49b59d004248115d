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
Reasons: auxiliary, do_support, already_negated, no_verb, needs_tagger, empty, inverted, unknown_verb.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

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


@dataclass
class _Unit:
    text: str  # as fed to the tagger (case kept, apostrophes normalised)
    w: str  # lowercased, for matching
    tok: int  # index of its whitespace token
    kind: str  # "word", "stem" (followed by a clitic in the same token) or "clitic"


@dataclass
class _Sent:
    toks: list[str]
    cores: list[str]  # tokens with leading/trailing punctuation stripped
    units: list[_Unit]
    question: bool


def _parse(sentence: str) -> _Sent | tuple:
    toks = sentence.split()
    cores = [EDGES.match(t).group(2) for t in toks]
    units: list[_Unit] = []
    for i, core in enumerate(cores):
        if not core:
            continue
        norm = core.replace("\u2019", "'").replace("\u2018", "'")
        low = norm.lower()
        if low in NEGATORS or low.endswith("n't"):
            return None, "already_negated", None
        m = CLITIC.match(low)
        if m:
            cut = len(m.group(1))
            units += [_Unit(norm[:cut], low[:cut], i, "stem"), _Unit(norm[cut:], low[cut:], i, "clitic")]
        else:
            units.append(_Unit(norm, low, i, "word"))
            if low.endswith("s") and EDGES.match(toks[i]).group(3)[:1] in ("'", "\u2019"):
                units.append(_Unit("'", "'", i, "poss"))  # "analysts'": tag as PTB does
    if not units:
        return None, "empty", None
    question = sentence.rstrip().rstrip("\"')]\u201d\u2019\u00bb").endswith("?")
    return _Sent(toks, cores, units, question)


def _after(s: _Sent, i: int) -> tuple[str, str, int]:
    """Insert "not" after token i; the token's trailing punctuation moves onto "not"."""
    pre, core, post = EDGES.match(s.toks[i]).groups()
    out = s.toks[:i] + [pre + core, "not" + post] + s.toks[i + 1:]
    return " ".join(out), "auxiliary", i + 1


def _do_support(s: _Sent, i: int, aux: str, base: str) -> tuple[str, str, int]:
    """Replace token i by aux + "not" + base, keeping its punctuation and sentence-initial capital."""
    pre, core, post = EDGES.match(s.toks[i]).groups()
    if i == s.units[0].tok and core[:1].isupper():
        aux = aux.capitalize()
        base = base.lower() if core[1:].islower() or len(core) == 1 else base
    out = s.toks[:i] + [pre + aux, "not", base + post] + s.toks[i + 1:]
    return " ".join(out), "do_support", i


class GrammaticalNegator:
    def __init__(self, use_tagger: bool = True):
        self.has_tagger = False
        self.tagger_error: str | None = None  # why the tagger could not be loaded, for logs
        self._tagger = self._lemmatizer = None
        if use_tagger:
            self._load()

    def _load(self) -> None:
        try:
            import nltk
            # nltk reads NLTK_DATA only when imported; honour it if it was set later
            for p in reversed(os.environ.get("NLTK_DATA", "").split(os.pathsep)):
                if p and p not in nltk.data.path:
                    nltk.data.path.insert(0, p)
            from nltk.stem import WordNetLemmatizer
            from nltk.tag.perceptron import PerceptronTagger

            tagger = PerceptronTagger()  # loads averaged_perceptron_tagger_eng; LookupError if absent
            lemmatizer = WordNetLemmatizer()
            lemmatizer._morphy("walks", "v")  # WordNet loads lazily: force it now, not mid-corpus
        except (ImportError, LookupError, OSError, ValueError) as e:
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip(" *")]
            self.tagger_error = f"{type(e).__name__}: {lines[0] if lines else ''}"
            return
        self._tagger, self._lemmatizer, self.has_tagger = tagger, lemmatizer, True

    def negate(self, sentence: str) -> tuple[str | None, str, int | None]:
        """Return (negated_text, reason, position); position indexes the first inserted word
        in the output's whitespace tokens. See the module docstring for the reasons."""
        return self.negate_many([sentence])[0]

    def negate_many(self, sentences: list[str]) -> list[tuple[str | None, str, int | None]]:
        parsed = [_parse(s) for s in sentences]
        results: list = [p if isinstance(p, tuple) else None for p in parsed]
        todo = [i for i, p in enumerate(parsed) if not isinstance(p, tuple)]
        if not self.has_tagger:
            for i in todo:
                results[i] = self._rules(parsed[i])
            return results
        tagged = self._tagger.tag_sents([[u.text for u in parsed[i].units] for i in todo])
        tags = {i: [t for _, t in tg] for i, tg in zip(todo, tagged)}
        # second, batched pass: re-tag candidate imperatives after "Please" (see module docstring)
        cand = [i for i in todo if self._imperative_candidate(parsed[i], tags[i])]
        retagged = self._tagger.tag_sents([["Please", parsed[i].units[0].text.lower()]
                                           + [u.text for u in parsed[i].units[1:]] for i in cand])
        for i, tg in zip(cand, retagged):
            nxt = tg[2] if len(tg) > 2 else None
            if tg[1][1] in ("VB", "VBP") and not (nxt and (nxt[1] in FINITE or nxt[0].lower() in BE)):
                tags[i][0] = "VB"
        for i in todo:
            results[i] = self._tagged(parsed[i], tags[i])
        return results

    def _imperative_candidate(self, s: _Sent, tags: list[str]) -> bool:
        u = s.units[0]
        return (tags[0] != "VB" and u.kind == "word" and u.w.isalpha() and u.w not in NOT_IMPERATIVE
                and u.w not in BE | MODALS | HAVE | DO and u.w in self._lemmatizer._morphy(u.w, "v"))

    def _inverted(self, s: _Sent, k: int, tags: list[str] | None):
        """Place "not" for the auxiliary at unit k: after it, or after an inverted subject pronoun."""
        u, nxt = s.units[k], s.units[k + 1] if k + 1 < len(s.units) else None
        if k > 0 and not s.question:
            return _after(s, u.tok)
        if nxt and nxt.kind == "word" and nxt.w in SUBJECT_PRONOUNS:
            return _after(s, nxt.tok)
        if tags is None:  # no tags: cannot tell "Who is coming?" from "Why is the sky blue?"
            return (None, "inverted", None) if k == 0 else (None, "needs_tagger", None)
        if nxt is None or tags[k + 1] in NP_TAGS:
            return None, "inverted", None
        return _after(s, u.tok)  # e.g. "Who is coming?": the wh-word is the subject

    def _rules(self, s: _Sent):
        """Tagger-free mode: the first be-form or modal (or contracted auxiliary) decides."""
        for k, u in enumerate(s.units):
            if u.kind == "stem" and u.w == "let":
                return _after(s, u.tok)
            if u.kind == "clitic":
                if u.w != "'s" or s.units[k - 1].w in S_PRONOUNS:  # else maybe possessive
                    return _after(s, u.tok)
                continue
            if u.kind in ("stem", "poss"):
                continue
            if u.w in MODALS:
                # a capitalised modal after the first word is a name ("In May ..."); after a
                # determiner it is a noun ("the can", "his will")
                if (k > 0 and (s.cores[u.tok][:1].isupper() or s.units[k - 1].w in DETERMINERS)):
                    continue
                nxt = s.units[k + 1] if k + 1 < len(s.units) else None
                if k == 0 and not (nxt and nxt.w in SUBJECT_PRONOUNS):
                    continue  # "May is warm.", "Will Smith ...": may be a name
                return self._inverted(s, k, None)
            if u.w in BE:
                return self._inverted(s, k, None)
            if u.w in HAVE or u.w in DO:
                return None, "needs_tagger", None  # auxiliary or main verb: needs tags
        return None, "needs_tagger", None

    def _tagged(self, s: _Sent, tags: list[str]):
        """Tagger mode: the first verb-ish token decides."""
        n = len(s.units)
        for k, (u, t) in enumerate(zip(s.units, tags)):
            if u.kind == "stem" and u.w == "let":
                return _after(s, u.tok)
            if u.kind == "clitic":
                if t in FINITE or t == "VB":  # 's tagged POS is a possessive
                    return _after(s, u.tok)
                continue
            if u.kind in ("stem", "poss"):
                continue
            nxt_pronoun = k + 1 < n and s.units[k + 1].kind == "word" and s.units[k + 1].w in SUBJECT_PRONOUNS
            noun_modal = k > 0 and s.units[k - 1].w in DETERMINERS  # "The can is empty."
            if u.w in BE or (t == "MD" and not noun_modal) or (k == 0 and u.w in MODALS and nxt_pronoun):
                return self._inverted(s, k, tags)
            if u.w in HAVE or u.w in DO:
                # auxiliary if a participle (have) / base verb (do) follows, possibly after an
                # inverted subject pronoun and adverbs: "Have you ever seen it?", "I do like it."
                inv = (k == 0 or s.question) and nxt_pronoun
                j = k + 2 if inv else k + 1
                while j < n and tags[j] in ADVERBS:
                    j += 1
                if inv and s.question:  # "Do you like it?" (the tagger often misses that VB)
                    return _after(s, s.units[k + 1].tok)
                # the tagger reads some participles as VBD ("has said") and "like" after "do"
                # as a preposition ("I do like it.")
                verb_follows = j < n and (tags[j] in ("VBN", "VBD") if u.w in HAVE
                                          else (tags[j] == "VB" or s.units[j].w == "like"))
                if verb_follows:
                    return _after(s, s.units[k + 1].tok if inv else u.tok)
                if s.question and k + 1 < n and tags[k + 1] in NP_TAGS:
                    return None, "inverted", None  # "Does the cat sleep?"
            if t == "VB":
                if (k > 0 and tags[k - 1] == "TO") or (k == 0 and u.w in NOT_IMPERATIVE):
                    continue  # infinitive ("To err is human."), or "Welcome to ...", "Please help."
                return _do_support(s, u.tok, "do", s.cores[u.tok])  # imperative or mis-tagged VBP
            if t in ("VBZ", "VBD", "VBP"):
                base = self._base(u.w, t) if t != "VBP" else s.cores[u.tok]
                if base is None:
                    return None, "unknown_verb", None
                return _do_support(s, u.tok, DO_FORM[t], base)
        return None, "no_verb", None

    def _base(self, w: str, tag: str) -> str | None:
        # the tag says the form is inflected, so prefer a lemma other than the word itself
        # ("saw" -> "see", "found" -> "find", "lay" -> "lie"); WordNetLemmatizer.lemmatize
        # would return the shortest candidate, often the word itself
        cands = self._lemmatizer._morphy(w, "v")
        other = [c for c in cands if c != w]
        return min(other or cands, key=len) if cands else None
