"""NLTK data: which packages, where they are, verified downloads (from a fake local index), and the
message when they are missing. No network: the index is a file:// URL to an index.xml written here."""
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, shared_data
from workflow_scripts import nltk_data as nd
from workflow_scripts.jobs import make_job


# --- which packages --------------------------------------------------------------------------------
def test_required_packages_follow_the_config():
    assert nd.required_packages({}) == {}
    assert nd.required_packages({"sources": {"x": {"format": "treebank"}}}) == {}  # not the triplet probe's
    assert nd.required_packages({"triplets": {"sources": {"msrp": {"format": "csv"}}}}) == \
        {"triplets": ["averaged_perceptron_tagger_eng", "wordnet"]}
    config = {"triplets": {"sources": {"wsj": {"format": "treebank"}, "wsj2": {"format": "treebank"}}}}
    assert nd.required_packages(config) == {"triplets": ["averaged_perceptron_tagger_eng", "wordnet", "treebank"]}
    assert nd.required_packages({"triplets": {}}) == {"triplets": ["averaged_perceptron_tagger_eng", "wordnet"]}
    assert nd.required_packages({"triplets": {"enabled": False, "sources": {}}}) == {}
    # CSC's grammatical negation works without them: only asked for as optional
    csc = {"csc": {"perturb": {"grammatical_negation": {"enabled": True, "use_tagger": True}}}}
    assert nd.required_packages(csc) == {}
    assert nd.required_packages(csc, include_optional=True) == {"csc": ["averaged_perceptron_tagger_eng", "wordnet"]}
    csc["csc"]["perturb"]["grammatical_negation"]["use_tagger"] = False
    assert nd.required_packages(csc, include_optional=True) == {}


# --- where they are --------------------------------------------------------------------------------
def test_find_package_in_the_shared_nltk_data():
    root = shared_data("nltk_data")
    tagger = nd.find_package("averaged_perceptron_tagger_eng", [root])
    assert tagger == root / "taggers" / "averaged_perceptron_tagger_eng" and tagger.is_dir()
    assert nd.find_package("wordnet", [root]) == root / "corpora" / "wordnet.zip"
    assert nd.find_package("treebank", [root]) == root / "corpora" / "treebank.zip"
    assert nd.find_package("punkt_tab", [root]) == root / "tokenizers" / "punkt_tab"  # folder before zip
    assert nd.find_package("no_such_package_xyz", [root]) is None
    wanted = ["averaged_perceptron_tagger_eng", "wordnet", "treebank", "no_such_package_xyz", "wordnet"]
    assert nd.missing_packages(wanted, [root]) == ["no_such_package_xyz"]
    assert nd.missing_packages(wanted, [root / "corpora"]) == \
        ["averaged_perceptron_tagger_eng", "wordnet", "treebank", "no_such_package_xyz"]  # not an nltk_data root


def test_find_package_looks_where_nltk_looks(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "corpora").mkdir(parents=True)
    (a / "corpora" / "wordnet.zip").write_bytes(b"zip")
    (b / "corpora" / "wordnet").mkdir(parents=True)
    (b / "corpora" / "wordnet" / "index.verb").write_text("x")
    # folders on every path before zips, as nltk.data.find
    assert nd.find_package("wordnet", [a, b]) == b / "corpora" / "wordnet"
    (a / "taggers" / "averaged_perceptron_tagger_eng").mkdir(parents=True)  # empty: not installed
    (a / "corpora" / "averaged_perceptron_tagger_eng.zip").write_bytes(b"zip")  # wrong category
    assert nd.find_package("averaged_perceptron_tagger_eng", [a, b]) is None
    (a / "misc").mkdir()
    (a / "misc" / "some_unlisted.zip").write_bytes(b"zip")  # an unlisted package: every category
    assert nd.find_package("some_unlisted", [a]) == a / "misc" / "some_unlisted.zip"


def test_default_search_path_starts_with_nltk_data(tmp_path, monkeypatch):
    monkeypatch.delitem(sys.modules, "nltk.data", raising=False)  # the path nltk would build on import
    monkeypatch.setenv("NLTK_DATA", os.pathsep.join([str(tmp_path / "x"), str(tmp_path / "y")]))
    assert nd.search_paths()[:2] == [str(tmp_path / "x"), str(tmp_path / "y")]
    (tmp_path / "y" / "corpora").mkdir(parents=True)
    (tmp_path / "y" / "corpora" / "treebank.zip").write_bytes(b"zip")
    assert nd.find_package("treebank") == tmp_path / "y" / "corpora" / "treebank.zip"
    assert nd.missing_packages(["treebank", "no_such_package_xyz"]) == ["no_such_package_xyz"]


def test_module_loads_without_nltk():
    code = "import sys, workflow_scripts.nltk_data; assert 'nltk' not in sys.modules, 'nltk imported'"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


# --- a fake nltk data server -----------------------------------------------------------------------
def make_index(root: Path, packages: dict[str, dict[str, str]], tamper: dict | None = None) -> str:
    """A local nltk data server: root/packages/<subdir>/<id>.zip and root/index.xml listing them with
    the attributes the real index has (size, unzipped_size, checksum = md5 of the zip ...).
    tamper: {id: {attribute: value}} overrides what the index says. Returns the index's file:// URL."""
    lines = []
    for pid, files in packages.items():
        subdir = nd.PACKAGE_CATEGORY.get(pid, "corpora")
        archive = root / "packages" / subdir / f"{pid}.zip"
        archive.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(archive, "w") as z:
            for name, text in files.items():
                z.writestr(f"{pid}/{name}", text)
        data = archive.read_bytes()
        attrs = {"id": pid, "name": pid.title(), "subdir": subdir, "url": archive.as_uri(),
                 "size": str(len(data)), "unzipped_size": str(sum(len(t.encode()) for t in files.values())),
                 "checksum": hashlib.md5(data).hexdigest(), "unzip": "1", "license": "test"}
        attrs.update((tamper or {}).get(pid, {}))
        lines.append("<package " + " ".join(f'{k}="{v}"' for k, v in attrs.items()) + " />")
    index = root / "index.xml"
    index.write_text('<?xml version="1.0"?>\n<?xml-stylesheet href="index.xsl" type="text/xsl"?>\n'
                     "<nltk_data>\n<packages>\n" + "\n".join(lines) + "\n</packages>\n<collections>\n"
                     "</collections>\n</nltk_data>\n")
    return index.as_uri()


PACKAGES = {"wordnet": {"index.verb": "run 1\n", "verb.exc": "ran run\n"},
            "treebank": {"combined/wsj_0001.mrg": "( (S (NP-SBJ (NNP Pierre))))\n"}}


def installed(dest: Path) -> list[str]:
    return sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) if dest.exists() else []


def download_job(packages: list[str], manifest: Path, index_url: str):
    """The nltk_download job (rules/nltk_data.smk) of `packages`, from the index at `index_url`."""
    return make_job(output=[str(manifest)], params={"packages": packages, "index_url": index_url})


def test_download_from_a_local_index_writes_a_verified_manifest(tmp_path, log, capsys):
    import nltk
    url = make_index(tmp_path / "server", PACKAGES)
    dest, manifest_path = tmp_path / "nltk_data", tmp_path / "reports" / "nltk_data.json"
    before = list(nltk.data.path)
    manifest = nd.download_packages(["wordnet", "treebank"], dest, log, index_url=url, manifest_path=manifest_path)
    assert json.loads(manifest_path.read_text()) == manifest
    assert list(nltk.data.path) == before  # nothing left on nltk's search path
    assert manifest["index_url"] == url and manifest["requested"] == ["wordnet", "treebank"]
    assert set(manifest["packages"]) == {"wordnet", "treebank"}
    for pid in ("wordnet", "treebank"):
        served = (tmp_path / "server" / "packages" / "corpora" / f"{pid}.zip").read_bytes()
        rec = manifest["packages"][pid]
        assert rec["file"] == f"corpora/{pid}.zip" and rec["folder"] == f"corpora/{pid}"
        assert rec["md5"] == hashlib.md5(served).hexdigest()
        assert rec["sha256"] == hashlib.sha256(served).hexdigest()
        assert rec["size"] == len(served) and rec["index_url"] == url
        assert (dest / rec["file"]).read_bytes() == served
        assert nd.find_package(pid, [dest]) == dest / "corpora" / pid  # unzipped beside the archive
    assert (dest / "corpora" / "wordnet" / "verb.exc").read_text() == "ran run\n"
    assert not [p for p in dest.iterdir() if p.name.startswith(".tmp")]  # staging removed
    assert nd.missing_packages(["wordnet", "treebank"], [dest]) == []

    # the job does the same into its manifest's folder (again: replaces the installed copy), logging
    # to the rule's log (jobs.call sends stderr there)
    nd.run_nltk_download(download_job(["treebank"], dest / "m2.json", url))
    assert set(json.loads((dest / "m2.json").read_text())["packages"]) == {"treebank"}
    assert (dest / "corpora" / "treebank.zip").read_bytes() == \
        (tmp_path / "server" / "packages" / "corpora" / "treebank.zip").read_bytes()
    assert "verified NLTK package treebank" in capsys.readouterr().err


@pytest.mark.parametrize("tamper", [
    {"checksum": "0" * 32},  # md5 wrong: nltk's own check refuses it
    "sha256_right_md5_wrong",  # nltk checks only sha256 then; ours checks both
], ids=["md5", "md5_behind_sha256"])
def test_a_corrupted_package_is_refused_and_nothing_looks_installed(tmp_path, log, tamper):
    server = tmp_path / "server"
    make_index(server, PACKAGES)  # to learn the zip's bytes
    treebank_zip = (server / "packages" / "corpora" / "treebank.zip").read_bytes()
    if tamper == "sha256_right_md5_wrong":
        tamper = {"checksum": "0" * 32, "sha256_checksum": hashlib.sha256(treebank_zip).hexdigest()}
    url = make_index(server, PACKAGES, tamper={"treebank": tamper})
    dest, manifest_path = tmp_path / "nltk_data", tmp_path / "manifest.json"
    with pytest.raises(nd.NLTKDataError, match=r"treebank.*md5"):
        nd.download_packages(["wordnet", "treebank"], dest, log, index_url=url, manifest_path=manifest_path)
    assert not manifest_path.exists()
    assert installed(dest) == []  # not even the good wordnet: all or nothing
    assert nd.missing_packages(["wordnet", "treebank"], [dest]) == ["wordnet", "treebank"]
    with pytest.raises(SystemExit) as failed:  # the job fails
        nd.run_nltk_download(download_job(["treebank"], dest / "manifest.json", url))
    assert failed.value.code == 1
    assert not (dest / "manifest.json").exists() and installed(dest) == []


def test_a_failed_download_keeps_what_was_installed(tmp_path, log):
    url = make_index(tmp_path / "server", PACKAGES)
    dest = tmp_path / "nltk_data"
    nd.download_packages(["wordnet"], dest, log, index_url=url, manifest_path=tmp_path / "m.json")
    before = {p: (dest / p).read_bytes() for p in installed(dest) if (dest / p).is_file()}
    with pytest.raises(nd.NLTKDownloadFailed, match="no_such_package_xyz"):
        nd.download_packages(["wordnet", "no_such_package_xyz"], dest, log, index_url=url,
                             manifest_path=tmp_path / "m2.json")
    assert not (tmp_path / "m2.json").exists()
    assert {p: (dest / p).read_bytes() for p in installed(dest) if (dest / p).is_file()} == before


# --- what to do when they are missing --------------------------------------------------------------
def test_offline_message_names_the_packages_and_the_fixes():
    missing = {"triplets": ["averaged_perceptron_tagger_eng", "wordnet", "treebank"], "csc": ["wordnet"]}
    msg = nd.offline_message(missing)
    for pkg in ("averaged_perceptron_tagger_eng", "wordnet", "treebank"):
        assert f"nltk.download('{pkg}', download_dir=" in msg
    assert "triplets needs: averaged_perceptron_tagger_eng, wordnet, treebank" in msg
    assert "csc needs: wordnet" in msg
    assert "export NLTK_DATA=" in msg and "corpora/" in msg and "taggers/" in msg
    assert "nltk_download: auto" in msg and "results/nltk_data" in msg
    assert nd.offline_message({}) == nd.offline_message({"triplets": []}) == ""


def test_a_job_that_cannot_download_logs_the_offline_message(tmp_path, capsys):
    url = make_index(tmp_path / "server", PACKAGES)
    dest = tmp_path / "nltk_data"
    with pytest.raises(SystemExit) as failed:
        nd.run_nltk_download(download_job(["wordnet", "no_such_package_xyz"], dest / "manifest.json", url))
    err = capsys.readouterr().err
    assert failed.value.code == 1 and "no_such_package_xyz" in err
    assert "the workflow needs: wordnet, no_such_package_xyz" in err and "export NLTK_DATA=" in err
    assert f"fetches them (verified against nltk's index) into {dest}." in err  # the job's folder
    assert installed(dest) == []


def test_missing_packages_by_user_and_their_message(tmp_path):
    """What the workflow checks before any job (rules/common.smk): the packages each user lacks on
    the given paths, and the message naming them."""
    assert nd.missing_by_user({"triplets": ["wordnet", "no_such_package_xyz"]}, [tmp_path]) == \
        {"triplets": ["wordnet", "no_such_package_xyz"]}
    (tmp_path / "corpora" / "wordnet").mkdir(parents=True)
    (tmp_path / "corpora" / "wordnet" / "index.verb").write_text("x")
    assert nd.missing_by_user({"triplets": ["wordnet"]}, [tmp_path]) == {}
    config = {"triplets": {"sources": {"wsj": {"format": "treebank"}}}}
    missing = nd.missing_by_user(nd.required_packages(config), [tmp_path])
    assert missing == {"triplets": ["averaged_perceptron_tagger_eng", "treebank"]}
    assert "triplets needs: averaged_perceptron_tagger_eng, treebank" in nd.offline_message(missing)


def test_only_built_triplet_datasets_and_their_sources_need_packages():
    from workflow_scripts.nltk_data import required_packages
    sources = {"wsj": {"format": "treebank"}, "sick": {"format": "sick", "path": "x"}}
    own = {"triplets": {"sources": sources, "datasets": {"mine": {"file": "t.tsv"}}}}
    assert required_packages(own) == {}
    sick_only = {"triplets": {"sources": sources, "datasets": {"nv": {"sources": ["sick"]}}}}
    assert required_packages(sick_only) == {"triplets": ["averaged_perceptron_tagger_eng", "wordnet"]}
    with_wsj = {"triplets": {"sources": sources, "datasets": {"cr": {"sources": ["wsj"]}, "mine": {"file": "t"}}}}
    assert required_packages(with_wsj)["triplets"][-1] == "treebank"


def test_package_digest_follows_content_not_place(tmp_path):
    import zipfile
    from workflow_scripts.nltk_data import package_digest
    for where in ("a", "b"):
        (tmp_path / where).mkdir()
        with zipfile.ZipFile(tmp_path / where / "pkg.zip", "w") as z:
            z.writestr("pkg/data.txt", "same")
    assert package_digest(tmp_path / "a" / "pkg.zip") == package_digest(tmp_path / "b" / "pkg.zip")
    assert package_digest(tmp_path / "a" / "pkg.zip").startswith("pkg@")
    with zipfile.ZipFile(tmp_path / "b" / "pkg.zip", "w") as z:
        z.writestr("pkg/data.txt", "other")
    assert package_digest(tmp_path / "a" / "pkg.zip") != package_digest(tmp_path / "b" / "pkg.zip")
    folder = tmp_path / "dir" / "pkg"
    folder.mkdir(parents=True)
    (folder / "data.txt").write_text("same")
    assert package_digest(folder) == package_digest(tmp_path / "a" / "pkg.zip")  # unzipped: the same data


def test_retrieval_needs_punkt_only_for_3gpp_sets():
    from workflow_scripts.nltk_data import required_packages
    assert required_packages({"retrieval": {"datasets": {"qa": {"kind": "beir", "path": "x"}}}}) == {}
    assert required_packages({"retrieval": {"datasets": {"specs": {"kind": "3gpp"}}}}) == {"retrieval": ["punkt_tab"]}
