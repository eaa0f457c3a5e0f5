"""Text-side helpers of the task kinds: seeded caption perturbations (typos)."""
