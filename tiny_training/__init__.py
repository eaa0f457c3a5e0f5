"""How the shipped ``tiny`` model was made: its data sampler, probes and training script.

Not part of the installed package (nothing here runs when pytest-vlcheck tests a model);
``python -m tiny_training.train`` from a checkout retrains ``pytest_vlcheck/tiny``.
"""
