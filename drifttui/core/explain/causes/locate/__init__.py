"""Where inside the origin: its case (``case``), ORT vs the reference implementation (``evaluate``),
each node's own error (``localise_nodes``) and a dynamo file's FX nodes (``fx_localise``)."""
