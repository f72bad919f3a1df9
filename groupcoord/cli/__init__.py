"""The ``groupcoord`` command, following ``kafka-consumer-groups.sh`` conventions."""
