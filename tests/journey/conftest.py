"""The browser fixtures of tests/browser: the journey drives the same real Chromium."""

from tests.browser.conftest import page, screenshots  # noqa: F401 (fixtures)
