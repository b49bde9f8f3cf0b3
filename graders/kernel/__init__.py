"""GPU kernel tasks: a solution that must compute what the reference computes, faster.

The kind's contract is ``graders.kernel.kind.KernelKind``; the grader itself (its
trusted side, the in-sandbox harness, the timing) is documented in
docs/architecture.md.
"""
