"""``evaluate`` under ``torch.distributed``: the collective, the collective branch of
``evaluate``, the models as the ranks score them, and a rank's share of the batches."""
