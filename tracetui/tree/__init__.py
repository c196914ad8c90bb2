"""Forest algorithms on numpy arrays (parent / depth / CSR children), shared by the Kineto and
Execution Trace models: no trace format knowledge here."""
