"""keras-hub's Whisper backbone: the graph builder."""
