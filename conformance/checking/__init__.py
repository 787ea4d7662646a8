"""The checks: the properties (a) to (k), their strategies, the tolerance model, the
precision tier, the golden vectors and the mutation run."""
