"""The checks: the properties (one module each, `properties/`), their strategies, the
tolerance model, the precision tier, the golden vectors and the mutation run."""
