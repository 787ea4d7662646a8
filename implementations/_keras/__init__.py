"""What the Keras ports share (`keras_jax`, `keras_torch`, `keras_tensorflow`).

Keras reads its backend once, when it is first imported (`KERAS_BACKEND`),
so the order matters:

- `backend`: `load(name)` imports Keras on the named backend, or raises
  `contract.StackUnavailable` naming both backends when Keras already runs
  on another in this process. It imports nothing until called.
- `model`: the exercise's model in Keras (`MLP`, one `keras.RematScope`
  region), the layout converters, and the symbolic (`KerasTensor`) exercise.
  It imports Keras, so a port calls `backend.load` before importing it.

Each backend's own pieces (its arrays, its instrument) stay in its port file.
"""
