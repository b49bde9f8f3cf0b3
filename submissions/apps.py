from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"

    def ready(self) -> None:
        from accounts.services import count_usage_with

        from .quotas import SubmissionUsage

        count_usage_with(SubmissionUsage())
