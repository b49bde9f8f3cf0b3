"""The re-profiling runner: the code that runs inside the sandbox for a
fix-and-re-profile grading (see ``main``).

The trusted grader (``graders.profiling.reprofile``) binds this folder
read-only at ``/opt/benchwright/profile_runner`` beside the kernel harness
(``/opt/benchwright/harness``, whose channel and value packing it reuses) and
starts it with ``python -I -B -c``. It needs only the standard library and
torch.
"""
