from django.db import migrations, models

BATCH = 2000


def backfill(apps, schema_editor):
    """Key the submissions already there, a batch at a time."""
    from submissions.fingerprint import solution_key

    Submission = apps.get_model("submissions", "Submission")
    SubmissionFile = apps.get_model("submissions", "SubmissionFile")
    last = 0
    while True:
        ids = list(
            Submission.objects.filter(pk__gt=last, code_key__isnull=True)
            .order_by("pk")
            .values_list("pk", flat=True)[:BATCH]
        )
        if not ids:
            return
        files: dict[int, list[tuple[str, str]]] = {pk: [] for pk in ids}
        for submission_id, path, content in SubmissionFile.objects.filter(
            submission_id__in=ids
        ).values_list("submission_id", "path", "content"):
            files[submission_id].append((path, content))
        Submission.objects.bulk_update(
            [Submission(pk=pk, code_key=solution_key(rows)) for pk, rows in files.items()],
            ["code_key"],
        )
        last = ids[-1]


class Migration(migrations.Migration):
    dependencies = [
        ("submissions", "0002_submission_api_token"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="code_key",
            field=models.BinaryField(
                editable=False,
                help_text="submissions.fingerprint.solution_key of the files, made once on "
                "arrival: equal for solutions that differ only in comments, whitespace, file "
                "names or order. Null where a row was written without the services; readers compute "
                "it then.",
                max_length=16,
                null=True,
            ),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
