"""The transformers stack: the exercise's MLP as a Hugging Face transformers model, remat
switched on with `PreTrainedModel.activation_checkpointing_enable`. Its port builds on the
torch stack (`implementations.stacks.torch`): its arrays, its numpy init and its instrument."""
