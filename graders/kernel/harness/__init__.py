"""The kernel harness: the code that runs inside the sandbox.

One harness process serves one side of a grading, the reference or the
submission, and is driven by the trusted grader (``graders.kernel.grading``) over
the channel pipes: commands on fd 3, replies on fd 4, framed by
``protocol``. The grader binds this folder read-only at
``/opt/benchwright/harness`` and starts it with ``python -I -B -c``; its
modules import each other relatively and need only the standard library and
torch, so the same files serve the grader (``protocol``) too.

A grading, as the grader drives it:

1. ``hello`` (sent unasked once torch is imported and the originals of the
   clocks, synchronisation and comparison functions are captured); the grader
   reads the process and thread counts of the sandbox from outside.
2. ``load``: import the reference or the solution; the reply lists any
   captured function or harness global that changed since.
3. per shape set ``setup``: KernelBench globals set, ``Model`` built under a
   seed in the reference process, its init arguments and weights sent to the
   submission process, which builds ``ModelNew`` under the same seed and
   copies the weights in by name.
4. per batch: ``generate(seeds)`` in the reference process only; the inputs
   go to both sides with ``prepare`` (staged in guard-banded buffers), then
   ``go`` runs the calls back to back and reads a sample of each output right
   after its call; ``outputs`` returns the outputs, the samples and the guard,
   input and integrity reports. GPU MODE tasks with a ``check_implementation``
   get ``check`` in the reference process.
5. ``bye``.
"""
