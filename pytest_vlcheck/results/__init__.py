"""Results: the typed value of one test x model outcome, as every layer shares it.

``CapabilityResult`` is the public type the Python API returns and ``matrix.json`` publishes
(``to_json`` / ``from_json``); ``blocks`` types its optional gate, prior and reference
blocks; ``samples`` is the per-example ``samples.jsonl`` record; ``json_checks`` validates
the JSON files the tool reads back.
"""

from pytest_vlcheck.results.capability import (
    MEASURED,
    REPORTED_FIELDS,
    STATUSES,
    CapabilityResult,
    ExampleOutcome,
    FailureExample,
    ResultFormatError,
    Status,
    from_transport,
    outcomes_from_json,
)

__all__ = [
    "MEASURED",
    "REPORTED_FIELDS",
    "STATUSES",
    "CapabilityResult",
    "ExampleOutcome",
    "FailureExample",
    "ResultFormatError",
    "Status",
    "from_transport",
    "outcomes_from_json",
]
