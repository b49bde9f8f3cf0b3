"""The debugging test runner, run inside the sandbox (see ``main``)."""
