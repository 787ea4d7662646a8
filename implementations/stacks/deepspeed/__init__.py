"""The DeepSpeed stack: the torch MLP under `deepspeed.checkpointing.checkpoint`. Its port,
bench stack and mutant build on the torch stack (`implementations.stacks.torch`)."""
