"""Running groupcoord's Spark side on a real cluster: a Spark standalone cluster on one machine (a master and workers,
each its own JVM, from pip's pyspark) and the supervisor that restarts a client-mode driver.

>>> from groupcoord.cluster import ClusterSpec, StandaloneCluster          # doctest: +SKIP
>>> with StandaloneCluster.start("var/cluster", ClusterSpec(workers=2, cores=1)) as cluster:
...     print(cluster.master_url)                                           # spark://127.0.0.1:PORT

``groupcoord cluster start`` and ``groupcoord cluster supervise`` are the command-line forms (README, "Running on a
cluster").
"""

from groupcoord.cluster.standalone import ClusterError, ClusterSpec, Executor, StandaloneCluster
from groupcoord.cluster.supervisor import DRIVER_INSTANCE_ENV, Replicas, RestartPolicy, Run, Supervisor

__all__ = ["DRIVER_INSTANCE_ENV", "ClusterError", "ClusterSpec", "Executor", "Replicas", "RestartPolicy", "Run",
           "StandaloneCluster", "Supervisor"]
