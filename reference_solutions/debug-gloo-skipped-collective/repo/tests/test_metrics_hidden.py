"""Hidden tests: other world sizes, other ranks empty, shards of different sizes."""

from metrics import global_max, global_mean
from tests.ranks import run_ranks, shards


def test_three_ranks_middle_empty(seed):
    return run_ranks(global_mean, shards(seed, [37, 0, 5]))


def test_first_rank_empty_uneven(seed):
    return run_ranks(global_mean, shards(seed, [0, 3, 90], scale=4.0))


def test_uneven_shards(seed):
    return run_ranks(global_mean, shards(seed, [1, 50, 7]))


def test_no_rank_has_examples(seed):
    return run_ranks(global_mean, shards(seed, [0, 0]))


def test_max_with_an_empty_rank(seed):
    return run_ranks(global_max, shards(seed, [0, 12, 3], scale=-1.0))
