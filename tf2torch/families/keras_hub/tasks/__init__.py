"""keras-hub Tasks around a nested backbone (classifiers, causal and masked LMs): builders, the masked-LM head's converter and runtime helper."""
