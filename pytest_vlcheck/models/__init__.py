"""Scorers: the protocol every backend meets, and the registry that turns specs into them."""
