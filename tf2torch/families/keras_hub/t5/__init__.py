"""keras-hub's T5: builder, converters, runtime helpers."""
