"""Where a driver's coordinator listens and what it advertises (``groupcoord.spark.driver_address``): a numeric address
the executors can route to, and a loopback one refused unless the master runs on loopback too. Names resolve through a
fixed table here, so every case is the same on any machine."""

from __future__ import annotations

import pytest

from groupcoord.spark.driver_address import (
    CoordinatorEndpoint,
    DriverAddressError,
    advertised_host,
    endpoint_for,
    master_on_loopback,
)

HOSTS = {
    "localhost": ["127.0.0.1", "::1"],
    "debian-box": ["127.0.1.1"],  # Debian's /etc/hosts line for the machine's own name
    "driver-1": ["10.0.0.5"],
    "dual": ["::1", "10.0.0.7"],
    "master-1": ["10.0.0.2"],
    "driver-svc": ["10.96.0.12"],
}


def resolver(host: str) -> list[str]:
    if host in HOSTS:
        return HOSTS[host]
    if host[0].isdigit() or ":" in host:
        return [host]
    raise DriverAddressError(f"spark.driver.host {host!r} does not resolve")


@pytest.mark.parametrize(("master", "expected"), [
    ("local[4,4]", True), ("local", True), ("local-cluster[2,1,1024]", True),
    ("spark://127.0.0.1:7077", True), ("spark://localhost:7077,127.0.0.2:7078", True),
    ("spark://127.0.0.1:7077,master-1:7077", False), ("spark://master-1:7077", False),
    ("yarn", False), ("k8s://https://127.0.0.1:6443", False), ("spark://nowhere:7077", False),
])
def test_which_masters_run_on_loopback(master: str, expected: bool) -> None:
    assert master_on_loopback(master, resolver) is expected


def test_a_local_master_advertises_loopback_whatever_the_driver_host() -> None:
    assert advertised_host("local[2]", "driver-1", resolver) == "127.0.0.1"


def test_a_routable_driver_host_is_advertised_as_its_address() -> None:
    assert advertised_host("spark://master-1:7077", "driver-1", resolver) == "10.0.0.5"
    assert advertised_host("yarn", "10.0.0.9", resolver) == "10.0.0.9"
    assert advertised_host("spark://master-1:7077", "dual", resolver) == "10.0.0.7"  # the routable one, not ::1


def test_a_loopback_driver_host_is_advertised_numerically_when_the_master_is_on_loopback() -> None:
    """The issue's case: the default spark.driver.host resolved to a loopback name and ``localhost:PORT`` was
    advertised; on a loopback master that works, as 127.0.0.1."""
    assert advertised_host("spark://127.0.0.1:7077", "localhost", resolver) == "127.0.0.1"
    assert advertised_host("local-cluster[2,1,1024]", "debian-box", resolver) == "127.0.1.1"


@pytest.mark.parametrize(("master", "driver_host"), [
    ("spark://master-1:7077", "localhost"), ("yarn", "debian-box"), ("k8s://https://127.0.0.1:6443", "127.0.0.1"),
])
def test_a_loopback_driver_host_is_refused_when_the_master_is_not_on_loopback(master: str, driver_host: str) -> None:
    with pytest.raises(DriverAddressError, match=r"resolves to loopback.*set spark\.driver\.host"):
        advertised_host(master, driver_host, resolver)


def test_a_missing_driver_host_is_refused() -> None:
    with pytest.raises(DriverAddressError, match=r"spark\.driver\.host is not set"):
        advertised_host("spark://master-1:7077", None, resolver)


def test_the_coordinator_binds_the_advertised_address_on_a_free_port() -> None:
    assert endpoint_for("spark://master-1:7077", "driver-1", None, resolver) == CoordinatorEndpoint("10.0.0.5:0")
    assert endpoint_for("local[2]", "driver-1", "0.0.0.0", resolver) == CoordinatorEndpoint("127.0.0.1:0")


def test_a_bind_address_of_its_own_binds_there_and_advertises_the_driver_host_on_the_same_port() -> None:
    """Kubernetes: the pod binds its own address (spark.driver.bindAddress), executors reach the service's."""
    endpoint = endpoint_for("k8s://https://10.0.0.1:6443", "driver-svc", "0.0.0.0", resolver,
                            free_port=lambda host: 41234)
    assert endpoint == CoordinatorEndpoint(listen="0.0.0.0:41234", advertised="10.96.0.12:41234")
