"""Running the suite: the supervisor, the port worker processes, the property runner,
the example bank, the Hypothesis profiles, the environment and the machine description."""
