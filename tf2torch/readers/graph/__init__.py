"""TF graphs (GraphDef, .meta): data-flow evidence read without TensorFlow."""
