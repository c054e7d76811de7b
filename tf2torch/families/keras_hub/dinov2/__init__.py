"""keras-hub's DINOv2 backbone: builder, converters, runtime helpers."""
