"""Per-API adapters: each turns a kafka-python request object into a kafka-python response object."""
