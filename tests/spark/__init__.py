"""Tests of ``groupcoord.spark``: executors as members, and registration (a script that ends without stopping)."""
