"""TFLite flatbuffers (.tflite): a bounds-checked table reader (flatbuf), the schema facts (schema),
the model as frozen value objects (model), and the reader (reader)."""
