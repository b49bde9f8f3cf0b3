"""Grading, one task kind at a time, without Django.

``graders.contract`` says what a task kind implements, ``graders.registry`` maps
each kind to its grader (and is the only list of kinds), ``graders.verdicts`` is
the one verdict vocabulary and ``graders.reports`` makes any report storable.
Each kind lives in its own folder (``graders/kernel/``). Isolation (sandboxes,
limits, cgroups, seccomp) is ``sandboxes/``, which imports nothing from here.
"""
