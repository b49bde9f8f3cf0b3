from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ReviewsConfig(AppConfig):
    name = "reviews"

    def ready(self) -> None:
        from submissions import selectors as submission_selectors
        from submissions.signals import submission_graded

        from .access import ensure_senior_group
        from .receivers import queue_graded_submission
        from .selectors import submission_review_outcome

        post_migrate.connect(ensure_senior_group, sender=self)
        submission_graded.connect(queue_graded_submission, dispatch_uid="reviews.queue")
        submission_selectors.read_review_outcomes_with(submission_review_outcome)
