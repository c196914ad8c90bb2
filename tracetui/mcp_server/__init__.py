"""``tracetui mcp``: answers for coding agents, a Model Context Protocol server over stdio.

- :mod:`.server`: the MCP server (the only module importing the ``mcp`` SDK, an optional extra:
  ``pip install 'tracetui[mcp]'``): tools with JSON schemas and descriptions, resources, one
  boundary that turns every error into one line;
- :mod:`.tools`: what each tool answers (the commands' own headless functions and ``--json``
  documents), free of the SDK;
- :mod:`.resources`: the glossary, the query tables, the findings rules;
- :mod:`.loaded`: the traces kept loaded for the session (bounded by memory);
- :mod:`.roots`: which paths may be read (under the roots, no link out, regular files);
- :mod:`.bounds`: every cap of an answer, and how a document is cut to fit.

Named ``mcp_server`` (not ``mcp``), so it never stands in for the SDK's own package.
"""
