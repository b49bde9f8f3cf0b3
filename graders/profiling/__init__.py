"""The profiling task kind: questions about a profiler trace, answered as JSON and
graded field by field, and programs changed so that a planted problem disappears."""
