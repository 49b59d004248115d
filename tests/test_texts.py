"""texts.write_dataset: the three outputs every probe's dataset rule writes (items, text set, build report)."""
import json

import polars as pl

from workflow_scripts.texts import text_keys, write_dataset


def test_write_dataset_writes_items_text_set_and_report(tmp_path):
    frame = pl.DataFrame({"id": [1, 2, 3], "a": ["x y", "z", "x y"], "b": ["w", "w", "v"]})
    texts = frame["a"].to_list() + frame["b"].to_list()
    files = [str(tmp_path / "texts" / f"part-{p:03d}.parquet") for p in range(2)]
    given = {"dataset": "d", "texts": "replaced"}
    report = write_dataset(frame, str(tmp_path / "items.parquet"), texts, files, given, str(tmp_path / "r.json"))
    assert pl.read_parquet(tmp_path / "items.parquet").equals(frame)
    written = pl.concat([pl.read_parquet(f) for f in files])
    # six texts, four of them unique: "x y", "z", "w", "v", each once, under its key
    assert sorted(written["text"]) == ["v", "w", "x y", "z"]
    assert sorted(written["text_key"].to_list()) == sorted(text_keys(["v", "w", "x y", "z"]).tolist())
    assert report == {"dataset": "d", "texts": {"texts": 6, "unique_texts": 4, "partitions": 2}}
    assert json.loads((tmp_path / "r.json").read_text()) == report and given["texts"] == "replaced"
    other = write_dataset(frame, str(tmp_path / "i2.parquet"), texts, files, {}, str(tmp_path / "r2.json"),
                          counts_key="partitions")
    assert other == {"partitions": {"texts": 6, "unique_texts": 4, "partitions": 2}}
