"""A deterministic dual encoder for end-to-end tests: it sees colour and reads colour words.

An image embeds as its mean RGB; a text as the RGB of the colour words it names. It is written
into each pytester directory and loaded through the public ``py:`` model spec.
"""

SOURCE = """
import numpy as np

COLOURS = {"red": (1.0, 0.0, 0.0), "green": (0.0, 1.0, 0.0), "blue": (0.0, 0.0, 1.0)}
CALLS = {"images": 0, "texts": 0}


class ColourScorer:
    name = "colour"
    fingerprint = "colour-v1"

    def encode_images(self, images):
        CALLS["images"] += 1
        return np.stack([np.asarray(im, dtype=np.float32).reshape(-1, 3).mean(0) / 255
                         for im in images])

    def encode_texts(self, texts):
        CALLS["texts"] += 1
        rows = []
        for text in texts:
            vec = np.full(3, 0.01, dtype=np.float32)
            for word in text.split():
                vec += np.asarray(COLOURS.get(word, (0.0, 0.0, 0.0)), dtype=np.float32)
            rows.append(vec)
        return np.stack(rows)


def make():
    return ColourScorer()
"""
