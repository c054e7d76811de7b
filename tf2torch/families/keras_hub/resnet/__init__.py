"""keras-hub's ResNet backbones: the graph builder."""
