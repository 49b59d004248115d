"""Family `openai_embeddings`: an OpenAI-compatible /v1/embeddings endpoint, every vector cached
(workflow_scripts/embedding_api.py)."""
from __future__ import annotations

from workflow_scripts.encoders import Family


def load(spec: dict, device: str, model_file, job):
    from workflow_scripts.embedding_api import OpenAIEmbeddingsEncoder
    return OpenAIEmbeddingsEncoder({**spec, **job.run_settings}, job.model, job.log, job.cache)


# run setting -> (the embedding job's resource, scale): Snakemake rounds a float resource to an
# integer, so seconds travel as milliseconds
RUN_RESOURCES = {"retries": ("api_retries", 1), "concurrency": ("api_concurrency", 1),
                 "batch_tokens": ("api_batch_tokens", 1), "max_answer_bytes": ("api_max_answer_bytes", 1),
                 "timeout_s": ("api_timeout_ms", 1000), "backoff_s": ("api_backoff_ms", 1000),
                 "api_key_env": ("api_key_env", None)}


def config_problems(name: str, m: dict) -> list[str]:
    """The key's variable must be set where the workflow runs."""
    from workflow_scripts.endpoints import api_key_problem
    problem = api_key_problem(f"model {name!r}", m)
    return [f"config key `models.{name}.api_key_env`: {problem}"] if problem else []


FAMILY = Family(
    name="openai_embeddings", load=load, modules=("httpx",), needs=("vector_cache",), manifest_keys=("endpoint",),
    # timed by its server, not here
    estimable=False, run_resources=RUN_RESOURCES, config_problems=config_problems,
    requires={"required": ["base_url", "model"],
              "x-expected": "`base_url` (up to /v1) and `model` (the name the server serves)"})
