"""A deterministic generative scorer for end-to-end tests of the asking kinds: it sees the
square's colour and answers by rules a test can follow by hand.

It is written into each pytester directory and loaded through the public ``py:`` model spec
(it has only the generative methods, no pair scores).
"""

SOURCE = """
import numpy as np

NAMES = ("red", "green", "blue")
CALLS = {"score_continuations": 0, "next_token_logprobs": 0, "generate": 0}


def colour_of(image):
    mean = np.asarray(image.convert("RGB"), dtype=np.float32).reshape(-1, 3).mean(0)
    return NAMES[int(np.argmax(mean))]


def lettered(prompt):
    return {line[0]: line[3:] for line in prompt.splitlines() if line[1:3] == ". "}


class Speaker:
    name = "speaker"
    fingerprint = "speaker-v1"

    def rendered_prompt(self, prompt):
        return "USER: " + prompt + " ASSISTANT:"

    def score_continuations(self, images, prompts, continuations):
        CALLS["score_continuations"] += 1
        return np.array([0.0 if colour_of(i) in c else -2.0 - len(c) / 10
                         for i, c in zip(images, continuations)])

    def next_token_logprobs(self, images, prompts, candidates):
        CALLS["next_token_logprobs"] += 1
        rows = []
        for image, prompt in zip(images, prompts):
            colour, shown = colour_of(image), lettered(prompt)
            if shown:  # the letter naming the colour; else a bias for A
                rows.append([0.0 if colour in shown.get(c, "") else (-1.0 if c == "A" else -3.0)
                             for c in candidates])
            else:  # yes when the question names the colour
                yes = colour in prompt
                rows.append([0.0 if (c == "Yes") == yes else -1.5 for c in candidates])
        return np.array(rows)

    def generate(self, images, prompts, max_new_tokens):
        CALLS["generate"] += 1
        out = []
        for image, prompt in zip(images, prompts):
            colour, shown = colour_of(image), lettered(prompt)
            if "mumble" in prompt:
                text = "hmm"
            elif "How many" in prompt:
                text = "There are two squares."
            elif shown:
                letter = next((k for k, v in shown.items() if colour in v), "Z")
                text = f"({letter}) {shown.get(letter, 'none')}"
            else:
                text = f"It is {colour}."
            out.append(" ".join(text.split()[:max_new_tokens]))
        return out


def make():
    return Speaker()
"""
