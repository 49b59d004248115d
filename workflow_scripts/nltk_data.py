"""NLTK data packages the probes need: which, where they are, and a verified download.

- required_packages(config): the packages each configured user needs ({"triplets": [...]}).
- find_package / missing_packages: where a package is installed, on nltk's search path (a folder
  or a .zip in its category folder: corpora/, taggers/, tokenizers/ ...), without importing nltk
  (that takes ~3 s, too long for every Snakemake start).
- download_packages: nltk's own downloader into a private staging folder, then each archive is
  checked again against the index (size, md5 `checksum`, and `sha256_checksum` where the index has
  one), moved into place, and described in a manifest (package -> file, md5, sha256, size, URLs)
  written atomically. A mismatch raises and leaves nothing in the destination.
- offline_message: what to do when packages are missing and cannot be downloaded.

The job of rules/nltk_data.smk: run_nltk_download.
"""
from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import logging
import os
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Iterable

from workflow_scripts.common import setup_logging, write_json
from workflow_scripts.digests import crc_digest

TAGGER = "averaged_perceptron_tagger_eng"
WORDNET = "wordnet"
TREEBANK = "treebank"
PUNKT = "punkt_tab"

# What the shared stages need when configured: article collections are split with punkt. What each
# probe needs is in its declaration (`nltk` of <probe>/probe.py, workflow_scripts/probes.py).
SHARED_PACKAGES: dict[str, tuple[str, ...]] = {"articles": (PUNKT,)}

# nltk's category folder of each package this workflow may ask for (the index's `subdir`).
# A package not listed here is looked for in every category.
PACKAGE_CATEGORY: dict[str, str] = {
    TAGGER: "taggers", "averaged_perceptron_tagger": "taggers", "universal_tagset": "taggers",
    WORDNET: "corpora", "omw-1.4": "corpora", TREEBANK: "corpora", "stopwords": "corpora",
    PUNKT: "tokenizers", "punkt": "tokenizers",
}
CATEGORIES = ("corpora", "taggers", "tokenizers", "chunkers", "grammars", "help", "misc", "models",
              "sentiment", "stemmers")

DEFAULT_INDEX_URL = "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/index.xml"  # nltk.downloader.Downloader.DEFAULT_URL
DEFAULT_DEST = "results/nltk_data"  # where the workflow's download rule puts them (`nltk_download: auto`)
STAGING_PREFIX = ".tmp-nltk-download-"


class NLTKDataError(RuntimeError):
    """A download failed or did not match the index; nothing was installed."""


class NLTKDownloadFailed(NLTKDataError):
    """nltk could not fetch a package (no internet, unknown package, bad index ...)."""


# --- which packages --------------------------------------------------------------------------------
def _dedup(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _enabled(section) -> bool:
    return section is not None and section is not False and \
        not (isinstance(section, dict) and section.get("enabled", True) is False)


def required_packages(config: dict, include_optional: bool = False) -> dict[str, list[str]]:
    """The NLTK packages each configured user needs, e.g. {"triplets": [tagger, "wordnet", "treebank"]}:
    the shared stages' (SHARED_PACKAGES) and each declared probe's (`Probe.nltk`).

    Expected config shape (only these keys are read), for a probe P:
      P:                             # absent (or `enabled: false`): nothing needed
        sources:                     # a mapping name -> spec (a list of specs works too)
          wsj: {format: treebank}    # a format in P's by_source_format adds its packages
        datasets:                    # when given: only datasets that are built (no `file`) need
          d: {sources: [wsj]}        # anything, and only the sources they use count; a dataset
                                     # `kind` in P's by_dataset_kind adds its packages
    With include_optional, a probe's optional packages too (where its optional_if says it uses them).
    """
    from workflow_scripts.probes import NltkNeeds, declarations

    needs_of = {**{name: NltkNeeds(always=pkgs) for name, pkgs in SHARED_PACKAGES.items()},
                **{p.name: p.nltk for p in declarations()}}
    out: dict[str, list[str]] = {}
    for probe, needs in needs_of.items():
        section = config.get(probe)
        if probe not in config or not _enabled(section):
            continue
        if needs.always or needs.by_source_format:
            sources = (section.get("sources") if isinstance(section, dict) else None) or {}
            datasets = (section.get("datasets") if isinstance(section, dict) else None)
            wanted = True
            if isinstance(datasets, dict):
                # datasets read from the user's own files transform nothing; built ones use their sources
                built = [d for d in datasets.values() if not (isinstance(d, dict) and "file" in d)]
                wanted = bool(built)
                used = {name for d in built if isinstance(d, dict) for name in d.get("sources", [])}
                if isinstance(sources, dict):
                    sources = {name: spec for name, spec in sources.items() if name in used}
            if wanted:
                found = list(needs.always)
                for spec in sources.values() if isinstance(sources, dict) else sources:
                    if isinstance(spec, dict):
                        found += needs.by_source_format.get(spec.get("format"), ())
                out[probe] = _dedup(found)
        datasets = section.get("datasets") if isinstance(section, dict) else None
        for d in (datasets or {}).values():
            if isinstance(d, dict) and d.get("kind") in needs.by_dataset_kind:
                out[probe] = _dedup(out.get(probe, []) + list(needs.by_dataset_kind[d["kind"]]))
        if include_optional and needs.optional and probe not in out:
            if needs.optional_if is None or needs.optional_if(section if isinstance(section, dict) else {}):
                out[probe] = list(needs.optional)
    return out


# --- packages that choose a method ----------------------------------------------------------------
def _setting(section: dict, dotted: str):
    for key in dotted.split("."):
        section = section.get(key) if isinstance(section, dict) else None
    return section


def method_choices(config: dict, paths: Iterable[str | os.PathLike] | None = None,
                   applies: dict[str, bool] | None = None) -> list[dict]:
    """For each configured probe whose NLTK packages choose its method (`NltkNeeds.optional` with a
    `switch`): {"probe", "key" (its config key, dotted from the top), "setting" (its value), "uses"
    (whether the config asks for the method with the data), "packages", "missing" (those not found
    on `paths`, default nltk's search path: NLTK_DATA, ~/nltk_data, the system folders; the probe's
    jobs read them there, not from <results>/nltk_data), "method" (the method the run uses, in
    words), "methods", "fallback"}. The plan stops when "uses" and "missing" (method_message).
    `applies`: probe -> whether the study runs the method at all (its plan's nltk_method_applies:
    some model scores a dataset it applies to); a probe marked False is left out."""
    from workflow_scripts.probes import declarations

    paths = None if paths is None else list(paths)
    out = []
    for probe in declarations():
        needs = probe.nltk
        section = config.get(probe.name)
        if not (needs.optional and needs.switch) or probe.name not in config or not _enabled(section):
            continue
        if applies is not None and not applies.get(probe.name, False):
            continue
        section = section if isinstance(section, dict) else {}
        uses = needs.optional_if is None or bool(needs.optional_if(section))
        missing = missing_packages(needs.optional, paths) if uses else []
        out.append({"probe": probe.name, "key": f"{probe.name}.{needs.switch}", "setting": _setting(section, needs.switch),
                    "uses": uses, "packages": list(needs.optional), "missing": missing,
                    "method": needs.methods[0] if uses else needs.methods[1], "methods": needs.methods,
                    "fallback": needs.fallback})
    return out


def method_lines(choices: list[dict]) -> list[str]:
    """What the console says about each choice: the method used and the key that chose it."""
    lines = []
    for c in choices:
        if c["missing"]:
            continue
        value = json.dumps(c["setting"]) if c["setting"] is not None else "not set, default"
        why = f"NLTK data found: {', '.join(c['packages'])}" if c["uses"] else "the fallback, asked for explicitly"
        lines.append(f"{c['probe']}: {c['method']} (`{c['key']}`: {value}; {why})")
    return lines


def method_message(choices: list[dict]) -> str:
    """Why the plan stops: packages that the configured method needs are missing; "" when none are.
    Names the packages, the config key, and the two ways on: provide the data, or ask for the
    fallback in the config."""
    stops = [c for c in choices if c["uses"] and c["missing"]]
    if not stops:
        return ""
    lines = []
    for c in stops:
        lines += [
            f"NLTK data missing for {c['probe']}: {', '.join(c['missing'])}. Config key `{c['key']}` asks for "
            f"{c['methods'][0]} (value: {json.dumps(c['setting']) if c['setting'] is not None else 'not set; its default'}); "
            f"without the data it would fall back to {c['methods'][1]}, which gives other numbers, so the "
            "workflow stops instead of switching silently.",
            "Go on in one of these ways:",
            "  1. point NLTK_DATA at a folder that holds them (laid out as nltk.download() makes it):",
            "       export NLTK_DATA=/path/to/nltk_data     (`make` uses ../shared/data/nltk_data when it exists)",
            "     to fetch them on a machine with internet:",
            *[f"       python -c \"import nltk; nltk.download('{p}', download_dir='/path/to/nltk_data')\""
              for p in c["missing"]],
            f"  2. ask for the fallback explicitly: set `{c['key']}: {c['fallback']}` in the study's config",
            f"     (or in an overlay config given after it); the run then uses {c['methods'][1]}.",
        ]
    return "\n".join(lines)


# --- where they are --------------------------------------------------------------------------------
def search_paths() -> list[str]:
    """nltk.data.path: nltk's own list when nltk is already imported, else the list nltk builds on
    import (nltk/data.py: NLTK_DATA entries first, then ~/nltk_data and the system folders),
    computed without importing nltk."""
    data = sys.modules.get("nltk.data")
    if data is not None and hasattr(data, "path"):
        return [str(getattr(p, "path", p)) for p in data.path]
    paths = [os.path.expanduser(d) for d in os.environ.get("NLTK_DATA", "").split(os.pathsep) if d]
    if "APPENGINE_RUNTIME" not in os.environ and os.path.expanduser("~/") != "~/":
        paths.append(os.path.expanduser("~/nltk_data"))
    if os.name == "nt":
        appdata = os.environ.get("APPDATA")
        paths += [os.path.join(sys.prefix, "nltk_data"), os.path.join(sys.prefix, "share", "nltk_data"),
                  os.path.join(sys.prefix, "lib", "nltk_data")]
        paths += ([os.path.join(appdata, "nltk_data")] if appdata else []) + \
            [r"C:\nltk_data", r"D:\nltk_data", r"E:\nltk_data"]
    else:
        paths += [os.path.join(sys.prefix, "nltk_data"), os.path.join(sys.prefix, "share", "nltk_data"),
                  os.path.join(sys.prefix, "lib", "nltk_data"), "/usr/share/nltk_data",
                  "/usr/local/share/nltk_data", "/usr/lib/nltk_data", "/usr/local/lib/nltk_data"]
    return paths


def find_package(name: str, paths: Iterable[str | os.PathLike] | None = None) -> Path | None:
    """Where package `name` is installed: <root>/<category>/<name>/ (a non-empty folder) or
    <root>/<category>/<name>.zip, looked up as nltk.data.find does (folders on every search path
    first, then zips); None when absent. `paths` defaults to search_paths().
    Presence only: nltk >= 3.10 also refuses data in folders other accounts can write to."""
    roots = [Path(p) for p in (search_paths() if paths is None else paths)]
    categories = (PACKAGE_CATEGORY[name],) if name in PACKAGE_CATEGORY else CATEGORIES
    for root in roots:
        for category in categories:
            folder = root / category / name
            try:
                if folder.is_dir() and any(folder.iterdir()):
                    return folder
            except OSError:
                continue
    for root in roots:
        for category in categories:
            archive = root / category / f"{name}.zip"
            if archive.is_file():
                return archive
    return None


def missing_packages(packages: Iterable[str], paths: Iterable[str | os.PathLike] | None = None) -> list[str]:
    """The packages (in the given order, once each) that find_package does not find."""
    paths = None if paths is None else list(paths)
    return [p for p in _dedup(packages) if find_package(p, paths) is None]


def missing_by_user(required: dict[str, list[str]], paths=None) -> dict[str, list[str]]:
    """required_packages()'s answer reduced to what is missing, users with nothing missing left out."""
    paths = None if paths is None else list(paths)
    out = {user: missing_packages(pkgs, paths) for user, pkgs in required.items()}
    return {user: pkgs for user, pkgs in out.items() if pkgs}


# --- what to do when they are missing --------------------------------------------------------------
def offline_message(missing: dict[str, list[str]], dest: str = DEFAULT_DEST) -> str:
    """The message printed when packages are missing and cannot be downloaded: the packages, who
    needs them, and three ways to fix it. "" when nothing is missing."""
    missing = {user: pkgs for user, pkgs in missing.items() if pkgs}
    if not missing:
        return ""
    every = _dedup(p for pkgs in missing.values() for p in pkgs)
    lines = ["NLTK data missing (and not downloaded: no internet, or downloads not enabled):"]
    lines += [f"  - {user} needs: {', '.join(pkgs)}" for user, pkgs in missing.items()]
    lines += [
        "Fix it in one of these ways:",
        "  1. point NLTK_DATA at a folder that holds them, laid out as nltk.download() makes it",
        "     (corpora/, taggers/, tokenizers/, ...):",
        "       export NLTK_DATA=/path/to/nltk_data",
        "  2. on a machine with internet, download them, copy the folder here and do 1.:",
        *[f"       python -c \"import nltk; nltk.download('{p}', download_dir='/path/to/nltk_data')\""
          for p in every],
        "  3. run where nltk's server can be reached, with `nltk_download: auto` (the default): the",
        f"     workflow's download rule fetches them (verified against nltk's index) into {dest}.",
    ]
    return "\n".join(lines)


def package_digest(path: str | os.PathLike) -> str:
    """name@digest of an installed package (a .zip or a folder) from its files' names, sizes and
    CRC-32s (a zip's are in its directory, nothing is decompressed), for Snakemake params: another
    version of the data reruns what used it, a copy of the same data elsewhere does not."""
    path = Path(path)
    name = path.name.removesuffix(".zip")
    entries = []
    if path.is_file():
        with zipfile.ZipFile(path) as z:
            entries = [(i.filename.split("/", 1)[-1], i.file_size, i.CRC) for i in z.infolist() if not i.is_dir()]
    else:
        for f in sorted(path.rglob("*")):
            if f.is_file():
                data = f.read_bytes()
                entries.append((f.relative_to(path).as_posix(), len(data), zlib.crc32(data)))
    return f"{name}@{crc_digest(entries)}"


def server_reachable(url: str = DEFAULT_INDEX_URL, timeout: float = 3.0) -> bool:
    """Whether nltk's download server answers (a TCP connection to its host), within `timeout`."""
    import socket
    from urllib.parse import urlparse

    parsed = urlparse(url)
    if parsed.scheme == "file":
        return os.path.exists(parsed.path)
    try:
        with socket.create_connection((parsed.hostname, parsed.port or 443), timeout=timeout):
            return True
    except OSError:
        return False


# --- verified download -----------------------------------------------------------------------------
def _hashes(path: Path) -> tuple[str, str, int]:
    # md5 (what nltk's index gives) and sha256 in one read, not digests.file_sha256 and a second read
    md5, sha = hashlib.md5(), hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            md5.update(block)
            sha.update(block)
            size += len(block)
    return md5.hexdigest(), sha.hexdigest(), size


def _verify(info, archive: Path, index_url: str) -> dict:
    """The archive's md5/sha256/size, checked against the index entry `info`; raises on mismatch."""
    md5, sha, size = _hashes(archive)
    want_md5 = (getattr(info, "checksum", None) or "").lower()
    want_sha = (getattr(info, "sha256_checksum", None) or "").lower()
    problems = []
    if not want_md5 and not want_sha:
        problems.append("the index gives no checksum for it")
    if int(info.size) != size:
        problems.append(f"size {size} bytes, the index says {info.size}")
    if want_md5 and md5 != want_md5:
        problems.append(f"md5 {md5}, the index says {want_md5}")
    if want_sha and sha != want_sha:
        problems.append(f"sha256 {sha}, the index says {want_sha}")
    if problems:
        raise NLTKDataError(f"NLTK package {info.id!r} from {info.url} does not match the index {index_url}: "
                            + "; ".join(problems) + ". Nothing was installed.")
    return {"md5": md5, "sha256": sha, "size": size}


class _LogStream:
    """A file-like object for nltk's printed messages: each line goes to the log."""

    def __init__(self, log: logging.Logger):
        self.log, self.buf = log, ""

    def write(self, text: str) -> int:
        self.buf += text
        *lines, self.buf = self.buf.split("\n")
        for line in lines:
            if line.strip():
                self.log.info("%s", line)
        return len(text)

    def flush(self) -> None:
        if self.buf.strip():
            self.log.info("%s", self.buf)
        self.buf = ""


def _file_url_folder(url: str) -> str | None:
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme != "file":
        return None
    return os.path.dirname(urllib.request.url2pathname(parsed.path))


@contextlib.contextmanager
def _nltk_path_restored(nltk, extra: list[str]):
    """nltk.data.path with `extra` added, restored afterwards (the downloader adds its download
    folder to it, and nltk reads file:// URLs only below a folder on it)."""
    saved = list(nltk.data.path)
    nltk.data.path.extend(p for p in extra if p not in nltk.data.path)
    try:
        yield
    finally:
        nltk.data.path[:] = saved


def _no_group_write(path: Path) -> None:
    """nltk >= 3.10 refuses data in folders other accounts can write to."""
    mode = path.stat().st_mode & 0o7777
    if mode & 0o022:
        os.chmod(path, mode & ~0o022)


def _install(staged: Path, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    _no_group_write(final.parent)
    if final.is_dir() and not final.is_symlink():
        shutil.rmtree(final)
    elif final.exists() or final.is_symlink():
        final.unlink()
    os.replace(staged, final)


def download_packages(packages: Iterable[str], dest_dir: str | os.PathLike, log: logging.Logger,
                      index_url: str | None = None, manifest_path: str | os.PathLike | None = None) -> dict:
    """Download NLTK `packages` into `dest_dir` with nltk's downloader, verify each archive against
    the index and write the manifest (default <dest_dir>/manifest.json); returns the manifest.

    nltk downloads into a private staging folder inside dest_dir, unzipped (extract=True) beside the
    archive as nltk.download() leaves it. Every archive there is then checked again: size, md5 (the
    index's `checksum`) and sha256 (the index's `sha256_checksum`, where it has one; nltk itself
    checks only that one then). Only when all match are they moved into dest_dir/<category>/ and the
    manifest written (atomically). On any failure NLTKDataError is raised, the staging folder is
    removed, and dest_dir and the manifest are left as they were. A file:// index_url (a local mirror)
    is trusted: its folder is added to nltk.data.path for the download, as nltk reads file:// URLs only
    below one."""
    import nltk
    import nltk.downloader

    packages = _dedup(packages)
    if not packages:
        raise NLTKDataError("no NLTK packages to download")
    index_url = index_url or nltk.downloader.Downloader.DEFAULT_URL
    dest = Path(dest_dir).resolve()
    manifest_path = Path(manifest_path) if manifest_path else dest / "manifest.json"
    dest.mkdir(parents=True, exist_ok=True)
    _no_group_write(dest)
    for stale in dest.glob(STAGING_PREFIX + "*"):  # left by a killed earlier attempt
        shutil.rmtree(stale, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=dest))  # 0700: nltk wants it private
    trusted = [p for p in (_file_url_folder(index_url),) if p]
    messages = _LogStream(log)
    try:
        with _nltk_path_restored(nltk, trusted), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            downloader = nltk.downloader.Downloader(server_index_url=index_url, download_dir=str(staging))
            kwargs = dict(download_dir=str(staging), quiet=True, raise_on_error=True, print_error_to=messages)
            if "extract" in inspect.signature(downloader.download).parameters:
                kwargs["extract"] = True  # unzipped too, whoever installs where
            for name in packages:
                log.info("downloading NLTK package %s (index %s)", name, index_url)
                try:
                    ok = downloader.download(name, **kwargs)
                except Exception as e:  # nltk's ValueError, or anything its sandbox raises
                    raise NLTKDownloadFailed(f"could not download NLTK package {name!r} from the index {index_url}: "
                                        f"{e}. Nothing was installed.") from e
                finally:
                    messages.flush()
                if ok is False:
                    raise NLTKDownloadFailed(f"nltk could not download {name!r} from {index_url}. Nothing was installed.")
            index_packages = downloader.packages()
        for w in caught:
            log.info("nltk: %s", w.message)
        # every package whose archive nltk put in staging (the requested ones, a collection's members,
        # the successor nltk adds to a retired package)
        entries = {}
        for info in index_packages:
            archive = staging / info.filename
            if archive.is_file():
                entries[info.id] = (info, archive)
        absent = [n for n in packages if n not in entries and not _is_collection(downloader, n)]
        if absent:
            raise NLTKDataError(f"nltk reported success but installed no archive for {absent} "
                                f"from {index_url}. Nothing was installed.")
        records = {}
        for pid, (info, archive) in sorted(entries.items()):
            checked = _verify(info, archive, index_url)
            folder = archive.with_suffix("") if archive.suffix == ".zip" else None
            records[pid] = {
                "file": archive.relative_to(staging).as_posix(),
                "folder": folder.relative_to(staging).as_posix() if folder and folder.is_dir() else None,
                **checked, "url": info.url, "index_url": index_url,
            }
            log.info("verified NLTK package %s: %d bytes, md5 %s, sha256 %s", pid, checked["size"],
                     checked["md5"], checked["sha256"])
        for pid, rec in records.items():
            for rel in (rec["folder"], rec["file"]):
                if rel:
                    _install(staging / rel, dest / rel)
        manifest = {"index_url": index_url, "nltk": getattr(nltk, "__version__", None),
                    "requested": packages, "packages": records}
        write_json(manifest_path, manifest)
        log.info("installed NLTK packages %s into %s; manifest %s", sorted(records), dest, manifest_path)
        return manifest
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _is_collection(downloader, name: str) -> bool:
    try:
        return not hasattr(downloader.info(name), "filename")
    except Exception:
        return False


def prepend_nltk_data(folder: str | None) -> None:
    """Put `folder` (the workflow's download folder, Study.nltk_download_dir) before the user's
    NLTK_DATA in this process's environment, as a job that uses NLTK data needs it. nltk reads
    NLTK_DATA once, when imported: where it is imported already, its search path gets the folder
    too. None (no download folder planned): nothing changes."""
    if not folder:
        return
    previous = os.environ.get("NLTK_DATA")
    os.environ["NLTK_DATA"] = folder + (os.pathsep + previous if previous else "")
    if "nltk" in sys.modules:
        sys.modules["nltk"].data.path.insert(0, folder)


# ---- the jobs of rules/nltk_data.smk (workflow_scripts/jobs.py) ----
def run_nltk_download(job) -> None:
    """Download the packages into the manifest's folder (`index_url`, a mirror: optional param).
    A failure is logged with the offline message and fails the job."""
    log = setup_logging(name="nltk_data")
    dest = os.path.dirname(job.output[0])
    try:
        download_packages(list(job.params.packages), dest, log, job.params.get("index_url"), job.output[0])
    except NLTKDataError as e:
        log.error("%s", e)
        if isinstance(e, NLTKDownloadFailed):
            log.error("%s", offline_message({"the workflow": _dedup(job.params.packages)}, dest))
        raise SystemExit(1) from e
