"""keras-hub's HGNetV2 backbones: builder, converters, runtime helpers."""
