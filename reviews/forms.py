"""Forms of the review screens. They only parse and check shapes; the rules
(levels, overturn reasons, line ranges) are the services', which raise
ReviewError with a message the page shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.http import QueryDict

from rubrics.models import Criterion, CriterionKind

from .models import Decision, OutcomeDecision, Preference
from .services import CommentInput, PairInput, ReviewInput, ScoreInput

MAX_TEXT = 20_000


def _level_choices(criterion: Criterion) -> list[tuple[str, str]]:
    return [(f"{float(level['score']):g}", level["descriptor"]) for level in criterion.levels]


class ReviewForm(forms.Form):
    """Decision, feedback and one group of fields per criterion: ``level-<key>`` and
    ``comment-<key>`` for human criteria, ``overturn-<key>`` and ``reason-<key>``
    for automatic ones. Line comments come as parallel lists ``lc-path``,
    ``lc-line`` and ``lc-body``."""

    decision = forms.ChoiceField(choices=Decision.choices, widget=forms.RadioSelect)
    feedback = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), max_length=MAX_TEXT)

    def __init__(self, *args: Any, criteria: Sequence[Criterion], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.criteria = list(criteria)
        for criterion in self.criteria:
            key = criterion.key
            if criterion.kind == CriterionKind.HUMAN:
                self.fields[f"level-{key}"] = forms.ChoiceField(
                    choices=_level_choices(criterion), widget=forms.RadioSelect, label=key
                )
            else:
                self.fields[f"overturn-{key}"] = forms.BooleanField(required=False)
                self.fields[f"reason-{key}"] = forms.CharField(required=False, max_length=5000)
            self.fields[f"comment-{key}"] = forms.CharField(
                required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 2})
            )

    def line_comments(self) -> list[CommentInput]:
        data = self.data if isinstance(self.data, QueryDict) else QueryDict()
        comments = []
        for path, line, body in zip(
            data.getlist("lc-path"), data.getlist("lc-line"), data.getlist("lc-body"), strict=False
        ):
            if not body.strip():
                continue  # an empty comment box left open
            try:
                number = int(line)
            except ValueError:
                number = 0
            comments.append(CommentInput(path=path, line=number, body=body))
        return comments

    def to_input(self) -> ReviewInput:
        data = self.cleaned_data
        scores = {}
        for criterion in self.criteria:
            key = criterion.key
            if criterion.kind == CriterionKind.HUMAN:
                scores[key] = ScoreInput(
                    level=float(data[f"level-{key}"]), comment=data[f"comment-{key}"]
                )
            else:
                scores[key] = ScoreInput(
                    overturned=data[f"overturn-{key}"],
                    reason=data[f"reason-{key}"],
                    comment=data[f"comment-{key}"],
                )
        return ReviewInput(
            decision=data["decision"],
            feedback=data["feedback"],
            scores=scores,
            comments=self.line_comments(),
        )


def initial_from_review(review: Any) -> dict[str, Any]:
    """A submitted review as the form's initial values (for editing it)."""
    initial: dict[str, Any] = {"decision": review.decision, "feedback": review.feedback}
    for score in review.scores.all():
        key = score.criterion.key
        if score.criterion.kind == CriterionKind.HUMAN:
            initial[f"level-{key}"] = f"{score.points:g}"
        else:
            initial[f"overturn-{key}"] = score.overturned
            initial[f"reason-{key}"] = score.overturn_reason
        initial[f"comment-{key}"] = score.comment
    return initial


class PairForm(forms.Form):
    winner = forms.ChoiceField(choices=Preference.choices, widget=forms.RadioSelect)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), max_length=MAX_TEXT)

    def __init__(self, *args: Any, criteria: Sequence[Criterion], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.human = [c for c in criteria if c.kind == CriterionKind.HUMAN]
        for criterion in self.human:
            self.fields[f"winner-{criterion.key}"] = forms.ChoiceField(
                choices=Preference.choices, widget=forms.RadioSelect, label=criterion.title
            )

    def to_input(self) -> PairInput:
        data = self.cleaned_data
        return PairInput(
            winner=data["winner"],
            criterion_winners={c.key: data[f"winner-{c.key}"] for c in self.human},
            reason=data["reason"],
        )


class AdjudicationForm(forms.Form):
    decision = forms.ChoiceField(choices=OutcomeDecision.choices, widget=forms.RadioSelect)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), max_length=MAX_TEXT)
    score = forms.FloatField(
        required=False,
        min_value=0.0,
        max_value=1.0,
        help_text="Leave empty to keep the mean of the reviews.",
    )
