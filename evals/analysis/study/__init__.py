"""Pre-registered studies: a claim's design is committed before the run that tests it.

A comparison whose number of sessions, arms or endpoint was chosen after its result was seen
is not evidence a referee accepts (issue 46). A study plan (``configs/study/NAME.yaml``) fixes
the session draw, the arms, the primary endpoint with its decision rule and the number of
sessions from a power analysis on a committed pilot; the analysis calls a result a finding only
for that endpoint on those sessions and arms, and git shows that the plan came first.

Modules:

- ``plan``: :class:`StudyPlan`, read and validated from a plan file.
- ``power``: the power analysis (sessions needed, smallest detectable difference) and the pilot.
- ``registration``: git's word on whether the plan preceded its records.
- ``commands``: the harness runs a plan asks for, one per session, arm and reader.
- ``endpoints``: the plan's endpoints from the study's records, and the decision rule.
- ``report``: the committed records and the report made from them (``--check`` remakes it).
- ``cli``: ``python -m evals.analysis.study power|verify|commands|run|report PLAN``.
"""

from evals.analysis.study.plan import StudyPlan, load_plan
from evals.analysis.study.power import PowerAnalysis, detectable_difference, sessions_needed

__all__ = ["PowerAnalysis", "StudyPlan", "detectable_difference", "load_plan", "sessions_needed"]
