"""Structured Streaming: the ``groupcoord`` source (a consumer-group member per query) and its sink helpers.

``groupcoord.spark.register(spark)`` (:func:`groupcoord.spark.streaming.register.register`) registers the
``groupcoord`` source (and the ``groupcoord-delta`` sink when :mod:`groupcoord.spark.streaming.sink` is present) and
starts, or stands by for, the state root's coordinator in the driver. ``docs/streaming.md`` is the user's guide.

Import-light: importing this package loads neither pyspark nor deltalake; the submodules do.
"""
