"""The HTML report as a person sees it: a small finished run of all five probes (scratch directory),
`snakemake --report results/report.html`, then the page opened in headless Chromium (Debian's
`chromium`; `.ci/run` installs it) over the DevTools protocol on a pipe (no Python package needed):
it must render without script errors, show every probe's category and the provenance on the first
screen, and show a plot with a non-zero natural size. Screenshots of the first screen and of the
plot go to results/report_screenshots/ (git-ignored; a CI artifact).

The overview table is checked against the probes' own tables here too. About 2 minutes on 2 cores."""
import base64
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import polars as pl
import pytest

from helpers import EN, NL, TRIPLETS, tiny_bert
from workflow_runner import ROOT, SNAKEMAKE, snakemake, write_config
from workflow_scripts.report.pages import CATEGORIES

# slow tier (make test-slow): a five-probe run, its HTML report and a headless Chromium
pytestmark = pytest.mark.slow

SCREENSHOTS = Path(os.environ.get("REPORT_SCREENSHOTS", ROOT / "results" / "report_screenshots"))
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
PROBES = ("csc", "triplets", "montague", "retrieval", "settheory")

SAMPLES = [("The ferry left at noon.", "It carried forty cars.", "The sea was calm.",
            "The ferry left at noon with forty cars.", "It carried forty cars on a calm sea."),
           ("The bakery burned down.", "No one was hurt.", "The owners will rebuild.",
            "The bakery burned down but no one was hurt.", "No one was hurt and the owners will rebuild."),
           ("The team won the cup.", "The striker scored twice.", "Fans cheered all night.",
            "The team won the cup as the striker scored twice.", "The striker scored twice and fans cheered."),
           ("The library reopened.", "It has a new roof.", "Children read in the hall.",
            "The library reopened with a new roof.", "It has a new roof and children read in the hall.")]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    base = tmp_path_factory.mktemp("report")
    (base / "bitext.txt").write_text("".join(f"{e}\t{n}\n" for e, n in zip(EN, NL)))
    (base / "mine.tsv").write_text("id\ts\ts_plus\ts_star\n"
                                   + "".join(f"{i}\t{a}\t{b}\t{c}\n" for i, (a, b, c) in enumerate(TRIPLETS)))
    pl.DataFrame(SAMPLES, schema=["previous", "S0", "next", "S1", "S2"], orient="row").write_csv(base / "samples.csv")
    bert = tiny_bert(base / "bert", sentences=EN + NL)
    config = {
        "seed": 3, "shard_rows": 100, "embedding_partitions": 1, "results": "results",
        "sources": {"mini": {"format": "bitext", "path": str(base / "bitext.txt"), "languages": ["en", "nl"]}},
        "corpora": {"mini_en": {"source": "mini", "language": "en"}},
        "models": {"form_only": {"family": "surface_form"},  # the yardstick: verdicts on the first screen
                   "tfidf": {"family": "tfidf"},
                   "hashing": {"family": "hashing", "dim": 16, "probes": ["csc", "retrieval"]},  # fewer jobs
                   "bert": {"family": "transformers", "path": str(bert), "device": "cpu", "probes": ["csc"]}},
        "csc": {"exact_kde_max_n": 50, "bootstrap_b": 20,
                "perturb": {"grammatical_negation": {"enabled": True, "languages": ["en"], "use_tagger": False}}},
        "triplets": {"datasets": {"mine": {"file": str(base / "mine.tsv")}}, "bootstrap_b": 50},
        "montague": {"datasets": {"lists": {"adjectives": {"intersective": ["red", "old"], "privative": ["fake"]},
                                            "nouns": ["dog", "king", "cat"]}},
                     "bootstrap_b": 50},
        "retrieval": {"datasets": {"qa": {"kind": "beir", "path": str(ROOT / "resources" / "retrieval" / "telecom_qa")}},
                      "k": {"min": 5, "max": 10, "step": 5}, "draws": {"count": 10, "size": 20, "replace": False},
                      "bootstrap_b": 50, "thresholds": {"draws": 20}},
        "settheory": {"datasets": {"stab": {"file": str(base / "samples.csv"), "generator": "hand-written (test)"}},
                      "filter": {"encoders": []}, "bootstrap_b": 50},
    }
    run = base / "run"
    run.mkdir()
    path = write_config(run, config)
    snakemake(run, path)
    start = time.monotonic()
    snakemake(run, path, "--report", "results/report.html")
    return {"run": run, "res": run / "results", "config": config, "report_seconds": time.monotonic() - start}


def test_overview_cells_are_the_probes_own_figures(study):
    res = study["res"]
    ov = pl.read_csv(res / "tables" / "overview.csv")
    assert ov["model"].to_list() == ["form_only", "tfidf", "hashing", "bert"]
    assert ov.filter(pl.col("model") == "hashing")["stand_in"].to_list() == [True]
    assert ov.filter(pl.col("model") == "tfidf")["stand_in"].to_list() == [False]
    csc = pl.read_csv(res / "tables" / "csc_overlap.csv")
    for r in csc.iter_rows(named=True):
        row = ov.filter(pl.col("model") == r["model"]).row(0, named=True)
        col = f"csc_{r['corpus']}_{r['condition']}"
        for suffix, key in (("", "within_auc"), ("_ci_low", "within_auc_ci_low"), ("_ci_high", "within_auc_ci_high")):
            if r[key] is None or r[key] != r[key]:  # an undefined overlap (NaN) is an empty cell
                assert row[col + suffix] is None, (col, suffix)
            else:
                assert row[col + suffix] == pytest.approx(r[key], abs=1e-6), (col, suffix)
    acc = pl.read_csv(res / "tables" / "triplets_accuracy.csv").filter(pl.col("model") == "tfidf").row(0, named=True)
    tfidf = ov.filter(pl.col("model") == "tfidf").row(0, named=True)
    assert tfidf["triplets_mine"] == pytest.approx(acc["accuracy"], abs=1e-6)
    assert tfidf["triplets_mine_ci_high"] == pytest.approx(acc["accuracy_ci_high"], abs=1e-6)
    ret = pl.read_csv(res / "tables" / "retrieval_accuracy.csv").filter((pl.col("model") == "hashing") & (pl.col("k") == 5))
    hashing = ov.filter(pl.col("model") == "hashing").row(0, named=True)
    assert hashing["retrieval_qa_acc@5"] == pytest.approx(ret["accuracy_full"][0], abs=1e-6)
    assert hashing["retrieval_qa_ndcg@5_ci_low"] == pytest.approx(ret["ndcg_full_ci_low"][0], abs=1e-6)
    st = pl.read_csv(res / "tables" / "settheory_shares.csv").filter(
        (pl.col("model") == "tfidf") & (pl.col("criterion") == "c3") & (pl.col("case") == "T,T") & (pl.col("measure") == "cosine"))
    assert tfidf["settheory_stab_c3_TT"] == pytest.approx(st["share"][0], abs=1e-6)
    mon = pl.read_csv(res / "tables" / "montague_nonsubsective.csv").filter(
        (pl.col("model") == "tfidf") & (pl.col("key") == "privative"))
    assert tfidf["montague_lists_nonsubsective_privative"] == pytest.approx(mon["consistency"][0], abs=1e-6)
    # a model limited to CSC has no figures of the other probes; every figure has its interval columns,
    # both ends or neither (a percentile interval need not contain the estimate: 9 sentences here)
    bert = ov.filter(pl.col("model") == "bert").row(0, named=True)
    assert bert["triplets_mine"] is None and bert["csc_mini_en_negation"] is not None
    figures = [c for c in ov.columns if c not in ("model", "family", "stand_in") and not c.endswith("_ci_low")
               and not c.endswith("_ci_high")]
    assert len(figures) == 10 and all(f"{c}_ci_low" in ov.columns and f"{c}_ci_high" in ov.columns for c in figures)
    for c in figures:
        for lo, hi in zip(ov[f"{c}_ci_low"], ov[f"{c}_ci_high"]):
            assert (lo is None) == (hi is None) and (lo is None or lo <= hi + 1e-12), c
    # the Markdown report carries the same overview, with each figure's direction and n; the inputs are
    # the test's own (not all shipped samples): no demo banner
    md = (res / "report.md").read_text()
    overview = md.split("# Overview: every model against the surface-form baseline", 1)[1]
    row = next(line for line in overview.splitlines() if line.startswith("| triplets_mine |")).split(" | ")
    assert row[1:3] == ["\u2191 higher", f"{acc['n']} triplets"]  # n with its unit (issue 32)
    assert row[3].startswith(f"{tfidf['triplets_mine']:.3f} [{tfidf['triplets_mine_ci_low']:.3f}, ")
    assert "| csc_mini_en_negation | \u2191 higher |" in overview and "Demo inputs" not in md


def test_report_is_self_contained_and_built_quickly(study):
    html = (study["res"] / "report.html").read_text()
    assert "<script src=" not in html and "<link " not in html  # every asset inlined: nothing is fetched
    for probe in PROBES + ("overview", "inputs", "runtime"):
        assert json.dumps(CATEGORIES[probe]) in html, probe
    # the provenance on the first screen: stand-in flagged, the data's sha256, the seed, versions
    assert "Stand-in results: hashing" in html and "snakemake 9." in html
    assert hashlib.sha256((study["run"].parent / "bitext.txt").read_bytes()).hexdigest() in html
    assert study["report_seconds"] < 60
    jobs = pl.read_csv(study["res"] / "benchmarks" / "jobs.csv")
    assert {"embed", "csc_score", "triplets_score"} <= set(jobs["rule"]) and (jobs["seconds"] > 0).all()


def test_every_table_of_the_run_is_a_report_page(study):
    """Each CSV under results/tables is a page of the HTML report (the length buckets are on the Inputs
    page), per-dataset tables in their dataset's subcategory beside its plots, with the file's rows."""
    res = study["res"]
    tables = {p.stem for p in (res / "tables").glob("*.csv")} - {"length_buckets"}
    assert {"triplets_mine", "retrieval_accuracy", "settheory_shares", "settheory_histograms"} <= tables
    pages = {p.stem for p in (res / "report" / "tables").glob("*.html")}
    assert tables <= pages, sorted(tables - pages)
    page = (res / "report" / "tables" / "triplets_mine.html").read_text()
    rows = pl.read_csv(res / "tables" / "triplets_mine.csv").height
    assert f"{rows} rows; the file: <code>tables/triplets_mine.csv</code>" in page
    html = (res / "report.html").read_text()
    assert "triplets_mine.html" in html and "settheory_histograms.html" in html


class DevTools:
    """Chromium's DevTools protocol over --remote-debugging-pipe (fd 3: commands in, fd 4: replies out)."""

    def __init__(self, profile: Path, width=1400, height=900):
        cmd_r, self.cmd_w = os.pipe()
        self.res_r, res_w = os.pipe()
        # above fd 4, so that placing them at 3 and 4 in the child cannot overwrite one with the other
        hi_cmd, hi_res = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 100), fcntl.fcntl(res_w, fcntl.F_DUPFD, 100)

        def child():
            os.dup2(hi_cmd, 3)
            os.dup2(hi_res, 4)
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions", f"--user-data-dir={profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=False, preexec_fn=child)
        for fd in (cmd_r, res_w, hi_cmd, hi_res):
            os.close(fd)
        self.buffer, self.next_id, self.events, self.session = b"", 0, [], None
        self.width, self.height = width, height

    def send(self, method: str, params: dict | None = None, timeout: float = 30) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self.read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def read(self, deadline: float) -> dict:
        import select
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.res_r], [], [], left)[0]:
                raise TimeoutError("no reply from Chromium")
            chunk = os.read(self.res_r, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe")
            self.buffer += chunk
        msg, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(msg)

    def open(self, url: str) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.2)
        raise TimeoutError(f"never true: {expression}")

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def errors(self) -> list[str]:
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e.get("method") == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                out.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")
            elif e.get("method") == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append("console.error: " + " ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif e.get("method") == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(f"log: {p['entry']['text']} {p['entry'].get('url', '')}")
        return out

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.cmd_w)
        os.close(self.res_r)


@pytest.fixture
def browser():
    if CHROMIUM is None:
        pytest.skip("no Chromium: install Debian's `chromium` (apt-get install chromium; .ci/run does) to open the report")
    with tempfile.TemporaryDirectory() as profile:
        tools = DevTools(Path(profile))
        try:
            yield tools
        finally:
            tools.close()


def test_report_renders_in_chromium(study, browser):
    report = study["res"] / "report.html"
    browser.open(report.as_uri())
    # rendered: the loading screen gone, the app's menu shows the categories
    browser.wait_for("document.querySelector('#app') && document.querySelector('#app').innerText.includes('Overview')", 60)
    heat_map = "document.querySelector('#app img[alt=\"model-by-probe overview\"]')"
    browser.wait_for(f"!!{heat_map}", 30)  # the overview heat map on the first screen
    text = browser.evaluate("document.querySelector('#app').innerText")
    for probe in PROBES + ("overview", "inputs", "runtime"):
        assert CATEGORIES[probe] in text, f"category {CATEGORIES[probe]} not shown"
    for shown in ("Stand-in results: hashing", "Models", "Data sources", "Seed", "\u2191 higher"):
        assert shown in text, shown
    # the overview opens the first screen: before the introduction and the provenance
    assert text.index("\u2191 higher") < text.index("Does an embedding model") < text.index("Data sources")
    browser.evaluate("document.querySelectorAll('*').forEach(e => { e.scrollTop = 0; }); window.scrollTo(0, 0)")
    browser.screenshot(SCREENSHOTS / "first_screen.png")
    # issue 45, point 5: at 1400 px nothing scrolls sideways (the rule graph sits below the overview;
    # a table wider than the text column scrolls in itself), and the answer opens the screen: one line
    # per model, then the legend, then the verdict tables
    wide = browser.evaluate("JSON.stringify([...document.querySelectorAll('#app div')].filter(e => "
                            "getComputedStyle(e).overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1 "
                            "&& !e.querySelector('table.overview')).map(e => e.className))")
    assert json.loads(wide) == [], wide
    assert browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert text.index("vs the baseline:") < text.index("n below report.min_n") < text.index("verdict vs baseline")
    rulegraph = browser.evaluate("(() => { const g = document.querySelector('#rulegraph'); const t = "
                                 "document.querySelector('table.verdicts'); return g && t ? "
                                 "g.getBoundingClientRect().top > t.getBoundingClientRect().top : null; })()")
    assert rulegraph, "the rule graph is beside or above the verdicts"
    heat = browser.evaluate(f"(() => {{ const i = {heat_map}; return [i.complete, i.naturalWidth, i.naturalHeight]; }})()")
    assert heat[0] and heat[1] > 0 and heat[2] > 0
    # one plot, opened from the CSC category as a reader would: the category, then its image
    browser.evaluate(f"app.showCategory({json.dumps(CATEGORIES['csc'])})")
    path = browser.evaluate("Object.keys(results).find(k => k.includes('/plots/csc/') && results[k].mime_type === 'image/png')")
    assert path, "no CSC plot in the report"
    browser.evaluate(f"app.setView({{content: 'img', contentPath: results[{json.dumps(path)}].data_uri, "
                     f"resultPath: {json.dumps(path)}}})")
    size = browser.wait_for("(() => { const i = [...document.querySelectorAll('img')].find(x => x.src.startsWith('data:image/png') "
                            "&& x.closest('#app') && !x.alt); return i && i.complete && i.naturalWidth > 0 "
                            "? [i.naturalWidth, i.naturalHeight] : null; })()", 20)
    assert size[0] > 100 and size[1] > 100
    browser.screenshot(SCREENSHOTS / "plot.png")
    assert browser.errors() == [], browser.errors()
