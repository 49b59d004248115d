"""Domain shift's bootstrap in blocks: `bootstrap_b` is capped in the schema like every other probe's
B, the replicates are accumulated block by block so memory follows the block and not B x pairs
(`max_texts: 2000` at the default B once needed ~6.4 GB per weight array), and the blocks draw the
same numbers in the same order, so the results are those of one block, bit for bit."""
import json
import tracemalloc

import numpy as np
import pytest
import yaml

from workflow_runner import ROOT
from workflow_scripts.config import ConfigError, validate
from workflow_scripts.domain_shift import scores as S

DEFAULT = yaml.safe_load((ROOT / "config.yaml").read_text())


def _case(n_spec: int, n_agn: int, seed: int = 0, zero_rows: int = 0):
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n_spec + n_agn, 12))
    v[:n_spec] += 0.7
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    v[:zero_rows] = np.nan  # zero-norm texts: NaN cosines, dropped from the distributions
    groups = np.array(["specific"] * n_spec + ["agnostic"] * n_agn)
    return S.pair_similarities(v[:n_spec], v[n_spec:]), groups


@pytest.mark.parametrize("b", [10 ** 9, 100_001])
def test_bootstrap_b_is_capped_like_the_other_probes(b):
    config = {**DEFAULT, "domain_shift": {**DEFAULT["domain_shift"], "bootstrap_b": b}}
    with pytest.raises(ConfigError, match=rf"config key `domain_shift.bootstrap_b`: {b} is greater than the maximum "
                                          r"of 100000"):
        validate(config)
    config["domain_shift"]["bootstrap_b"] = 100_000
    assert validate(config)["domain_shift"]["bootstrap_b"] == 100_000


def test_blocks_draw_the_same_numbers_as_one_block_bit_for_bit():
    sims, groups = _case(23, 17, zero_rows=2)
    b = 37
    one_means, one_overlaps = S.bootstrap(sims, groups, b, 0.001, 5, "d", "m", block=b)
    assert all(np.isfinite(one_overlaps[pair]).sum() > b / 2 for pair in S.COMPARISONS)
    for block in (1, 4, 16, 36):
        means, overlaps = S.bootstrap(sims, groups, b, 0.001, 5, "d", "m", block=block)
        for name in S.DISTRIBUTIONS:
            assert means[name].tobytes() == one_means[name].tobytes(), (block, name)
        for pair in S.COMPARISONS:
            assert overlaps[pair].tobytes() == one_overlaps[pair].tobytes(), (block, pair)


def test_analyse_in_small_blocks_gives_the_same_summary(monkeypatch):
    sims, groups = _case(30, 25, seed=3)
    settings = {"grid_step": 0.001, "exact_kde_max_n": 200, "bootstrap_b": 50}
    whole = S.analyse(sims, 55, groups, settings, 13, "d", "m")
    monkeypatch.setattr(S, "REPLICATE_BLOCK", 3)
    blocked = S.analyse(sims, 55, groups, settings, 13, "d", "m")
    assert json.dumps(blocked[0]) == json.dumps(whole[0]) and blocked[1].equals(whole[1])


def test_replicate_memory_follows_the_block_not_b(monkeypatch):
    """Peak traced allocation of a whole analysis (exact_kde_max_n tiny, so the point estimates are
    binned and small) at B = 20 and B = 200, five replicates a block: before blocking, B x pairs
    weights and B densities per distribution made the second ~2x the first (27 MB vs 13 MB here)."""
    monkeypatch.setattr(S, "REPLICATE_BLOCK", 5, raising=False)
    sims, groups = _case(60, 60)
    peaks = {}
    for b in (2, 20, 200):  # the first call warms imports and caches
        tracemalloc.start()
        try:
            S.analyse(sims, 120, groups, {"grid_step": 0.001, "exact_kde_max_n": 2, "bootstrap_b": b}, 1, "d", "m")
            peaks[b] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peaks[200] < 1.5 * peaks[20], {b: f"{p / 1e6:.2f} MB" for b, p in peaks.items()}
    # one block of the largest distribution (3,600 `between` pairs): weights 5 x 3,600 float64
    assert peaks[200] < 8e6, f"{peaks[200] / 1e6:.1f} MB"


def test_no_block_of_one_replicate_unless_b_is_one():
    """A one-row block's weights are contiguous, and BLAS's dot rounds them differently from the
    strided rows of a larger block: a leftover replicate joins the block before it."""
    assert S.block_sizes(37, 37) == [37] and S.block_sizes(1, 200) == [1]
    assert S.block_sizes(37, 1) == [2] * 17 + [3] and S.block_sizes(201, 200) == [201]
    assert S.block_sizes(10, 4) == [4, 4, 2] and sum(S.block_sizes(100_000, 7)) == 100_000


def test_block_size_keeps_a_blocks_weights_under_the_budget():
    assert S.replicate_block(19_900) == S.REPLICATE_BLOCK  # the default max_texts: B = 200 in one block
    pairs = 2000 * 2000  # max_texts 2000: the `between` pairs
    block = S.replicate_block(pairs)
    assert 1 <= block < S.REPLICATE_BLOCK and block * pairs * 8 <= S.BLOCK_BYTES
    assert S.replicate_block(10 ** 9) == 1
