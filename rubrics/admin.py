from django.contrib import admin

from .models import Criterion, CriterionScore, Rubric


class CriterionInline(admin.TabularInline):
    model = Criterion
    fields = ["position", "key", "title", "points", "kind"]
    extra = 0


@admin.register(Rubric)
class RubricAdmin(admin.ModelAdmin):
    list_display = ["__str__", "task", "version"]
    inlines = [CriterionInline]


@admin.register(Criterion)
class CriterionAdmin(admin.ModelAdmin):
    list_display = ["key", "title", "points", "kind", "rubric"]
    list_filter = ["kind"]


@admin.register(CriterionScore)
class CriterionScoreAdmin(admin.ModelAdmin):
    list_display = ["submission", "criterion", "source", "points", "met"]
    list_filter = ["source"]
