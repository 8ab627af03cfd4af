"""Language servers as things to install: the catalog, where programs are, installing."""
