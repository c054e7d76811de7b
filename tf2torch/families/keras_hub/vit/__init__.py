"""keras-hub's ViT and DeiT backbones: builder, converters, runtime helpers."""
