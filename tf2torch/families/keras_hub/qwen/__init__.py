"""keras-hub's Qwen (Qwen 2 / 2.5, ``QwenBackbone`` alias ``Qwen2Backbone``): builder, converters, runtime helper."""
