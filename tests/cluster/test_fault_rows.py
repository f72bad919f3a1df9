"""``bench.cluster_faults --from-rows FILE --merge``: the drills one run recorded replace the same drills' rows of the
recorded results and keep the others, and a driver pair's row gets checks of its own (the 60 s target among them),
apart from the single driver's. No cluster: rows only."""

from __future__ import annotations

from typing import Any

from bench.cluster_faults import merge_rows, setup_label


def row(engine: str, fault: str, seconds: float, **more: Any) -> dict[str, Any]:
    return {"engine": engine, "fault": fault, "all_flowing_again_s": seconds, **more}


def test_new_rows_replace_the_same_drills_in_place_and_others_are_kept() -> None:
    previous = [row("structured", "executor", 6.2), row("structured", "driver", 89.9), row("members", "driver", 42.8)]
    new = [row("structured", "driver", 70.0, drivers=1), row("structured", "driver", 25.0, drivers=2)]
    merged = merge_rows(previous, new)
    assert [(r["engine"], r["fault"], r["drivers"], r["all_flowing_again_s"]) for r in merged] == [
        ("structured", "executor", 1, 6.2), ("structured", "driver", 1, 70.0), ("members", "driver", 1, 42.8),
        ("structured", "driver", 2, 25.0)]
    assert all(list(r)[:3] == ["engine", "fault", "drivers"] for r in merged)


def test_a_pairs_row_is_labelled_apart_from_the_single_drivers() -> None:
    assert setup_label(row("structured", "driver", 1.0)) == "structured"
    assert setup_label(row("structured", "driver", 1.0, drivers=1)) == "structured"
    assert setup_label(row("structured", "driver", 1.0, drivers=2)) == "structured, pair"
