# Shared stage: news-article collections (the top-level `articles:` section) -> Parquet shards of
# articles with stable ids and their sentences (NLTK punkt), and a report of the records skipped per
# reason. Formats: CNN/DailyMail .story files (a folder, one file or a tar archive) and the Hugging
# Face cnn_dailymail layout (Parquet, CSV or JSON Lines; gzip detected from the content). A `url` is
# fetched and verified by download_source (rules/ingest.smk). Code: workflow_scripts/articles.py.


rule articles:
    input:
        unpack(by_content(articles_inputs)),
    output:
        shards=directory(f"{R}/articles/{{collection}}"),
        report=f"{R}/reports/articles/{{collection}}.json",
    log:
        log_path("articles", "{collection}"),
    benchmark:
        bench_path("articles", "{collection}")
    wildcard_constraints:
        collection=NAME,
    priority: CHAIN_HEAD_PRIORITY
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("articles")
    resources:
        **RESOURCES.sized("articles"),
    params:
        **job_params("articles:run_articles"),
        spec=lambda wc: config["articles"][wc.collection],
        # NLTK's punkt data (name@digest): a change splits the sentences again
        punkt=lambda wc: STUDY.nltk_plan(wc, prefix="punkt"),
        # the workflow's NLTK download folder, looked in before the user's NLTK_DATA
        nltk_dir=STUDY.nltk_download_dir,
    script:
        "../workflow_scripts/run_job.py"
