"""The one decision of the engine (:func:`groupcoord.assignors.engine.choose_engine`), from the facts of a call."""

from __future__ import annotations

import pytest

from groupcoord.assignors.algorithms import Group, Member, Partition
from groupcoord.assignors.engine import DRIVER_PARTITIONS, Facts, choose_engine, group_facts


def _facts(assignor: str, held: str, subscriptions: str, partitions: int | None) -> Facts:
    return Facts(assignor=assignor, held=held, subscriptions=subscriptions, partitions=partitions)  # type: ignore[arg-type]


@pytest.mark.parametrize("held", ["driver", "spark"])
@pytest.mark.parametrize("subscriptions", ["homogeneous", "heterogeneous"])
def test_weighted_always_runs_its_plan(held: str, subscriptions: str) -> None:
    engine = choose_engine(_facts("weighted", held, subscriptions, 10))
    assert engine == ("homogeneous plan" if subscriptions == "homogeneous" else "plan")


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky", "uniform"])
def test_groups_held_on_the_driver_run_in_python_up_to_the_threshold(assignor: str) -> None:
    assert choose_engine(_facts(assignor, "driver", "homogeneous", DRIVER_PARTITIONS)) == "python"
    assert choose_engine(_facts(assignor, "driver", "homogeneous", DRIVER_PARTITIONS + 1)) == "homogeneous plan"
    assert choose_engine(_facts(assignor, "driver", "homogeneous", 10), driver_partitions=0) == "homogeneous plan"


def test_past_the_threshold_only_a_heterogeneous_balanced_call_keeps_python() -> None:
    """The global balance iterates: no plan; range and roundrobin have a plan for any subscriptions."""
    big = DRIVER_PARTITIONS + 1
    assert choose_engine(_facts("sticky", "driver", "heterogeneous", big)) == "python tasks"
    assert choose_engine(_facts("range", "driver", "heterogeneous", big)) == "plan"


def test_a_dataframe_call_runs_python_only_when_it_holds_a_heterogeneous_group() -> None:
    assert choose_engine(_facts("sticky", "spark", "homogeneous", 10)) == "homogeneous plan"
    assert choose_engine(_facts("range", "spark", "heterogeneous", 10)) == "plan"
    assert choose_engine(_facts("uniform", "spark", "heterogeneous", 10)) == "python"
    assert choose_engine(_facts("uniform", "spark", "heterogeneous", None)) == "python tasks"  # not collected
    assert choose_engine(_facts("uniform", "spark", "heterogeneous", 10), driver_partitions=0) == "python tasks"


def test_subscriptions_stated_alike_are_no_proof() -> None:
    assert choose_engine(_facts("cooperative-sticky", "spark", "unknown", None)) == "plan"


def test_group_facts_count_partitions_and_compare_declared_topic_sets() -> None:
    alike = Group((Member("a", ("t1", "t2")), Member("b", ("t2", "t1", "t1"))),
                  tuple(Partition(t, p) for t in ("t1", "t2") for p in range(3)))
    facts = group_facts("sticky", [alike, alike])
    assert (facts.held, facts.subscriptions, facts.partitions) == ("driver", "homogeneous", 12)
    # "absent" has no partition, but the members declare different topics: the plan's proof compares declarations
    differ = Group((Member("a", ("t1",)), Member("b", ("t1", "absent"))), (Partition("t1", 0),))
    assert group_facts("sticky", [alike, differ]).subscriptions == "heterogeneous"
