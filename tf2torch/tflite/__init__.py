"""TFLite operators lowered to the layers a TF graph is lowered to: the registry (base), the walk (lower), converters by kind (ops_*)."""
