"""What the reviews app announces (sent with ``submissions.signals.send_on_commit``)."""

from __future__ import annotations

from django.dispatch import Signal

# A submission's review outcome became final. Keyword: submission_id.
submission_reviewed = Signal()
