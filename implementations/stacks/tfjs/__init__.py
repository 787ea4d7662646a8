"""The TensorFlow.js stack: a process port in Node (`port.js`, docs/PROTOCOL.md), its bench
stack (`bench.js`, driven by `bench`) and its browser check (`browser/`). The Python here
imports no ML framework."""
