"""Chrome trace JSON that is not a PyTorch profiler trace (JAX's ``trace.json.gz``, TensorFlow,
Triton's proton, Perfetto's JSON export) read into the Kineto model as a generic trace: see
:mod:`.sniff` for how it is told from a PyTorch trace, :mod:`.devices` for what becomes GPU work."""
