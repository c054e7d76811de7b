"""TFLite operators lowered to the layers a TF graph is lowered to: the registry (base), the walk
(lower), dilated convs put back (atrous), converters by kind (ops_*), the inspect survey (survey)."""
