"""Live models: a model object of a training loop scored as it is (the scorer around it, the
forward guard, the preprocess/tokenizer check, its identity and weight fingerprint)."""
