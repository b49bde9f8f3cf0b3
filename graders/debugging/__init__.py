"""The debugging task kind: a buggy codebase, a fix, hidden FAIL_TO_PASS and PASS_TO_PASS tests."""
