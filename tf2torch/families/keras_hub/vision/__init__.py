"""keras-hub's VGG and DenseNet backbones (Keras layers only): the graph builder."""
