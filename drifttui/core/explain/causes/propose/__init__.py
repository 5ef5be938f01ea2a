"""What could fix it: the candidate patches (``candidates``, ``weights``, ``constants``, ``rewrites``),
re-exports (``reexport``), the precision story (``precision_loss``) and no patch (``nopatch``)."""
