"""The conformance suite: every port held to the canonical Flax linen port.

Importing this package imports no ML framework; ports load lazily through
the registry in `implementations`.
"""
