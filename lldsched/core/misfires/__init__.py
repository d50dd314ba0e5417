"""Misfires: the slots that passed while nobody ran them meet their task's policy.

What a policy decides, pure (:mod:`~lldsched.core.misfires.plan`); the decision applied
to a task, each slot recorded once (:mod:`~lldsched.core.misfires.apply`); and a first
run answered in the past, met by the same rule at its registration
(:mod:`~lldsched.core.misfires.firstpassed`).  A restart and a clock jump hand their
passed slots to it from :mod:`lldsched.core.recovery`, a claim in shared mode from
:mod:`lldsched.threaded.shared.decisions`.  Of the rest of the core it imports
:mod:`~lldsched.core.names`, :mod:`~lldsched.core.task` and :mod:`~lldsched.core.parts`
alone (``tests/test_layering.py``); the package itself gives nothing
(docs/decisions/public-api.md, "The core's two groups are folders of their own").
"""
