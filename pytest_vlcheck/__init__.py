"""pytest-vlcheck: vision-language capability checklists as pytest tests.

The core (``checklist``, ``images``, ``models``, ``engine``, ``metrics``, ``report``) knows
nothing of pytest; ``plugin`` wires it into pytest and ``cli`` into the ``vlcheck`` command.
"""

__version__ = "0.1.0"
