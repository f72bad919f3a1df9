"""Spark integration: DataFrame views of the coordinator's state (:mod:`groupcoord.spark.state`).

Import-light on purpose: importing ``groupcoord.spark`` loads neither pyspark nor deltalake; the submodules do.
"""
