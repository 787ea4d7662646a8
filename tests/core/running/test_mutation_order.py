"""The mutation run's order (every property, the cheapest first, by its declared cost) and its
two passes: a few examples of every property, then the full count."""

from __future__ import annotations

from conformance.checking.properties import BY_ID, PROPERTIES
from conformance.mutants import Mutant
from conformance.running import mutation
from conformance.running.runner import Outcome


def _run(monkeypatch, fails_at: dict[str, int], first: tuple[str, ...] = (), killed_by: str = ""):
    """Run one stand-in mutant that property P rejects from its `fails_at[P]`-th example on."""
    calls = []

    def run_property(prop, port, canonical, *, max_examples, **_):
        calls.append((prop.id, max_examples))
        examples = max_examples if prop.cases is None else 78
        at = fails_at.get(prop.id)
        if at is not None and at <= examples:
            return Outcome(port.name, prop.key, "fail", at, message="rejected")
        return Outcome(port.name, prop.key, "pass", examples)

    monkeypatch.setattr(mutation, "run_property", run_property)
    port = type("Stand", (), {"name": "stand_in"})()
    mutant = Mutant("stand_in", "a stand-in bug", port, first=first, killed_by=killed_by)
    return mutation.run_mutant(mutant, canonical=lambda: None), calls


def test_a_mutant_falls_in_the_scouting_pass_without_running_earlier_properties_in_full(
    monkeypatch,
):
    result, calls = _run(monkeypatch, {"e": 1})
    assert result.status == "killed"
    assert result.killed_by == "e_evidence"
    # g's fixed cases wait for the second pass; h gets only the scouting examples.
    assert calls == [("h", mutation.SCOUT_EXAMPLES), ("e", mutation.SCOUT_EXAMPLES)]


def test_a_bug_seen_only_after_the_scouting_examples_is_still_killed_in_the_full_pass(
    monkeypatch,
):
    result, calls = _run(monkeypatch, {"c": mutation.MUTANT_EXAMPLES})
    assert result.status == "killed"
    assert result.killed_by == "c_vjp"
    scouting = [p for p, n in calls if n == mutation.SCOUT_EXAMPLES]
    full = [p for p, n in calls if n == mutation.MUTANT_EXAMPLES]
    assert "g" not in scouting
    assert "c" in scouting
    assert full[0] == "g"
    assert full[-1] == "c"


def test_a_mutant_no_property_rejects_survives_both_passes(monkeypatch):
    result, calls = _run(monkeypatch, {})
    assert result.status == "survived"
    assert {p for p, _ in calls} == {p.id for p in PROPERTIES}
    assert [p for p, n in calls if n == mutation.MUTANT_EXAMPLES] == list(mutation.KILL_ORDER)


def test_a_mutants_first_properties_lead_both_passes(monkeypatch):
    _, calls = _run(monkeypatch, {}, first=("i",))
    assert calls[0] == ("i", mutation.SCOUT_EXAMPLES)
    assert next(p for p, n in calls if n == mutation.MUTANT_EXAMPLES) == "i"


def test_the_property_that_must_reject_a_mutant_runs_first_in_full(monkeypatch):
    result, calls = _run(monkeypatch, {"g": 30}, killed_by="g_bad_inputs")
    assert result.killed_by == "g_bad_inputs"
    assert calls == [("g", mutation.MUTANT_EXAMPLES)]


def test_a_mutant_its_declared_property_misses_meets_the_others_in_both_passes(monkeypatch):
    result, calls = _run(monkeypatch, {"c": mutation.MUTANT_EXAMPLES}, killed_by="j_policies")
    assert result.killed_by == "c_vjp"
    assert calls[0] == ("j", mutation.MUTANT_EXAMPLES)
    assert ("j", mutation.SCOUT_EXAMPLES) not in calls  # not run again
    assert [p for p, _ in calls].count("j") == 1
    assert calls[-1] == ("c", mutation.MUTANT_EXAMPLES)


def test_the_kill_order_holds_every_property_once_the_cheapest_first():
    assert sorted(mutation.KILL_ORDER) == sorted(p.id for p in PROPERTIES)
    costs = [BY_ID[p].cost for p in mutation.KILL_ORDER]
    assert costs == sorted(costs)
    assert len(set(costs)) == len(costs), "two properties share a cost: the order is a tie"
    assert min(costs) >= 1, "a property declares no cost"


def test_a_fixed_case_list_costs_least_and_a_capped_property_most():
    """The costs say what the checks do: a fixed list (no shape drawn, no canonical) is
    cheaper than any drawn property, and one whose examples are capped for their cost is
    dearer than every uncapped one."""
    fixed = [p.cost for p in PROPERTIES if p.cases is not None]
    drawn = [p.cost for p in PROPERTIES if p.cases is None]
    assert fixed
    assert max(fixed) < min(drawn)
    capped = [p.cost for p in PROPERTIES if p.examples is not None]
    uncapped = [p.cost for p in PROPERTIES if p.examples is None]
    assert capped
    assert min(capped) > max(uncapped)
