"""One module per model family; importing this package registers them all."""
