"""One module per built-in model scheme (``open_clip:``, ``hf:``, ``vqa:``, ``scores:``,
``py:``), each loaded by name through ``models.registry`` only when a spec uses it."""
