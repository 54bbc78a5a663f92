"""Independent references and the writers of the committed golden files."""
