"""Model families as vertical slices: one folder per family holds its graph builder, its layer converters
and the runtime helpers its generated files carry (``keras_hub/``). Nothing lists the families: they are
found by walking these folders (``keras_hub.load``; ``codegen/library.py`` for the ``runtime*.py`` files)."""
