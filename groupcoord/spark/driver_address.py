"""Where a driver's coordinator listens, and the address it advertises to executors in the lease table.

The coordinator of a Spark driver (``groupcoord.spark.register``, ``run_members``) is reached by the executors, and
by every other application on the state root, at the address it writes into the lease table. That address must be
one they can route to:

- on a local master (``local[...]``) everything runs in one process: ``127.0.0.1``;
- otherwise the driver's own address for its executors, ``spark.driver.host`` (Spark sets it in every driver), as
  a numeric address (a name may resolve differently, or not at all, on the executors' hosts);
- a ``spark.driver.host`` that is, or resolves to, a loopback address (``localhost``; Debian's ``127.0.1.1`` for the
  machine's own name) is refused unless the master is on loopback too (``local-cluster[...]``, or a standalone
  master whose hosts are all loopback addresses, as the tests' cluster): executors on other hosts could not reach it.
  YARN and Kubernetes masters always count as remote;
- with ``spark.driver.bindAddress`` (a container's own address behind the advertised one), the coordinator binds
  there on a free port and advertises ``spark.driver.host`` with the same port.

``spark.groupcoord.listen`` (and ``advertised.listener``), when set, win over all of this.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOOPBACK = "127.0.0.1"
_LOCAL_MASTER = re.compile(r"local(?:\[[^\]]*\])?")
_LOCAL_CLUSTER_MASTER = re.compile(r"local-cluster\[[^\]]*\]")
_STANDALONE_MASTER = re.compile(r"spark://(?P<hosts>.+)")

Resolver = Callable[[str], Sequence[str]]
"""A host name or address to the addresses it resolves to (:func:`resolve`; tests pass their own)."""


class DriverAddressError(RuntimeError):
    """The driver has no address its executors can reach; the message says which setting to change."""


@dataclass(frozen=True)
class CoordinatorEndpoint:
    """What a driver's coordinator binds, and what it advertises when that differs (else ``None``)."""

    listen: str
    advertised: str | None = None


def resolve(host: str) -> list[str]:
    """The IP addresses ``host`` resolves to (itself for an address), in the resolver's order, without repeats."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), None, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise DriverAddressError(f"spark.driver.host {host!r} does not resolve: {exc.strerror}") from None
    addresses: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def is_loopback(address: str) -> bool:
    """True for a loopback IP address (127.0.0.0/8, ::1)."""
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def master_on_loopback(master: str, resolver: Resolver = resolve) -> bool:
    """True when the master's executors run on this machine's loopback: ``local[...]``, ``local-cluster[...]``, or a
    standalone master (``spark://h1:p1,h2:p2``) whose hosts all resolve to loopback addresses only. YARN, Kubernetes
    and anything else count as remote."""
    if _LOCAL_MASTER.fullmatch(master) or _LOCAL_CLUSTER_MASTER.fullmatch(master):
        return True
    standalone = _STANDALONE_MASTER.fullmatch(master)
    if standalone is None:
        return False
    hosts = [item.rpartition(":")[0] or item for item in standalone.group("hosts").split(",")]
    try:
        return all(all(is_loopback(a) for a in resolver(host)) for host in hosts)
    except DriverAddressError:
        return False


def advertised_host(master: str, driver_host: str | None, resolver: Resolver = resolve) -> str:
    """The numeric address a driver's coordinator advertises (see the module docstring); raises
    :class:`DriverAddressError` for a loopback ``spark.driver.host`` with a master off loopback."""
    if _LOCAL_MASTER.fullmatch(master):
        return LOOPBACK
    if not driver_host:
        raise DriverAddressError("spark.driver.host is not set: set it to an address the executors can reach")
    addresses = resolver(driver_host)
    routable = [a for a in addresses if not is_loopback(a)]
    if routable:
        return _ipv4_first(routable)
    if master_on_loopback(master, resolver):
        return _ipv4_first(addresses)
    raise DriverAddressError(
        f"spark.driver.host {driver_host!r} resolves to loopback ({', '.join(addresses)}) but the master {master} "
        "is not on loopback: executors on other hosts could not reach the coordinator; set spark.driver.host "
        "(or SPARK_LOCAL_IP) to an address they can route to")


def endpoint_for(master: str, driver_host: str | None, bind_address: str | None,
                 resolver: Resolver = resolve, free_port: Callable[[str], int] | None = None) -> CoordinatorEndpoint:
    """The coordinator's endpoint: bind the advertised address on a free port (port 0), or, with a
    ``spark.driver.bindAddress`` other than it, bind that on a free port picked now and advertise the same port."""
    host = advertised_host(master, driver_host, resolver)
    if not bind_address or bind_address == host or _LOCAL_MASTER.fullmatch(master):
        return CoordinatorEndpoint(listen=f"{_bracketed(host)}:0")
    if free_port is None:
        from groupcoord.host.coordinator_host import pick_free_port

        free_port = pick_free_port
    port = free_port(bind_address)
    return CoordinatorEndpoint(listen=f"{_bracketed(bind_address)}:{port}", advertised=f"{_bracketed(host)}:{port}")


def coordinator_endpoint(spark: SparkSession) -> CoordinatorEndpoint:
    """:func:`endpoint_for` this driver's master, ``spark.driver.host`` and ``spark.driver.bindAddress``."""
    sc = spark.sparkContext
    conf = sc.getConf()
    return endpoint_for(sc.master or "", conf.get("spark.driver.host"), conf.get("spark.driver.bindAddress"))


def _ipv4_first(addresses: Sequence[str]) -> str:
    return next((a for a in addresses if ":" not in a), addresses[0])


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
