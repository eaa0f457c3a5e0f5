"""Image references (files, crops, URLs, synthetic scenes) and how their pixels are made."""
