"""Repository tooling: not part of the `helpers` package that readers install."""
