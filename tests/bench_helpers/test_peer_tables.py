"""The side-by-side tables of the peer benchmarks: both sides' figures in one row, and ratios that read one way."""

from __future__ import annotations

from bench.peer_targets import GROUPCOORD, KAFKA, ratio, side_by_side


def test_ratios_are_above_one_when_groupcoord_is_faster_for_times_and_rates() -> None:
    assert ratio("p50_s", 2.0, 1.0) == 2.0  # groupcoord took half the time
    assert ratio("offsets_per_s", 100.0, 50.0) == 0.5  # groupcoord committed half as many per second
    assert ratio("p99_s", None, 1.0) is None
    assert ratio("p99_s", 1.0, 0.0) is None


def test_side_by_side_merges_the_sides_of_each_case() -> None:
    rows = [{"side": KAFKA, "case": "a", "p50_s": 1.0, "errors": 0},
            {"side": GROUPCOORD, "case": "a", "p50_s": 4.0, "errors": 2},
            {"side": KAFKA, "case": "b", "p50_s": 3.0, "errors": 1}]

    table = side_by_side(rows, ("case",), ("p50_s",), extras=("errors",))

    assert table == [
        {"case": "a", "kafka_p50_s": 1.0, "groupcoord_p50_s": 4.0, "p50_s_ratio": 0.25, "kafka_errors": 0,
         "groupcoord_errors": 2},
        {"case": "b", "kafka_p50_s": 3.0, "groupcoord_p50_s": None, "p50_s_ratio": None, "kafka_errors": 1,
         "groupcoord_errors": None},
    ]


def test_a_p99_needs_a_hundred_samples() -> None:
    """Below 100 samples there is no p99 (the maximum is reported beside it); from 100 on, the nearest rank."""
    from bench.loadgen import MIN_SAMPLES_FOR_P99, p99_or_none, percentile

    few = [i / 1000 for i in range(MIN_SAMPLES_FOR_P99 - 1)]
    assert p99_or_none(few) is None
    assert percentile(few, 1.0) == 98.0
    enough = [i / 1000 for i in range(200)]
    assert p99_or_none(enough) == 198.0


def test_sides_alternate_and_runs_fold_into_medians_with_their_spread() -> None:
    from bench.peer_targets import alternated, medians

    assert alternated(3) == [(0, "kafka"), (0, "groupcoord"), (1, "groupcoord"), (1, "kafka"), (2, "kafka"),
                             (2, "groupcoord")]
    rows = [{"side": "kafka", "case": "c", "rate": rate, "p99": p99, "extra": i}
            for i, (rate, p99) in enumerate([(10.0, 1.0), (30.0, None), (20.0, 3.0)])]
    (merged,) = medians(rows, ("case",), ("rate", "p99"), totals=("extra",))
    assert merged == {"side": "kafka", "case": "c", "rate": 20.0, "rate_spread": "10.0-30.0", "p99": None,
                      "p99_spread": None, "extra": 3, "repetitions": 3}
