"""keras-hub's GPT-2-style decoders: the graph builder."""
