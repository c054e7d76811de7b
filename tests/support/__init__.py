"""What every test shares: the error metric and its rule (``numerics``)."""
