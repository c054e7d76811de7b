"""keras-hub's MobileNet backbones: builder, converters, runtime helpers."""
