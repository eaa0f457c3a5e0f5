"""Parsing helpers shared by the checklist loader and the task kinds: YAML with line numbers,
typed field readers, example fields (images, tags, ids) and ``FILE:LINE`` checklist errors.

It sits below both ``checklist/`` and ``tasks/`` so that neither imports the other's
internals (the loader uses the task kinds; the task kinds parse their examples with these).
"""
