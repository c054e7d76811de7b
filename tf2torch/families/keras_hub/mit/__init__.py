"""keras-hub's MiT (SegFormer) backbone: builder, converters, runtime helpers."""
