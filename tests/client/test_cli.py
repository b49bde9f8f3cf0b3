import csv
import io
import json
import os
import subprocess
import sys
import threading
import time

import pytest
from django.db import connection

from submissions import services
from submissions.models import Submission, SubmissionFile, SubmissionStatus
from tests.client.conftest import lines_of, run

REPORT = {
    "verdict": "accepted",
    "reason": "ok",
    "speedup": 1.5,
    "timing_mode": "wall",
    "timing": {
        "significant": True,
        "reference": {"median_s": 0.3},
        "submission": {"median_s": 0.2},
    },
    "hardware": {"kind": "cpu", "name": "Test CPU"},
    "duration_s": 2.0,
}


def write_manifest(path, count, run_id="run-1", task="row-softmax"):
    with path.open("w") as f:
        for i in range(count):
            f.write(
                json.dumps(
                    {
                        "task": task,
                        "model": "m-7b",
                        "run_id": run_id,
                        "labels": {"i": str(i)},
                        "files": {"solution.py": f"# attempt {i}\n"},
                    }
                )
                + "\n"
            )
    return path


def test_the_installed_command_lists_tasks_from_the_live_server(server):
    env = dict(os.environ)
    command = os.path.join(os.path.dirname(sys.executable), "benchwright")

    done = subprocess.run(
        [command, "tasks"], env=env, capture_output=True, text=True, timeout=60, check=False
    )

    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split()[:5] == ["SLUG", "KIND", "DIFFICULTY", "HARDWARE", "VERSION"]
    assert sorted(r.split()[0] for r in rows) == ["gemm-fp16", "row-softmax"]


def test_tasks_filters_and_prints_json(server):
    code, out = run("tasks", "--tags", "gemm", "--hardware", "h100", "--json")

    assert code == 0
    assert [t["slug"] for t in lines_of(out)] == ["gemm-fp16"]


def test_submit_sends_files_under_their_names_with_labels(server, tmp_path):
    solution = tmp_path / "solution.py"
    solution.write_text("import torch  # é\n", encoding="utf-8")

    code, out = run(
        "submit",
        "--task",
        "row-softmax",
        "--model",
        "m-7b",
        "--run-id",
        "r1",
        "--label",
        "temperature=0.2",
        "--json",
        str(solution),
    )

    assert code == 0
    body = json.loads(out)
    submission = Submission.objects.get(pk=body["id"])
    assert submission.submitter == server["user"]
    assert submission.labels == {"temperature": "0.2"}
    assert submission.files.get().content == "import torch  # é\n"
    assert submission.files.get().path == "solution.py"


def test_an_api_refusal_is_exit_1_with_the_reason(server, tmp_path, capsys):
    bad = tmp_path / "x.py"
    bad.write_text("x = 1\n")

    code, _ = run("submit", "--task", "no-such-task", "--model", "m", str(bad))

    assert code == 1
    assert "no published task" in capsys.readouterr().err
    assert not Submission.objects.exists()


def test_a_missing_token_is_refused_clearly(server, monkeypatch, capsys):
    monkeypatch.delenv("BENCHWRIGHT_TOKEN")

    assert run("tasks")[0] == 1
    assert "not_authenticated" in capsys.readouterr().err


def test_submit_batch_sends_chunks_and_resumes_without_duplicates(server, tmp_path, capsys):
    manifest = write_manifest(tmp_path / "run.jsonl", 7)
    state = tmp_path / "run.jsonl.state.json"

    code, out = run("submit-batch", str(manifest), "--chunk-size", "3")

    assert code == 0
    progress = capsys.readouterr().err
    assert "submitting" in progress and "7/7" in progress, "a progress bar on stderr"
    assert "7 submissions (7 sent now, 0 already accepted before)" in out
    assert Submission.objects.count() == 7
    assert sorted(int(s.labels["i"]) for s in Submission.objects.all()) == list(range(7))

    # Interrupted after the last chunk was accepted but before its answer was saved:
    # the resumed run re-sends that chunk with the same key and the server replays it.
    recorded = json.loads(state.read_text())
    last_key = sorted(recorded["done"], key=lambda k: max(recorded["done"][k]))[-1]
    del recorded["done"][last_key]
    state.write_text(json.dumps(recorded))

    code, out = run("submit-batch", str(manifest), "--chunk-size", "3", "--no-progress")

    assert code == 0
    assert "7 submissions (1 sent now, 6 already accepted before)" in out
    assert Submission.objects.count() == 7, "the replayed chunk created nothing"


def test_submit_batch_stops_at_a_refused_chunk_and_a_rerun_finishes_the_rest(
    server, tmp_path, capsys
):
    manifest = tmp_path / "run.jsonl"
    write_manifest(manifest, 6)
    lines = manifest.read_text().splitlines()
    lines[4] = lines[4].replace("row-softmax", "no-such-task")
    manifest.write_text("\n".join(lines) + "\n")

    code, _ = run("submit-batch", str(manifest), "--chunk-size", "2", "--no-progress")

    assert code == 1
    assert '"task"' in capsys.readouterr().err
    assert Submission.objects.count() == 4, "the first two chunks went through, whole"

    lines[4] = lines[4].replace("no-such-task", "row-softmax")
    manifest.write_text("\n".join(lines) + "\n")
    code, out = run("submit-batch", str(manifest), "--chunk-size", "2", "--no-progress")

    assert code == 0
    assert "6 submissions (2 sent now, 4 already accepted before)" in out
    assert Submission.objects.count() == 6


def test_a_bad_manifest_line_is_reported_before_anything_is_sent(server, tmp_path, capsys):
    manifest = write_manifest(tmp_path / "run.jsonl", 3)
    manifest.write_text(manifest.read_text() + '{"task": "row-softmax"}\n')

    code, _ = run("submit-batch", str(manifest), "--no-progress")

    assert code == 2
    assert "line 4: missing model, files" in capsys.readouterr().err
    assert not Submission.objects.exists()


def make_run(server, count, run_id):
    """Submissions of a run, made without enqueueing: the test plays the grading host."""
    made = []
    for i in range(count):
        s = Submission.objects.create(
            task_version=server["task"].current_version,
            submitter=server["user"],
            model_name="m-7b",
            run_id=run_id,
            labels={"i": str(i)},
        )
        SubmissionFile.objects.create(submission=s, path="solution.py", content="x = 1\n")
        made.append(s)
    return made


def grade_all(submissions, report=REPORT):
    for s in submissions:
        assert services.submission_claim(submission_id=s.pk)
        services.grading_store(submission_id=s.pk, attempt=1, report=report)


def test_wait_polls_until_every_submission_of_the_run_has_finished(server):
    made = make_run(server, 3, "run-w")
    grade_all(made[:1])

    def finish_later():
        try:
            time.sleep(1.0)
            grade_all(made[1:2])
            services.submission_cancel(submission=made[2])
        finally:
            connection.close()

    worker = threading.Thread(target=finish_later)
    started = time.monotonic()
    worker.start()
    code, out = run("wait", "run-w", "--interval", "0.2", "--no-progress")
    worker.join()

    assert code == 0
    assert time.monotonic() - started >= 1.0, "it waited for the last two"
    assert out.strip() == "run run-w: 3 finished; accepted: 2"
    assert Submission.objects.get(pk=made[2].pk).status == SubmissionStatus.CANCELLED


def test_wait_gives_up_after_its_timeout(server):
    make_run(server, 1, "run-slow")

    code, out = run("wait", "run-slow", "--interval", "0.1", "--timeout", "0.5", "--no-progress")

    assert code == 3
    assert "1 of 1 unfinished" in out


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_results_exports_a_runs_grades(server, fmt):
    made = make_run(server, 3, "run-r")
    grade_all(made)
    make_run(server, 1, "another-run")

    code, out = run("results", "run-r", "--format", fmt)

    assert code == 0
    rows = lines_of(out) if fmt == "jsonl" else list(csv.DictReader(io.StringIO(out)))
    assert sorted(int(r["id"]) for r in rows) == sorted(s.pk for s in made)
    for row in rows:
        assert row["verdict"] == "accepted"
        assert float(row["points"]) == 5.0
        assert row["task"] == "row-softmax" and row["run_id"] == "run-r"
    if fmt == "csv":
        assert json.loads(rows[0]["labels"]).keys() == {"i"}
