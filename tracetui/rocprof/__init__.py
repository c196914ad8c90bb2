"""AMD rocprofv3 output (``rocprofv3 --output-format json``, and its CSV files) read into the
Kineto model: see :mod:`.builder` for what each record becomes, docs/formats.md for the format."""
