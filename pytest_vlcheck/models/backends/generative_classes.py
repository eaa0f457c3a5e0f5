"""transformers' image-text-to-text (generative VLM) classes: what ``vqa:`` scores and the
``hf:`` backend and live models refuse, pointing to ``vqa:``."""

from __future__ import annotations


def is_image_text_to_text(model_type: str) -> bool:
    """Whether transformers maps this config ``model_type`` to an image-text-to-text model."""
    return model_type in _generative_classes()


def is_generative_class(name: str) -> bool:
    """Whether ``name`` is one of transformers' image-text-to-text model classes."""
    return any(name in classes for classes in _generative_classes().values())


def _generative_classes() -> dict[str, tuple[str, ...]]:
    """transformers' image-text-to-text classes by config ``model_type``."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    return {
        model_type: (names,) if isinstance(names, str) else tuple(names)
        for model_type, names in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.items()
    }
