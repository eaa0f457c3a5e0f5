"""Training ``tiny-vlm``, a small generative LLaVA, on questions about rendered scenes (not yet
shipped: see ``train.py``)."""
