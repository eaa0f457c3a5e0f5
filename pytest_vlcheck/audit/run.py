"""Audit one test: blind baselines against chance plus the data checks."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_vlcheck.audit.baselines import BaselineResult, blind_baselines
from pytest_vlcheck.audit.checks import Finding, structural_findings
from pytest_vlcheck.audit.subject import AuditSubject
from pytest_vlcheck.metrics.choice import choice_chance
from pytest_vlcheck.metrics.priors import Perplexity


@dataclass(frozen=True)
class TestAudit:
    """What the audit found in one test; ``flagged`` when any finding is a flag."""

    __test__ = False  # not a pytest test class

    subject: AuditSubject
    chance: float | None
    baselines: tuple[BaselineResult, ...]
    findings: tuple[Finding, ...]

    @property
    def flagged(self) -> bool:
        return any(f.flag for f in self.findings)


def _baseline_findings(
    results: list[BaselineResult], chance: float, margin: float
) -> list[Finding]:
    found = []
    for result in results:
        if result.ci_low > chance + margin / 100:
            found.append(
                Finding(
                    f"blind_{result.name}",
                    f"blind baseline '{result.name}' passes {100 * result.rate:.1f}% "
                    f"({result.passed}/{result.n}, 95% CI {100 * result.ci_low:.1f}-"
                    f"{100 * result.ci_high:.1f}) without the image: its lower bound is more "
                    f"than {margin:g} points above chance ({100 * chance:.1f}%)",
                    (),
                    result.passed,
                )
            )
    return found


def audit_test(
    subject: AuditSubject, perplexity: Perplexity | None = None, margin: float = 10.0
) -> TestAudit:
    """Run the baselines (text-choice tests only) and the checks on one test.

    ``perplexity(texts) -> array`` is the prior (lower is more likely), or None; ``margin``
    is in points of pass rate.
    """
    findings = structural_findings(subject)
    if subject.text_note or not subject.choices:
        return TestAudit(subject, None, (), tuple(findings))
    chance = choice_chance([1 + len(c.other_texts) for c in subject.choices])
    results = blind_baselines(subject.choices, perplexity)
    findings = [*_baseline_findings(results, chance, margin), *findings]
    return TestAudit(subject, chance, tuple(results), tuple(findings))
