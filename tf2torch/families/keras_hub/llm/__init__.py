"""keras-hub's Llama-style decoders (Llama, Mistral, Gemma): builder, converters, runtime helpers."""
