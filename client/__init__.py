"""Python client and command line for the Benchwright API.

from client import BenchwrightClient
bw = BenchwrightClient()          # BENCHWRIGHT_URL, BENCHWRIGHT_TOKEN
for task in bw.tasks(kind="kernel"):
    ...
"""

from .api import ApiError, BenchwrightClient

__all__ = ["ApiError", "BenchwrightClient"]
