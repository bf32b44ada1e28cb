"""One module per page of the panel, each exporting `routes()`: its HTML page and its JSON API."""
