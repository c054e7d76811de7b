"""TFLite flatbuffers (.tflite): a bounds-checked table reader, the schema facts, the model read into value objects."""
