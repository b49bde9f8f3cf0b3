"""The report: evaluation hangs at the end of an epoch whose last shard is empty."""

from metrics import global_max, global_mean
from tests.ranks import run_ranks, shards


def test_even_shards(seed):
    return run_ranks(global_mean, shards(seed, [64, 64]))


def test_max_of_even_shards(seed):
    return run_ranks(global_max, shards(seed, [32, 32], scale=10.0))


def test_one_rank_has_no_examples(seed):
    # 64 validation examples over two ranks, sharded so that the second gets none.
    return run_ranks(global_mean, shards(seed, [64, 0]))
