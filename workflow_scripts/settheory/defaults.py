"""The set-theoretic probe's defaults that the config check and the planning read
(settheory/probe.py, settheory/plan.py) as well as the job (settheory/samples.py): a module of its
own, so that checking a config imports no polars or pyarrow."""
from workflow_scripts.generator import SMOLLM2

# Built-in generator and prompt; `settheory.generators` / `settheory.prompts` add or replace entries.
DEFAULT_GENERATORS = {
    "smollm2": {**SMOLLM2, "device": "cpu", "batch_size": 8, "decoding": {"max_new_tokens": 96}},
}
# A few-shot chat prompt: with plain instructions SmolLM2-135M echoes its input. The shots were
# written for this project (not taken from CNN/DailyMail) and each one rewrites, never concatenates.
DEFAULT_PROMPTS = {
    "fuse_fewshot": {
        "system": "You combine two sentences from a news story into one sentence that keeps the information "
                  "of both. Rewrite freely; answer with the new sentence only.",
        "shots": [
            ["Sentence 1: The museum will close for repairs in March.\n"
             "Sentence 2: The repairs are expected to take about six months.",
             "The museum will close in March for repairs that should take about six months."],
            ["Sentence 1: Police stopped a lorry on the motorway near Carlow on Friday.\n"
             "Sentence 2: Officers found 300 stolen bicycles inside it.",
             "Police who stopped a lorry near Carlow on Friday found 300 stolen bicycles inside."],
            ["Sentence 1: Anna Weber has been named the new head of the city orchestra.\n"
             "Sentence 2: She led a choir in Vienna for ten years.",
             "Anna Weber, who led a Vienna choir for ten years, is the city orchestra's new head."],
        ],
        "user": "Sentence 1: {first}\nSentence 2: {second}",
    },
}
DEFAULT_SET = {"generator": "smollm2", "prompt": "fuse_fewshot", "windows_per_article": 1, "min_words": 4,
               "max_words": 60, "keep_echoes": False, "echo_threshold": 0.9, "gate": {}, "clean": True}
