"""The generative methods beside the pair scores: the protocol a scorer follows to serve the
generative task kinds, and its transformers implementation the ``vqa:`` backend mixes in."""
