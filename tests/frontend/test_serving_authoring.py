"""Authoring a serving task through Django's test client: the grading form for the
workload, SLOs, objective, model and allowed flags, and the reference config's editor
with the platform's checks answered at once. The draft is the catalog's
serve-shared-prefix task, imported as the bundle importer does. vLLM's own check of
the saved reference, through a real worker, is in tests/browser/test_serving_authoring.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from frontend.serving_forms import reference_context
from tasks import services
from tasks.bundle import load_bundle
from tasks.models import Task
from tests.frontend.test_authoring import html_of, logged_in

pytestmark = pytest.mark.django_db

BUNDLE = Path(__file__).resolve().parents[2] / "reference_solutions" / "serve-shared-prefix"
REFERENCE = "reference/engine.toml"


@pytest.fixture
def draft(author) -> Task:
    services.bundle_import(bundle=load_bundle(BUNDLE), user=author, publish=False)
    return Task.objects.get(slug=BUNDLE.name)


def form_post(html: str, **changes: str) -> dict[str, str]:
    """What the browser sends for the grading form as the page shows it, with
    ``changes``: text inputs, ticked boxes, selected options and text areas."""
    form = html[html.index('class="grading-form grading-form-serving"') :]
    form = form[: form.index("</form>")]
    post: dict[str, str] = {}
    for tag in re.findall(r"<input[^>]*>", form):
        name = re.search(r'name="([^"]+)"', tag)
        if name is None or name.group(1) == "csrfmiddlewaretoken":
            continue
        if 'type="checkbox"' in tag:
            if " checked" in tag:
                post[name.group(1)] = "on"
            continue
        value = re.search(r'value="([^"]*)"', tag)
        post[name.group(1)] = value.group(1) if value else ""
    for name, cells in re.findall(r'<select name="([^"]+)"[^>]*>(.*?)</select>', form, re.S):
        chosen = re.search(r'<option value="([^"]*)" selected>', cells)
        post[name] = chosen.group(1) if chosen else ""
    for name, text in re.findall(r'<textarea name="([^"]+)"[^>]*>(.*?)</textarea>', form, re.S):
        post[name] = text.lstrip("\n").replace("&quot;", '"')
    return {**post, **changes}


def field_errors(html: str, name: str) -> list[str]:
    """The errors shown beside the input named ``name``."""
    block = re.search(rf'name="{name}".*?(?=<div class="field|<td|</tr>|</section>)', html, re.S)
    assert block is not None, f"no field {name} on the page"
    return re.findall(r'<p class="field-error" role="alert">(.*?)</p>', block.group(0))


def test_the_grading_tab_shows_the_tasks_settings_field_by_field(author, draft) -> None:
    html = html_of(logged_in(author).get(reverse("task-grading", args=[draft.slug])))
    assert 'name="workload_prefix_len"' in html and 'value="768"' in html
    assert re.search(r'name="objective_rates"[^>]*value="4, 6, 8, 12, 16, 24, 32"', html)
    assert re.search(r'<option value="max_rate" selected>', html)
    flags = re.findall(r'name="flag_\d+_name"[^>]*value="([^"]*)"', html)
    assert flags == draft.grading["allowed"]
    assert re.search(r'name="tiny_hidden_size"[^>]*value="384"', html)
    # The reference's editor, filled from the hidden file, with nothing checked yet.
    assert 'id="serving-reference"' in html and "enable_prefix_caching = false" in html
    assert 'id="serving-check"' not in html


def test_saving_the_form_unchanged_keeps_the_table_as_the_bundle_wrote_it(author, draft) -> None:
    client = logged_in(author)
    url = reverse("task-grading", args=[draft.slug])
    before = draft.grading
    response = client.post(url, form_post(html_of(client.get(url))))
    assert response.status_code == 302, response.content.decode()[:3000]
    draft.refresh_from_db()
    assert draft.grading == before


def test_new_flags_ranges_and_rates_land_in_the_table(author, draft) -> None:
    client = logged_in(author)
    url = reverse("task-grading", args=[draft.slug])
    html = html_of(client.get(url))
    blank = len(draft.grading["allowed"])  # the first blank row
    post = form_post(
        html,
        **{
            f"flag_{blank}_name": "enable-chunked-prefill",
            "flag_1_high": "32",
            "objective_rates": "2, 4, 8",
            "slo_e2el_ms": "5000",
            "workload_arrival": "gamma",
            "workload_burstiness": "0.5",
        },
    )
    assert client.post(url, post).status_code == 302
    draft.refresh_from_db()
    grading = draft.grading
    assert grading["allowed"][-1] == "enable_chunked_prefill"
    assert grading["ranges"]["max_num_seqs"] == [1, 32]
    assert grading["objective"] == {"kind": "max_rate", "rates": [2, 4, 8]}
    assert grading["slo"]["e2el_ms"] == 5000
    assert (grading["workload"]["arrival"], grading["workload"]["burstiness"]) == ("gamma", 0.5)


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"workload_burstiness": "3"}, "workload_burstiness", "a Poisson process has burstiness 1"),
        ({"objective_rates": "8, 4"}, "objective_rates", "positive and increasing"),
        ({"objective_rates": "4, fast"}, "objective_rates", "is not a number"),
        ({"tiny_num_attention_heads": "5"}, "tiny_num_attention_heads", "must divide"),
        ({"slo_attainment": "1.5"}, "slo_attainment", "must lie in [0.01, 1]"),
        ({"flag_0_name": "trust_remote_code"}, None, "--trust-remote-code runs or loads code"),
        ({"flag_1_low": "64", "flag_1_high": "1"}, "flag_1_low", "low first"),
    ],
)
def test_a_bad_setting_is_named_beside_its_field_and_nothing_is_saved(
    author, draft, changes, field, message
) -> None:
    client = logged_in(author)
    url = reverse("task-grading", args=[draft.slug])
    before = draft.grading
    html = html_of(client.post(url, form_post(html_of(client.get(url)), **changes)), 400)
    if field is None:
        errors = re.search(r'<div class="form-errors" role="alert">(.*?)</div>', html, re.S)
        assert errors is not None and message in errors.group(1)
    else:
        assert any(message in error for error in field_errors(html, field)), field_errors(
            html, field
        )
    draft.refresh_from_db()
    assert draft.grading == before


def test_a_new_serving_draft_saves_its_settings_before_its_reference_is_written(author) -> None:
    client = logged_in(author)
    response = client.post(
        reverse("task-create"),
        {
            "title": "Serve long prompts",
            "slug": "serve-long",
            "kind": "serving",
            "difficulty": "easy",
            "hardware": "cpu",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    url = reverse("task-grading", args=["serve-long"])
    html = html_of(client.get(url))
    assert "Not written yet" in html
    assert client.post(url, form_post(html, workload_rate="2")).status_code == 302
    assert Task.objects.get(slug="serve-long").grading["workload"]["rate"] == 2


def _reference_post(client, draft: Task, content: str, status: int) -> str:
    url = reverse("task-serving-reference", args=[draft.slug])
    return html_of(client.post(url, {"content": content}, HTTP_HX_REQUEST="true"), status)


def test_a_reference_with_a_flag_the_task_refuses_is_named_and_not_saved(author, draft) -> None:
    client = logged_in(author)
    before = draft.files.get(path=REFERENCE).content
    html = _reference_post(client, draft, "block_size = 16\nmax_num_seqs = 99\n", 200)
    errors = re.findall(r'<p class="field-error" role="alert">(.*?)</p>', html)
    assert any(e.startswith("--block-size: is not one this task lets you set") for e in errors)
    assert any("--max-num-seqs: must be between 1 and 64" in e for e in errors)
    assert draft.files.get(path=REFERENCE).content == before
    assert 'id="serving-check"' not in html  # nothing was sent to vLLM


@pytest.mark.parametrize(
    ("content", "message"),
    [("max_num_seqs = [", "config: is not TOML"), ("", "config: sets no flag")],
)
def test_a_reference_that_is_no_config_is_refused(author, draft, content, message) -> None:
    html = _reference_post(logged_in(author), draft, content, 200)
    assert message in html and 'id="serving-check"' not in html


def test_without_htmx_a_refused_reference_comes_back_on_the_whole_page(author, draft) -> None:
    url = reverse("task-serving-reference", args=[draft.slug])
    html = html_of(logged_in(author).post(url, {"content": "block_size = 16"}), 400)
    assert "grading-form-serving" in html and "--block-size: is not one" in html


def test_saving_a_reference_the_gate_passes_stores_it_and_asks_vllm(author, draft) -> None:
    client = logged_in(author)
    text = "enable_prefix_caching = false\nmax_num_seqs = 8\n"
    html = _reference_post(client, draft, text, 200)
    assert draft.files.get(path=REFERENCE).content == text
    assert draft.files.get(path=REFERENCE).visibility == "hidden"
    # The fragment asks for vLLM's answer; the job's id is the author's session's.
    assert reverse("task-serving-reference-check", args=[draft.slug]) in html
    assert f"serving-config-check:{draft.pk}" in client.session


def test_the_check_of_someone_elses_draft_is_not_found(author, colleague, draft) -> None:
    url = reverse("task-serving-reference-check", args=[draft.slug])
    assert logged_in(colleague).get(url).status_code == 404
    post = reverse("task-serving-reference", args=[draft.slug])
    assert logged_in(colleague).post(post, {"content": "max_num_seqs = 1"}).status_code == 404
    assert draft.files.get(path=REFERENCE).content != "max_num_seqs = 1"


def test_without_a_check_asked_for_the_fragment_is_empty(author, draft, rf) -> None:
    url = reverse("task-serving-reference-check", args=[draft.slug])
    html = html_of(logged_in(author).get(url))
    assert 'data-state="none"' in html and "hx-trigger" not in html
    request = rf.get("/")
    request.session = {}
    assert reference_context(request, draft)["reference_checking"] is False
