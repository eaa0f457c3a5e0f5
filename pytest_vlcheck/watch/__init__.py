"""``vlcheck watch``: checkpoints evaluated and gated as training writes them.

``complete`` says when a file is whole (never read half-written weights), ``state`` keeps
what was evaluated across restarts, ``curves`` is one row per checkpoint, ``lines`` the one
line printed per checkpoint, and ``watcher`` the loop that ties them to ``evaluate``.
"""
