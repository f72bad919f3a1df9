"""The Kafka wire endpoint: framing, codec (kafka-python's protocol classes), version policy, per-API adapters.

``Endpoint`` (``groupcoord.server.endpoint``) serves a dispatcher built by ``build_dispatcher``
(``groupcoord.server.dispatcher``); the pure core never imports this package.
"""
