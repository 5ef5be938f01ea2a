"""A re-exported module spliced into a copy of the deployed file (``splice``), its nodes given the scopes of the
call they replace (``scopes``)."""
