"""What the daily quotas (``accounts.services``) count: submissions made and sandbox
time used, by an API token or by a user on a browser session."""

from __future__ import annotations

from datetime import datetime

from django.db.models import DurationField, ExpressionWrapper, F, Sum

from accounts.services import QuotaSubject

from .models import GradingRun, Submission


class SubmissionUsage:
    def submissions_since(self, subject: QuotaSubject, since: datetime) -> int:
        made = Submission.objects.filter(created_at__gte=since)
        if subject.token_id is not None:
            return made.filter(api_token_id=subject.token_id).count()
        return made.filter(submitter_id=subject.user_id, api_token=None).count()

    def sandbox_seconds_since(self, subject: QuotaSubject, since: datetime) -> float:
        runs = GradingRun.objects.filter(finished_at__gte=since, started_at__isnull=False)
        if subject.token_id is not None:
            runs = runs.filter(submission__api_token_id=subject.token_id)
        else:
            runs = runs.filter(submission__submitter_id=subject.user_id, submission__api_token=None)
        duration = ExpressionWrapper(
            F("finished_at") - F("started_at"), output_field=DurationField()
        )
        total = runs.aggregate(total=Sum(duration))["total"]
        return total.total_seconds() if total else 0.0
