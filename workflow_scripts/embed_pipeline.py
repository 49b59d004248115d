"""The embedding loop every encoder family shares: tokenize once, batch by token count, keep the
device busy.

An encoder that can (the torch families: encoders.TorchEncoder) gives
- `tokenize(texts)` -> `Tokens`: every text of a chunk tokenized once, without padding; the
  batches are sorted by these token counts, and padded from these ids (`Tokens.pad`),
- `collate(tokens, idx)` -> the model's inputs for the texts `idx` (tensors on the host),
- `forward(features)` -> the batch's vectors as a float32 tensor on the model's device,
- `reference_features(texts)` -> the inputs its library builds itself for those texts (what
  `encode_batch` runs on): `embed_sorted` checks that `collate` gives the same tensors on the
  first and the last batch of every chunk (its longest and shortest texts), and otherwise runs
  every batch through `encode_batch` (tokenizing twice, as before), saying so in the log.
Other encoders give `token_lengths(texts)` and `encode_batch(texts)` only, and are batched the
same way from those.

On a GPU, while the model runs on one batch, a bounded thread (`Prefetch`) pads and pins the next
ones, the inputs go over from pinned memory and the vectors come back into pinned buffers without
blocking (`HostCopies`), so the host waits on the device only when it is `depth` batches behind. On
the CPU, whose cores the model's threads use, batches are padded in turn and the vectors are the
model's output itself: the same bytes as one `encode_batch` per batch gives.
"""
from __future__ import annotations

import queue
import threading
import time
from itertools import chain

import numpy as np

PREFETCH_BATCHES = 4  # padded batches ready ahead of the model
PREFETCH_ON_CPU = False  # the prefetch thread on the CPU too: the same speed there (docs/timings.md), so off
COPIES_IN_FLIGHT = 4  # GPU batches whose vectors are on their way back before the host waits


class Prefetch:
    """`fn(item)` for each of `items`, computed in a background thread at most `depth` ahead of
    the consumer, in order. An exception in the thread is raised in the consumer at that item;
    leaving the loop early (or `close`) stops the thread."""

    _DONE = object()

    def __init__(self, fn, items, depth: int = 2, name: str = "prefetch"):
        self.queue: queue.Queue = queue.Queue(maxsize=max(1, depth))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(fn, iter(items)), name=name, daemon=True)
        self.thread.start()

    def _put(self, entry) -> bool:
        while not self.stop.is_set():
            try:
                self.queue.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, fn, items) -> None:
        try:
            for item in items:
                if self.stop.is_set() or not self._put((True, fn(item))):
                    return
        except BaseException as err:  # noqa: BLE001 - handed to the consumer
            self._put((False, err))
            return
        self._put((True, self._DONE))

    def __iter__(self):
        try:
            while True:
                ok, value = self.queue.get()
                if not ok:
                    raise value
                if value is self._DONE:
                    return
                yield value
        finally:
            self.close()

    def close(self) -> None:
        self.stop.set()
        while True:  # unblock a thread waiting to put
            try:
                self.queue.get_nowait()
            except queue.Empty:
                break
        if self.thread is not threading.current_thread():
            self.thread.join(timeout=5)


class Tokens:
    """The token ids of a chunk's texts, each text tokenized once without padding (a Hugging Face
    tokenizer's output of lists), kept flat: `lengths[i]` tokens of text i. `pad(idx)` builds the
    padded batch of the texts `idx` as the tokenizer's own `padding=True` does (to the batch's
    longest text, on `padding_side`, with `pad_values[key]` for each key)."""

    def __init__(self, encoding: dict, pad_values: dict[str, int], padding_side: str = "right"):
        ids = encoding["input_ids"]
        n = len(ids)
        self.lengths = np.fromiter(map(len, ids), dtype=np.int64, count=n)
        self.offsets = np.zeros(n + 1, np.int64)
        np.cumsum(self.lengths, out=self.offsets[1:])
        total = int(self.offsets[-1])
        self.flat = {}
        for key, rows in encoding.items():
            if key not in pad_values:
                raise KeyError(f"no padding value known for the tokenizer's {key!r}")
            self.flat[key] = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=total)
        self.pad_values = pad_values
        self.padding_side = padding_side

    def __len__(self) -> int:
        return len(self.lengths)

    def pad(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        idx = np.asarray(idx, dtype=np.int64)
        lens = self.lengths[idx]
        width = int(lens.max()) if len(idx) else 0
        # the flat positions of the batch's tokens, text by text
        starts = np.repeat(self.offsets[idx] - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
        gather = starts + np.arange(int(lens.sum()))
        cols = np.arange(width)[None, :]
        real = cols < lens[:, None] if self.padding_side == "right" else cols >= width - lens[:, None]
        out = {}
        for key, flat in self.flat.items():
            block = np.full((len(idx), width), self.pad_values[key], dtype=np.int64)
            block[real] = flat[gather]  # row-major: each row's real positions in order
            out[key] = block
        return out


def pad_values_of(tokenizer) -> dict[str, int]:
    """What a Hugging Face tokenizer pads each of its outputs with (its `pad` method's values)."""
    values = {"attention_mask": 0, "special_tokens_mask": 1}
    if tokenizer.pad_token_id is not None:
        values["input_ids"] = int(tokenizer.pad_token_id)
    values["token_type_ids"] = int(getattr(tokenizer, "pad_token_type_id", 0) or 0)
    return values


def same_features(mine: dict, reference: dict) -> bool:
    """Whether two batches of model inputs are the same: the same keys, equal tensors (dtype,
    shape and values) and equal other entries (e.g. a prompt length)."""
    if set(mine) != set(reference):
        return False
    for key, ref in reference.items():
        val = mine[key]
        if hasattr(ref, "shape"):
            if not hasattr(val, "shape") or tuple(val.shape) != tuple(ref.shape) or val.dtype != ref.dtype:
                return False
            if not bool((val == ref).all()):
                return False
        elif val != ref:
            return False
    return True


class HostCopies:
    """Vectors from the model's device into host arrays. On a GPU each batch is copied into one of
    `depth` + 1 pinned buffers without blocking, and handed back (`push` returns the batches that
    are complete) only once its copy is done, so the host keeps launching work while the device
    finishes; on the CPU a batch's tensor is handed back at once (`.numpy()` of the same memory)."""

    def __init__(self, torch, device: str, dim: int, batch_size: int, depth: int = COPIES_IN_FLIGHT):
        self.torch, self.cuda = torch, str(device).startswith("cuda")
        self.pending: list = []
        self.depth = depth
        if self.cuda:
            self.buffers = [torch.empty((batch_size, dim), dtype=torch.float32, pin_memory=True)
                            for _ in range(depth + 1)]
            self.next = 0

    def push(self, idx, vectors) -> list:
        if not self.cuda:
            return [(idx, vectors.numpy())]
        host = self.buffers[self.next][:len(vectors)]
        self.next = (self.next + 1) % len(self.buffers)
        host.copy_(vectors, non_blocking=True)
        done = self.torch.cuda.Event()
        done.record()
        self.pending.append((idx, host, done))
        out = []
        while len(self.pending) > self.depth:
            out.append(self._take())
        return out

    def _take(self):
        idx, host, done = self.pending.pop(0)
        done.synchronize()
        return idx, host.numpy()

    def drain(self) -> list:
        return [self._take() for _ in range(len(self.pending))]


def tokenized(encoder) -> bool:
    """Whether the encoder takes the tokenize-once path (`tokenize`, `collate`, `forward`)."""
    return all(hasattr(encoder, name) for name in ("tokenize", "collate", "forward", "reference_features"))


def tokenize_or_none(encoder, texts: list[str], log, label: str) -> Tokens | None:
    """encoder.tokenize(texts), or None (and a warning) when its tokenizer returns something this
    loop does not know how to pad: the batches are then tokenized by the model's library."""
    try:
        return encoder.tokenize(texts)
    except KeyError as err:
        log.warning("%s: %s; tokenizing every batch as the model does", label, err.args[0] if err.args else err)
        return None


def _progress(log, label: str, done: int, total: int, started: float) -> None:
    rate = done / max(time.perf_counter() - started, 1e-9)
    log.info("%s: %d/%d texts of this chunk (%.0f texts/s, %.0f s left)", label, done, total, rate,
             (total - done) / max(rate, 1e-9))


def embed_sorted(encoder, texts: list[str], out: np.ndarray, batch_size: int, log, label: str,
                 pool=None, tokens: Tokens | None = None) -> None:
    """Fill out[i] = the vector of texts[i], in batches of similar token count (longest first: a
    memory problem shows at once).

    `tokens`: the texts already tokenized (`encoder.tokenize(texts)`, e.g. by a thread while the
    previous chunk was encoded). With a pool (embed.WorkerPool), its processes run the same
    batches (`pool.map` of padded inputs, or of texts for an encoder without `tokenize`)."""
    if not texts:
        return
    started = time.perf_counter()
    if tokens is None and tokenized(encoder):
        tokens = tokenize_or_none(encoder, texts, log, label)
    lengths = tokens.lengths if tokens is not None else encoder.token_lengths(texts)
    order = np.argsort(-lengths, kind="stable")
    batches = [order[i:i + batch_size] for i in range(0, len(texts), batch_size)]
    if tokens is not None:
        for check in {0, len(batches) - 1}:
            idx = batches[check]
            if not same_features(encoder.collate(tokens, idx), encoder.reference_features([texts[i] for i in idx])):
                log.warning("%s: the inputs padded from the single tokenization differ from the model's own "
                            "(batch %d of %d); tokenizing every batch again, as the model does", label, check,
                            len(batches))
                tokens = None
                break
    report_every = max(1, len(batches) // 20)
    done = 0
    if pool is not None:
        work = ((encoder.collate(tokens, idx) if tokens is not None else [texts[i] for i in idx]) for idx in batches)
        for b, (idx, vectors) in enumerate(zip(batches, pool.map(work))):
            out[idx] = vectors
            done += len(idx)
            if (b + 1) % report_every == 0 or b + 1 == len(batches):
                _progress(log, label, done, len(texts), started)
        return
    if tokens is None:
        for b, idx in enumerate(batches):
            out[idx] = encoder.encode_batch([texts[i] for i in idx])
            done += len(idx)
            if (b + 1) % report_every == 0 or b + 1 == len(batches):
                _progress(log, label, done, len(texts), started)
        return
    import torch
    copies = HostCopies(torch, encoder.device, out.shape[1], batch_size)
    pin = copies.cuda

    def prepare(idx):
        features = encoder.collate(tokens, idx)
        if pin:
            features = {k: v.pin_memory() if isinstance(v, torch.Tensor) else v for k, v in features.items()}
        return idx, features

    # on a GPU the next batches are padded (and pinned) while it runs; on the CPU the model's threads
    # use every core, so they are padded in turn (a thread there would only compete for them)
    prepared = Prefetch(prepare, batches, depth=PREFETCH_BATCHES, name=f"{label} batches") if pin or PREFETCH_ON_CPU \
        else map(prepare, batches)
    b = 0
    for idx, features in prepared:
        for ready, vectors in copies.push(idx, encoder.forward(features)):
            out[ready] = vectors
        done += len(idx)
        b += 1
        if b % report_every == 0 or b == len(batches):
            _progress(log, label, done, len(texts), started)
    for ready, vectors in copies.drain():
        out[ready] = vectors


class BackgroundWrites:
    """Calls (a store's appends) run one after another in a second thread, at most one waiting:
    the next chunk is encoded while the last one is written. An error is raised at the next
    `submit` or at `wait`."""

    def __init__(self, name: str = "store writer"):
        from concurrent.futures import ThreadPoolExecutor
        self.executor = ThreadPoolExecutor(1, thread_name_prefix=name)
        self.last = None

    def submit(self, fn, *args) -> None:
        if self.last is not None:
            self.last.result()
        self.last = self.executor.submit(fn, *args)

    def wait(self) -> None:
        if self.last is not None:
            self.last, last = None, self.last
            last.result()

    def __enter__(self) -> "BackgroundWrites":
        return self

    def __exit__(self, *exc) -> None:
        try:
            if exc[0] is None:
                self.wait()
        finally:
            self.executor.shutdown(wait=True, cancel_futures=True)
