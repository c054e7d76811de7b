"""keras-hub's EfficientNet backbones: builder, converters, runtime helpers."""
