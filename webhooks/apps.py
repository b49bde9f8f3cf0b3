from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self) -> None:
        from reviews.signals import submission_reviewed
        from submissions.signals import submission_graded

        from .receivers import announce_graded, announce_reviewed

        submission_graded.connect(announce_graded, dispatch_uid="webhooks.graded")
        submission_reviewed.connect(announce_reviewed, dispatch_uid="webhooks.reviewed")
