"""What a sweep is asked to do: target files, recipes, the variant matrix and its designs."""
