# Stage 4: vector stores. One job per (model, scope, partition); every unique text of the
# partition is embedded once per model, whatever corpora and probes it comes from.
import os


def model_file(model):
    spec = config["models"][model]
    if "url" in spec:
        # a .gz download is verified, then stored decompressed (fastText's cc.*.300.bin.gz)
        return f"{R}/downloads/models/{model}/{os.path.basename(spec['url']).removesuffix('.gz')}"
    return spec.get("path")


def embed_inputs(wildcards):
    spec = config["models"][wildcards.model]
    if spec["family"] == "tfidf":
        return {"texts": [f"{R}/texts/{wildcards.scope}/part-{wildcards.part}.parquet"],
                "fitted": f"{R}/models/{wildcards.model}/tfidf-{wildcards.scope}.json"}
    inputs = {"texts": [f"{R}/texts/{c}/part-{wildcards.part}.parquet" for c in model_corpora(wildcards.model)]}
    if spec["family"] == "fasttext":
        inputs["model_file"] = model_file(wildcards.model)
    return inputs


def embed_options(wildcards, input):
    opts = []
    if "fitted" in input.keys():
        opts.append(f"--fitted {input.fitted}")
    if "model_file" in input.keys():
        opts.append(f"--model-file {input.model_file}")
    return " ".join(opts)


def model_resource(key):
    def get(wildcards, attempt=1):
        spec = config["models"][wildcards.model]
        base = spec.get(key, config.get("resources", {}).get("embed", {}).get(key, DEFAULT_RESOURCES["embed"][key]))
        return base * attempt if key in ("mem_mb", "runtime") else base
    return get


rule download_model:
    output: f"{R}/downloads/models/{{model}}/{{filename}}"
    params:
        url=lambda wc: config["models"][wc.model]["url"],
        sha256=lambda wc: config["models"][wc.model]["sha256"],
        gunzip=lambda wc: "--gunzip" if config["models"][wc.model]["url"].endswith(".gz") else "",
    log: log_path("download", "model-{model}", "{filename}")
    threads: res("download", "threads")
    resources: mem_mb=res("download", "mem_mb"), runtime=res("download", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "{PY}.ingest download --url {params.url:q} --sha256 {params.sha256} {params.gunzip} --out {output:q}"
        " > {log:q} 2>&1"


def tfidf_fit_texts(wildcards):
    if config["models"][wildcards.model].get("fit_on", "originals_and_variants") == "originals":
        return []
    return [f"{R}/texts/{wildcards.corpus}/part-{p}.parquet" for p in PART_IDS]


rule fit_tfidf:
    input:
        corpus=f"{R}/corpora/{{corpus}}",
        texts=tfidf_fit_texts,
    output: f"{R}/models/{{model}}/tfidf-{{corpus}}.json"
    params: spec=lambda wc: as_json(embed_spec(wc.model))
    log: log_path("fit_tfidf", "{model}", "{corpus}")
    benchmark: bench_path("fit_tfidf", "{model}", "{corpus}")
    threads: res("fit_tfidf", "threads")
    resources: mem_mb=res("fit_tfidf", "mem_mb"), runtime=res("fit_tfidf", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "{PY}.embed fit-tfidf --spec {params.spec:q} --corpus-dir {input.corpus:q} --texts {input.texts:q}"
        " --out {output:q} > {log:q} 2>&1"


rule embed:
    input: unpack(embed_inputs)
    output: directory(f"{R}/embeddings/{{model}}/{{scope}}/part-{{part}}")
    params:
        # what decides the vectors, resolved device included: a change reruns the job
        spec=lambda wc: as_json(embed_spec(wc.model)),
        options=embed_options,
        partitions=PARTS,
    log: log_path("embed", "{model}", "{scope}", "part-{part}")
    benchmark: bench_path("embed", "{model}", "{scope}", "part-{part}")
    threads: model_resource("threads")
    resources:
        mem_mb=model_resource("mem_mb"),
        runtime=model_resource("runtime"),
        gpu=lambda wc: 1 if resolved_device(wc.model) == "cuda" else 0,
        # SLURM: --gpus=<gpu_model>:1 (the plugin ignores an empty model)
        gpu_model=lambda wc: config["models"][wc.model].get("gpu_model", "") if resolved_device(wc.model) == "cuda" else "",
        # how the job runs, not what it computes (fp32: float-rounding changes only; in bf16/fp16
        # the batch size is in the spec too): resources, like threads, are not compared when
        # Snakemake decides what to rerun (params, input, shell template, software env, mtime are)
        batch_size=lambda wc: config["models"][wc.model].get("batch_size", 32),
        cpu_workers=lambda wc: config["models"][wc.model].get("cpu_workers", 1),
    conda: "../envs/workflow.yaml"
    shell:
        "HF_HUB_OFFLINE=${{HF_HUB_OFFLINE:-0}} {PY}.embed embed --model {wildcards.model} --spec {params.spec:q}"
        " --scope {wildcards.scope} --partition {wildcards.part} --partitions {params.partitions}"
        " --texts {input.texts:q} {params.options} --out {output:q} --threads {threads}"
        " --batch-size {resources.batch_size} --cpu-workers {resources.cpu_workers} > {log:q} 2>&1"
