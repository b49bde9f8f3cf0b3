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
from tests import recorded
from tests.client.conftest import lines_of, run


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
    assert sorted(r.split()[0] for r in rows) == ["cpu-causal-softmax", "gemm-fp16", "row-softmax"]


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


def make_run(server, count, run_id, task=None, recording=recorded.INTERPRETER):
    """Submissions of a run, made without enqueueing: the test plays the grading host.
    Each holds the files of a recorded grading (tests/recorded.py)."""
    task = task or server["task"]
    made = []
    for i in range(count):
        s = Submission.objects.create(
            task_version=task.current_version,
            submitter=server["user"],
            model_name="m-7b",
            run_id=run_id,
            labels={"i": str(i)},
        )
        for path, content in recorded.files(recording).items():
            SubmissionFile.objects.create(submission=s, path=path, content=content)
        made.append(s)
    return made


def grade_all(submissions, recording=recorded.INTERPRETER):
    """Store the recorded grading's report for each, as the grading worker would."""
    for s in submissions:
        assert services.submission_claim(submission_id=s.pk)
        services.grading_store(submission_id=s.pk, attempt=1, report=recorded.report(recording))


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


# The recorded gradings a run's results are tested on: three on the CPU task (timed
# by CPU time, real rubric: 18 points, 11 automatic), one on the GPU task graded on
# this CPU host (its speedup timed under Triton's interpreter is no score).
RESULTS_RUN = {
    "fast": ("cpu_task", recorded.ACCEPTED),
    "slower": ("cpu_task", recorded.ACCEPTED_SLOWER),
    "wrong": ("cpu_task", recorded.WRONG_ANSWER),
    "interpreted": ("task", recorded.INTERPRETER),
}


def speedup_of(recording):
    return recorded.report(recording)["speedup"]


def graded_run(server, run_id="run-r"):
    """One graded submission per RESULTS_RUN entry; their ids by name."""
    ids = {}
    for name, (task, recording) in RESULTS_RUN.items():
        [submission] = make_run(server, 1, run_id, task=server[task], recording=recording)
        grade_all([submission], recording)
        ids[name] = submission.pk
    return ids


def results(fmt, run_id="run-r"):
    code, out = run("results", run_id, "--format", fmt)
    assert code == 0
    rows = lines_of(out) if fmt == "jsonl" else list(csv.DictReader(io.StringIO(out)))
    return {int(row["id"]): row for row in rows}


def test_results_as_json_lines_keep_raw_speedups_and_mark_which_are_scores(server):
    ids = graded_run(server)
    make_run(server, 1, "another-run")

    rows = results("jsonl")

    assert sorted(rows) == sorted(ids.values())
    fast, interpreted = rows[ids["fast"]], rows[ids["interpreted"]]
    measured = recorded.report(recorded.ACCEPTED)["speedup"]
    assert (fast["timing_mode"], fast["speedup_scored"]) == ("cpu_time", True)
    assert fast["speedup"] == fast["score_speedup"] == pytest.approx(measured)
    assert fast["speedup_significant"] is True
    assert (interpreted["timing_mode"], interpreted["speedup_scored"]) == ("interpreter", False)
    assert interpreted["speedup"] == pytest.approx(speedup_of(recorded.INTERPRETER)), "kept"
    assert interpreted["score_speedup"] is None
    assert "interpreter" in interpreted["speedup_unscored_reason"]
    assert rows[ids["slower"]]["speedup_significant"] is False
    assert rows[ids["wrong"]]["speedup"] is None and rows[ids["wrong"]]["timing_mode"] is None
    assert {r["task"] for r in rows.values()} == {"cpu-causal-softmax", "row-softmax"}
    assert {r["run_id"] for r in rows.values()} == {"run-r"}


def test_results_as_csv_never_show_an_unscored_speedup_as_a_number(server):
    ids = graded_run(server)

    rows = results("csv")

    assert rows[ids["interpreted"]]["speedup"] == "not scored (interpreter)"
    assert rows[ids["interpreted"]]["timing_mode"] == "interpreter"
    assert float(rows[ids["fast"]]["speedup"]) == speedup_of(recorded.ACCEPTED)
    assert float(rows[ids["slower"]]["speedup"]) == speedup_of(recorded.ACCEPTED_SLOWER)
    assert rows[ids["slower"]]["speedup_significant"] == "False"
    assert rows[ids["wrong"]]["speedup"] == "" and rows[ids["wrong"]]["verdict"] == "wrong_answer"
    assert json.loads(rows[ids["fast"]]["labels"]) == {"i": "0"}


def test_results_as_csv_give_automatic_points_then_the_reviewers_score_and_decision(
    server, reviewer
):
    from reviews import services as review_services

    ids = graded_run(server)
    before = results("csv")
    # A reviewer takes the fast solution from the queue it entered when its grading
    # was stored (only accepted ones do; the oldest slot comes first), scores the
    # human criteria and accepts it.
    assignment = review_services.assignment_claim_next(reviewer=reviewer)
    assert assignment is not None and assignment.submission_id == ids["fast"]
    review_services.review_submit(
        assignment_id=assignment.pk,
        reviewer=reviewer,
        data=review_services.ReviewInput(
            decision="accept",
            feedback="Fused and vectorised; the error bound of exp is not stated.",
            scores={
                "clarity": review_services.ScoreInput(level=2),
                "numerical-care": review_services.ScoreInput(level=2),
                "explanation": review_services.ScoreInput(level=1),
            },
        ),
    )

    after = results("csv")

    fast_before, fast_after = before[ids["fast"]], after[ids["fast"]]
    # correct 6, speedup 1.3x 2 and 2x 2 (2.1x, significant), no integrity finding 1
    assert float(fast_before["automatic_points"]) == float(fast_before["points"]) == 11
    assert (fast_before["review_decision"], fast_before["review_score"]) == ("", "")
    assert fast_before["points_available"] == "18"
    assert fast_after["status"] == "reviewed"
    assert float(fast_after["automatic_points"]) == 11
    assert float(fast_after["points"]) == 11 + 2 + 2 + 1
    assert fast_after["review_decision"] == "accepted"
    assert float(fast_after["review_score"]) == pytest.approx(16 / 18)
    assert float(after[ids["slower"]]["points"]) == 7, "not reviewed yet: automatic only"
    assert after[ids["slower"]]["review_decision"] == ""
    assert float(after[ids["wrong"]]["points"]) == 0


def test_results_as_a_table_say_not_scored_instead_of_an_interpreter_speedup(server):
    ids = graded_run(server)

    code, out = run("results", "run-r", "--format", "table")

    assert code == 0
    header, *lines = out.splitlines()
    assert header.split() == [
        "ID",
        "TASK",
        "MODEL",
        "VERDICT",
        "TIMING",
        "SPEEDUP",
        "POINTS",
        "REVIEW",
    ]
    by_id = {int(line.split()[0]): line for line in lines}
    assert "interpreter  not scored (interpreter)  7/18" in by_id[ids["interpreted"]]
    interpreted = speedup_of(recorded.INTERPRETER)
    assert f"{interpreted:.2g}" not in by_id[ids["interpreted"]]
    assert f"{interpreted:.3g}" not in by_id[ids["interpreted"]]
    fast = f"cpu_time     {speedup_of(recorded.ACCEPTED):.3g}x  "
    assert fast in by_id[ids["fast"]] and "11/18" in by_id[ids["fast"]]
    assert f"{speedup_of(recorded.ACCEPTED_SLOWER):.3g}x (noise)" in by_id[ids["slower"]]
    assert by_id[ids["wrong"]].split()[3:7] == ["wrong_answer", "-", "-", "0/18"]
