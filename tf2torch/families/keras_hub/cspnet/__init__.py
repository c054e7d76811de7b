"""keras-hub's CSPNet backbones: the graph builder."""
