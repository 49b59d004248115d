"""Tests for workflow_scripts.triplets.lexical, .structural and .parsing (the sentence transformations
of Zhu, Li & de Melo).

Hand-written cases give each transformation's exact output or rejection reason. The property test
runs every transformation over 300 real sentences (200 SICK sentence_A, 100 MSRP) and checks that
each output word is an input word or one the transformation is meant to introduce: the reference
code's unanchored regexes produced "motorcyclis nott". Everything here needs the NLTK tagger and
WordNet (NLTK_DATA, or ../shared/data/nltk_data through conftest) and lemminflect; the property test
also needs ../shared/data. Tests skip when those are absent; nothing is downloaded.
"""
from __future__ import annotations

import csv
import random
import re

import pytest

pytest.importorskip("lemminflect")
nltk = pytest.importorskip("nltk")
try:
    nltk.pos_tag(["test"])
    from nltk.corpus import wordnet
    wordnet.synsets("dog")
except LookupError:
    pytest.skip("NLTK tagger/WordNet data not found (set NLTK_DATA or provide ../shared/data/nltk_data)",
                allow_module_level=True)

from workflow_scripts.triplets import lexical, parsing, structural  # noqa: E402

# every transformation by name, and the rejection reasons it may give
TRANSFORMATIONS = {name: getattr(module, name) for module in (lexical, structural) for name in module.REASONS}
REASONS = {**lexical.REASONS, **structural.REASONS}


class Reject:
    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"Reject({self.reason})"


CASES = {
    "not_negation": [
        ("The young boy is climbing the wall made of rock.", "The young boy isn't climbing the wall made of rock."),
        ("Two dogs are playing in the snow", "Two dogs aren't playing in the snow"),
        ("The man was reading a book.", "The man wasn't reading a book."),
        ("The children were laughing.", "The children weren't laughing."),
        ("She likes the red car.", "She doesn't like the red car."),
        ("They went to the market.", "They didn't go to the market."),
        ("The boys play football every day.", "The boys don't play football every day."),
        ("He has finished his homework.", "He hasn't finished his homework."),
        ("He has a new bicycle.", "He doesn't have a new bicycle."),  # main-verb have: do-support
        ("They had to leave.", "They didn't have to leave."),
        ("He did his homework.", "He didn't do his homework."),
        ("We will win the game.", "We won't win the game."),
        ("You can swim.", "You can't swim."),
        ("I am hungry.", "I am not hungry."),  # no contraction of am
        ("It's raining.", "It's not raining."),  # clitic: "not" after the token
        ("Is the man playing a guitar?", "Isn't the man playing a guitar?"),
        ("Can you help me?", "Can't you help me?"),
        ("Close the door.", "Don't close the door."),  # imperative (the tagger says Close/RB)
        ("Please close the door.", "Please don't close the door."),
        ("The motorcyclist is riding a bike.", "The motorcyclist isn't riding a bike."),
        # the main clause's verb, not one in the subject's relative clause or a participle
        ("The woman who sings loves the man.", "The woman who sings doesn't love the man."),
        ("Pennsylvania, which has the most aggressive program, is treating 548 inmates.",
         "Pennsylvania, which has the most aggressive program, isn't treating 548 inmates."),
        ("The signatures of 897,158 registered voters must be collected.",
         "The signatures of 897,158 registered voters mustn't be collected."),
        ("The Episcopal Church ''is alienating itself,'' said the provost.",
         "The Episcopal Church ''isn't alienating itself,'' said the provost."),
        # removing a negation
        ("The motorcyclist isn't riding a bike.", "The motorcyclist is riding a bike."),
        ("He does not like the cold weather.", "He likes the cold weather."),
        ("He does not really like the cold weather.", "He really likes the cold weather."),
        ("They didn't go home.", "They went home."),
        ("I can't swim.", "I can swim."),
        ("She won't come.", "She will come."),
        ("He cannot swim.", "He can swim."),
        ("The man is not playing the piano", "The man is playing the piano"),
        ("Don't close the door.", "Close the door."),
        ("Doesn't he like it?", "Does he like it?"),
        ('"Don\'t go," she said.', '"Go," she said.'),
        ("He does n't like it .", "He likes it ."),  # Penn Treebank tokens
        ("He doesn\u2019t like it.", "He likes it."),  # curly apostrophe
        # rejected
        ("There is no man dancing", Reject("other_negation")),
        ("Nobody is playing the guitar", Reject("other_negation")),
        ("He never sleeps.", Reject("other_negation")),
        ("The man is playing, not working", Reject("other_negation")),
        ("A man in a blue shirt", Reject("no_verb")),
        ("May I go?", Reject("inverted")),
        ("He ain't coming.", Reject("ambiguous_contraction")),
        ("The cat blorfed the mouse.", Reject("unknown_verb")),
        ("", Reject("empty")),
    ],
    "quantifier_negation": [
        ("A girl is cutting butter into two pieces.", "There is no girl cutting butter into two pieces."),
        ("A man is playing a guitar", "There is no man playing a guitar"),
        ("An old woman is sitting on a bench", "There is no old woman sitting on a bench"),
        ("A potato is being sliced by a woman", "There is no potato being sliced by a woman"),
        ("A cat is in the kitchen.", "There is no cat in the kitchen."),
        ("A man wearing a hat is dancing", "There is no man wearing a hat dancing"),
        ("A group of kids is playing in a yard", "There is no group of kids playing in a yard"),
        ("A man was riding a horse.", "There was no man riding a horse."),
        ("A small white dog is running through the grass", "There is no small white dog running through the grass"),
        ("A woman is slicing an onion and a man is watching",
         "There is no woman slicing an onion and a man is watching"),
        ("A man is quickly running", "There is no man quickly running"),
        ("a boy is jumping", "there is no boy jumping"),
        ("A white and brown dog is chasing a ball", "There is no white and brown dog chasing a ball"),
        # rejected
        ("A dog is running on concrete and is holding a blue ball", Reject("coordinated_predicate")),
        ("The man is playing a guitar", Reject("no_indefinite_subject")),
        ("A man is tall.", Reject("predicate_not_verbal")),
        ("A man is a doctor", Reject("predicate_not_verbal")),
        ("A group of kids are playing", Reject("plural_subject")),
        ("A few men are playing", Reject("plural_subject")),
        ("A man and a woman are dancing", Reject("plural_subject")),
        ("A man is not playing a guitar", Reject("already_negated")),
        ("A man, who is tall, is dancing", Reject("complex_subject")),
        ("A man plays a guitar", Reject("no_copula")),
        ("A man in a hat", Reject("no_verb")),
        ("", Reject("empty")),
    ],
    "synonym_substitution": [
        ("The man is talking on the telephone", "The man is speaking on the telephone"),
        ("A dog is jumping over the fence", "A dog is leaping over the fence"),
        ("The boy jumped into the pool.", "The boy leapt into the pool."),
        ("She jumps every morning.", "She leaps every morning."),
        ("The girls have jumped over the rope.", "The girls have leapt over the rope."),
        ("They talk loudly.", "They speak loudly."),
        ("The woman is putting pasta into a dish", Reject("frame_verb")),  # put -> place: "put" is a light verb
        ("The doctor is helping the patient", "The doctor is aiding the patient"),
        ("Joan died on Sunday.", "Joan perished on Sunday."),
        ("Close the door.", "Shut the door."),
        ("The company will acquire the firm.", Reject("no_synonym")),  # its one synonym is "get", a light verb
        ("He bought a car.", "He purchased a car."),
        # rejected
        ("The man is happy", Reject("copula")),
        ("He can.", Reject("no_main_verb")),
        ("A man is picking up a box", Reject("phrasal_verb")),
        ("The man is walking", Reject("no_synonym")),  # walk's main sense has no other lemma
        ("Octel said the purchase was expected.", Reject("frame_verb")),  # not "Octel told the purchase ..."
        ("She asked him to leave.", Reject("frame_verb")),  # not "inquired him to leave"
        ("It made the plan worse.", Reject("frame_verb")),  # not "did the plan worse"
        ("A man in a red hat", Reject("no_verb")),
        ("He blorfs the cat", Reject("unknown_verb")),
        ("Does he like it?", Reject("question")),
        ("", Reject("empty")),
    ],
    "embedded_clause": [
        ("Octel said the purchase was expected.", "The purchase was expected."),
        ("He said that the deal was done.", "The deal was done."),
        ("She thinks he is right.", "He is right."),
        ("They knew that the bridge had collapsed.", "The bridge had collapsed."),
        ("The mayor says the city will grow.", "The city will grow."),
        ("Mary told John that the train was late.", "The train was late."),
        ("He told reporters the plan would work.", "The plan would work."),
        ("The company said on Monday that profits rose.", "Profits rose."),
        ("The administration said Monday it will propose a rule change.", "It will propose a rule change."),
        ("The company, which makes cars, said that sales fell.", "Sales fell."),
        ("He has said that prices will fall.", "Prices will fall."),
        ("Officials knew there was a problem.", "There was a problem."),
        ("He thought the house was empty", "The house was empty"),
        ('"We will win," he said.', "We will win."),
        ('"Is it safe?" she said.', "Is it safe?"),
        ('The bank said: "We believe the prospects remain attractive."',
         "We believe the prospects remain attractive."),
        ("The purchase was expected, Octel said.", "The purchase was expected."),
        # rejected
        ("He said nothing.", Reject("no_clause")),
        ("He knew the man.", Reject("no_clause")),
        ("He knew the man who was there.", Reject("no_clause")),
        ("She said to wait.", Reject("no_clause")),
        ("He said so.", Reject("no_clause")),
        ("He told the truth.", Reject("no_clause")),
        ("The man is playing a guitar", Reject("no_reporting_verb")),
        ('"It is late," he asked.', Reject("no_reporting_verb")),
        ("", Reject("empty")),
    ],
    "passivization": [
        ("She likes him.", "He is liked by her."),
        ("Harley asked Abigail to bake some muffins.", "Abigail was asked by Harley to bake some muffins."),
        ("Matilda encouraged Sophia to compete in a match.",
         "Sophia was encouraged by Matilda to compete in a match."),
        ("The cat chased the mice.", "The mice were chased by the cat."),
        ("A man is playing a guitar", "A guitar is being played by a man"),
        ("The woman is slicing meat with a knife", "Meat is being sliced with a knife by the woman"),
        ("He has eaten the cake.", "The cake has been eaten by him."),
        ("The boy had broken the window.", "The window had been broken by the boy."),
        ("They will build a bridge.", "A bridge will be built by them."),
        ("I love you.", "You are loved by me."),
        ("The boys play football.", "Football is played by the boys."),
        ("We saw them.", "They were seen by us."),
        ("The kids were eating apples.", "Apples were being eaten by the kids."),
        ("A woman is carefully cleaning a fish", "A fish is carefully being cleaned by a woman"),
        ("A man is cutting an onion and a woman is watching",
         "An onion is being cut by a man and a woman is watching"),
        ("French chefs cooked a meal.", "A meal was cooked by French chefs."),  # proper adjective keeps its capital
        ("AFTRA members approved the merger by a vote of 75 to 24.",
         "The merger was approved by AFTRA members by a vote of 75 to 24."),
        # rejected
        ("The man is running in the park", Reject("no_object")),
        ("The movie opens this weekend", Reject("no_object")),
        ("Is the man eating an apple?", Reject("question")),
        ("The apple was eaten by the man", Reject("already_passive")),
        ("The man has a car", Reject("stative_verb")),
        ("The man is happy", Reject("copula")),
        ("The man doesn't like cats", Reject("negated")),
        ("Nobody likes the rain.", Reject("negated")),
        ("He picked up the box", Reject("phrasal_verb")),
        ("He gave her a book.", Reject("ditransitive")),
        ("He hurt himself.", Reject("reflexive")),
        ("The man who lives here owns a car", Reject("complex_subject")),
        ("The man likes the woman who sings", Reject("complex_object")),
        ("Bond bulls would like the Fed to recognize the risks.", Reject("not_passivizable")),
        ("The church became one of the first in the nation.", Reject("copula")),
        ("A girl is wearing jeans and is running", Reject("coordinated_predicate")),
        ("Running fast", Reject("no_verb")),
        ("", Reject("empty")),
    ],
    "argument_reordering": [
        ("She likes him.", "He likes her."),
        ("Harley asked Abigail to bake some muffins.", "Abigail asked Harley to bake some muffins."),
        ("Matilda encouraged Sophia to compete in a match.", "Sophia encouraged Matilda to compete in a match."),
        ("Mary told John to leave.", "John told Mary to leave."),
        ("He taught her to swim.", "She taught him to swim."),
        ("The teacher allowed the students to leave early.", "The students allowed the teacher to leave early."),
        ("Anna persuaded Tom to sing.", "Tom persuaded Anna to sing."),
        ("The captain commanded the soldiers to attack.", "The soldiers commanded the captain to attack."),
        ("The cat chases the mice.", "The mice chase the cat."),  # the verb agrees with its new subject
        ("The dogs chase the cat.", "The cat chases the dogs."),
        ("A man is playing a guitar", "A guitar is playing a man"),
        ("Two men are holding a baby", "A baby is holding two men"),
        ("The boy has kicked the girls.", "The girls have kicked the boy."),
        ("The man was chasing the dogs.", "The dogs were chasing the man."),
        ("I love you.", "You love me."),
        ("They will help us.", "We will help them."),
        # rejected
        ("The dog chased the dog.", Reject("unchanged")),
        ("The man is running", Reject("no_object")),
        ("The ball was kicked by the boy.", Reject("already_passive")),
        ("He gave her a book.", Reject("ditransitive")),
        ("Did the girl see the boy?", Reject("question")),
        ("The man with the hat likes cats", Reject("complex_subject")),
        ("", Reject("empty")),
    ],
    "fixed_point_inversion": [  # pivot 3, as the reference code
        ("A dog is running on concrete", "Running on concrete a dog is"),
        ("A man is playing a guitar.", "Playing a guitar a man is."),
        ("John is eating an apple.", "An apple John is eating."),
        ("I am eating an apple", "An apple I am eating"),
        ("FBI agents arrested him in Boston.", "Him in Boston FBI agents arrested."),
        ("Harley asked Abigail to bake some muffins.", "To bake some muffins Harley asked Abigail."),
        ("French chefs cook very well.", "Very well French chefs cook."),  # proper adjective keeps its capital
        ("The cat sat on the mat !", "On the mat the cat sat !"),
        ("Where did the man go?", "Man go where did the?"),
        ('He said "we will win" today.', 'Will win" today he said "we.'),
        ("Two dogs play in the snow.", "In the snow two dogs play."),
        ("The motorcyclist is riding a bike", "Riding a bike the motorcyclist is"),
        ("A man runs.", Reject("too_short")),
        ("Dogs bark loudly", Reject("too_short")),
        ("go go go go", Reject("unchanged")),
        ("", Reject("empty")),
    ],
}
ALL_CASES = [(name, sentence, expected) for name, cases in CASES.items() for sentence, expected in cases]


@pytest.mark.parametrize("name,sentence,expected", ALL_CASES,
                         ids=[f"{n}:{s[:40]}" for n, s, _ in ALL_CASES])
def test_case(name, sentence, expected):
    result = TRANSFORMATIONS[name](sentence)
    if isinstance(expected, Reject):
        assert (result.sentence, result.reason) == (None, expected.reason)
        assert not result.ok
    else:
        assert (result.sentence, result.reason) == (expected, None)
        assert result.ok and result.rule
    assert result.reason is None or result.reason in REASONS[name]


def test_every_transformation_has_15_cases_with_rejections():
    assert set(CASES) == set(REASONS)
    for name, cases in CASES.items():
        rejected = [c for c in cases if isinstance(c[1], Reject)]
        assert len(cases) >= 15 and len(rejected) >= 3 and len(cases) - len(rejected) >= 8, name


def test_parse_keeps_text_and_splits_like_the_treebank():
    text = '"Don\'t go," said Mr. Smith of the U.S. firm; it\'s 5:30 (cannot wait).'
    p = parsing.parse(text)
    assert p.text == text
    assert parsing._render(parsing._pairs(p)) == text  # untouched units come back byte for byte
    assert p.units[:6] == ('"', "Do", "n't", "go", ",", '"')
    assert "Mr." in p.units and "U.S." in p.units and ("can", "not") == p.units[-5:-3]
    assert len(p.tags) == len(p.units) == len(p.spaces) == len(p.words)
    assert parsing.parse("  two   spaces ").text == "two spaces"


def test_parse_accepts_given_tags_and_checks_their_number():
    p = parsing.parse("Dogs chase cats", tags=["NNS", "VBP", "NNS"])
    assert p.tags == ("NNS", "VBP", "NNS")
    assert structural.argument_reordering(p).sentence == "Cats chase dogs"
    with pytest.raises(ValueError):
        parsing.parse("Dogs chase cats", tags=["NNS"])


def test_parsed_input_gives_the_same_result_as_text():
    for name in CASES:
        for sentence, _ in CASES[name][:5]:
            assert TRANSFORMATIONS[name](parsing.parse(sentence)) == TRANSFORMATIONS[name](sentence)


def test_passivization_without_agent():
    assert structural.passivization("Harley asked Abigail to bake some muffins.", agent=False).sentence == \
        "Abigail was asked to bake some muffins."
    assert structural.passivization("She likes him.", agent=False).sentence == "He is liked."


def test_fixed_point_inversion_pivots():
    sentence = "A dog is running on concrete and is holding a blue ball"
    # the paper's example pivots at "concrete"
    assert structural.fixed_point_inversion(sentence, 5).sentence == \
        "Concrete and is holding a blue ball a dog is running on"
    assert structural.fixed_point_inversion("Dogs bark loudly.", 1).sentence == "Bark loudly dogs."
    n = len(sentence.split())
    seen = set()
    for sentence_id in range(20):
        result = structural.fixed_point_inversion(sentence, "seeded", seed=7, sentence_id=sentence_id)
        k = random.Random(f"7:{sentence_id}").randrange(1, n)
        assert result.rule == f"pivot_{k}" and 1 <= k < n
        assert result == structural.fixed_point_inversion(sentence, "seeded", seed=7, sentence_id=sentence_id)
        assert result == structural.fixed_point_inversion(sentence, k)
        seen.add(k)
    assert len(seen) > 3  # the pivot varies with the sentence id
    assert structural.fixed_point_inversion("Hi", "seeded", seed=1, sentence_id="a").reason == "too_short"
    for bad in (0, -1, True, "3", 2.5):
        with pytest.raises(ValueError):
            structural.fixed_point_inversion(sentence, bad)
    with pytest.raises(ValueError):
        structural.fixed_point_inversion(sentence, "seeded")


# --- the property test on real sentences ---------------------------------------------------------
PUNCT = "\"'`.,;:!?()[]{}<>\u201c\u201d\u2018\u2019\u2026-\u2014\u2013"
PRONOUNS = {"i", "me", "he", "him", "she", "her", "we", "us", "they", "them", "who", "whom", "you", "it"}
BE_HAVE = {"am", "is", "are", "was", "were", "be", "been", "being", "has", "have", "had"}
CONTRACTIONS = {"isn't", "aren't", "wasn't", "weren't", "don't", "doesn't", "didn't", "hasn't", "haven't",
                "hadn't", "won't", "wouldn't", "can't", "couldn't", "shouldn't", "mustn't", "needn't"}


def _word(token: str) -> str:
    return token.replace("\u2019", "'").strip(PUNCT).lower()


def _input_words(sentence: str) -> set[str]:
    words = {_word(t) for t in sentence.split()}
    for w in list(words):
        for clitic in ("n't", "'s", "'re", "'ve", "'ll", "'d", "'m"):
            if w.endswith(clitic):
                words |= {w[:-len(clitic)], clitic}
        if w == "cannot":
            words |= {"can", "not"}
    return words


def _verb_forms(words: set[str]) -> set[str]:
    """Every inflection of every verb lemma each word can be a form of."""
    from lemminflect import getAllInflections, getAllLemmas
    out = set()
    for word in words:
        for lemma in set(getAllLemmas(word).get("VERB", ())) | {word}:
            out.add(lemma)
            for forms in getAllInflections(lemma, upos="VERB").values():
                out |= set(forms)
    return out


def _synonym_forms(words: set[str]) -> set[str]:
    from lemminflect import getAllLemmas
    lemmas = {lem.name().lower() for w in words for base in set(getAllLemmas(w).get("VERB", ())) | {w}
              for syn in wordnet.synsets(base, wordnet.VERB) for lem in syn.lemmas()}
    return _verb_forms(lemmas)


def _allowed(name: str, words: set[str]) -> set[str]:
    """Words the transformation may introduce besides the input's."""
    if name == "not_negation":
        return {"not", "do", "does", "did", "can", "will", "shall"} | CONTRACTIONS | _verb_forms(words)
    if name == "quantifier_negation":
        return {"there", "is", "are", "was", "were", "no"}
    if name == "synonym_substitution":
        return _verb_forms(words) | _synonym_forms(words)
    if name == "passivization":
        return {"by"} | BE_HAVE | PRONOUNS | _verb_forms(words)
    if name == "argument_reordering":
        return BE_HAVE | PRONOUNS | _verb_forms(words)
    return set()  # embedded_clause, fixed_point_inversion: only input words


def _unexpected(name: str, sentence: str, out: str) -> list[str]:
    """Output words that are neither input words nor ones the transformation may introduce."""
    words = _input_words(sentence)
    new = [w for w in (_word(t) for t in out.split()) if w and w not in words]
    return [w for w in new if w not in _allowed(name, words)]


def test_the_word_check_catches_corrupted_words():
    # what the reference code's regexes did to "The motorcyclist is riding"
    assert _unexpected("not_negation", "The motorcyclist is riding", "The motorcyclis nott riding") == \
        ["motorcyclis", "nott"]
    assert _unexpected("not_negation", "The motorcyclist is riding", "The motorcyclist isn't riding") == []
    assert _unexpected("passivization", "He likes her", "She is liked by him") == []
    assert _unexpected("embedded_clause", "He said it rained", "It rains") == ["rains"]


def _real_sentences() -> list[str]:
    from conftest import shared_data
    sick_path = shared_data("sick", "SICK.txt")
    msrp_path = shared_data("msrp", "msr_paraphrase_train.txt")
    with open(sick_path, encoding="utf-8") as f:
        sick = list(dict.fromkeys(row["sentence_A"] for row in csv.DictReader(f, delimiter="\t")))
    with open(msrp_path, encoding="utf-8-sig") as f:
        msrp = [row[3] for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE) if row[0] != "Quality"]
    return sick[::len(sick) // 200][:200] + msrp[::len(msrp) // 100][:100]


@pytest.fixture(scope="module")
def real():
    sentences = _real_sentences()
    assert len(sentences) == 300
    return [(s, parsing.parse(s)) for s in sentences]


# Lower bounds on the share of the 300 sentences each transformation accepts (a regression guard;
# measured when written: 91%, 28%, 29%, 7%, 18%, 18%, 100%). Embedded clauses come from MSRP only:
# the SICK captions have no reporting verbs.
MIN_ACCEPTED = {"not_negation": 0.85, "quantifier_negation": 0.2, "synonym_substitution": 0.2,
                "embedded_clause": 0.05, "passivization": 0.12, "argument_reordering": 0.12,
                "fixed_point_inversion": 0.99}


@pytest.mark.parametrize("name", list(CASES))
def test_real_sentences_only_intended_words(real, name):
    fn = TRANSFORMATIONS[name]
    accepted = 0
    for sentence, parsed in real:
        result = fn(parsed)
        assert result == fn(parsed)  # deterministic
        if not result.ok:
            assert result.reason in REASONS[name], (sentence, result)
            continue
        accepted += 1
        out = result.sentence
        assert out == out.strip() and "  " not in out and out.lower() != sentence.lower()
        unexpected = _unexpected(name, sentence, out)
        assert not unexpected, (sentence, out, unexpected)
        if name == "fixed_point_inversion":  # the same words, reordered
            assert sorted(map(_word, out.split())) == sorted(map(_word, sentence.split()))
        if name == "embedded_clause":  # a piece of the sentence, in order
            assert re.sub(r"\W", "", out.lower()) in re.sub(r"\W", "", sentence.lower())
    assert accepted / len(real) >= MIN_ACCEPTED[name]
