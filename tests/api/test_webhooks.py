"""Webhooks against a real HTTP server on 127.0.0.1, delivered by a real Celery
worker; signatures are checked here with hmac/hashlib, not the platform's code."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import certifi
import pytest
from django.test import override_settings

from submissions import services as submission_services
from submissions.models import Submission, SubmissionFile, SubmissionStatus
from tests import recorded
from tests.api.conftest import bearer, token_for
from webhooks import addresses, services
from webhooks.models import DeliveryStatus, WebhookDelivery

# A real grading of row-softmax (the task fixture's slug) on this CPU host: accepted,
# its speedup timed under Triton's interpreter and so no score (tests/recorded.py).
GRADED = recorded.INTERPRETER


class Receiver:
    """An HTTP endpoint that answers with the given statuses in turn (the last repeats)."""

    def __init__(self, statuses: list[int], location: str | None = None) -> None:
        self.statuses = statuses
        self.requests: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append(
                    {"headers": dict(self.headers), "body": body, "at": time.monotonic()}
                )
                status = receiver.statuses[min(len(receiver.requests), len(statuses)) - 1]
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.end_headers()
                self.wfile.write(b"ok" if status < 300 else b"not now")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, count: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(self.requests) >= count, f"got {len(self.requests)} of {count} requests"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver_factory():
    made: list[Receiver] = []

    def make(statuses: list[int], location: str | None = None) -> Receiver:
        made.append(Receiver(statuses, location))
        return made[-1]

    yield make
    for receiver in made:
        receiver.close()


def verify(secret: str, request: dict[str, Any]) -> None:
    """Standard Webhooks verification, written out independently."""
    headers = {k.lower(): v for k, v in request["headers"].items()}
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + request["body"]
    key = base64.b64decode(secret.removeprefix("whsec_"))
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    version, signature = headers["webhook-signature"].split(",", 1)
    assert version == "v1"
    assert hmac.compare_digest(signature, expected)
    assert abs(int(headers["webhook-timestamp"]) - time.time()) < 60


def register(owner: Any, url: str, events: list[str] | None = None) -> tuple[int, str]:
    response = bearer(token_for(owner)).post(
        "/api/v1/webhooks/", {"url": url, **({"events": events} if events else {})}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()["id"], response.json()["secret"]


def grade(task: Any, owner: Any) -> Submission:
    """A running submission graded through the trusted store (no sandbox involved)."""
    submission = Submission.objects.create(
        task_version=task.current_version,
        submitter=owner,
        model_name="model-a",
        run_id="run-7",
        status=SubmissionStatus.RUNNING,
        attempts=1,
    )
    for path, content in recorded.files(GRADED).items():
        SubmissionFile.objects.create(submission=submission, path=path, content=content)
    submission_services.grading_store(
        submission_id=submission.pk, attempt=1, report=recorded.report(GRADED)
    )
    return submission


def deliveries(owner: Any, endpoint_id: int) -> list[dict[str, Any]]:
    return (
        bearer(token_for(owner))
        .get(f"/api/v1/webhooks/{endpoint_id}/deliveries/")
        .json()["results"]
    )


def wait_until_final(endpoint_id: int, timeout: float = 30) -> WebhookDelivery:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        delivery = WebhookDelivery.objects.filter(endpoint_id=endpoint_id).first()
        if delivery is not None and delivery.status != DeliveryStatus.PENDING:
            return delivery
        time.sleep(0.05)
    raise AssertionError("the delivery never finished")


@pytest.mark.django_db(transaction=True)
def test_a_graded_submission_is_posted_signed_to_the_callback(
    celery_worker_process, receiver_factory, task, owner
):
    receiver = receiver_factory([200])
    endpoint_id, secret = register(owner, receiver.url)
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32

    submission = grade(task, owner)
    receiver.wait_for(1)

    request = receiver.requests[0]
    verify(secret, request)
    event = json.loads(request["body"])
    assert event["type"] == "submission.graded"
    assert event["data"]["id"] == submission.pk
    assert event["data"]["verdict"] == "accepted"
    assert event["data"]["run_id"] == "run-7"
    assert event["data"]["timing_mode"] == "interpreter"
    assert event["data"]["speedup"] == pytest.approx(recorded.report(GRADED)["speedup"])
    assert event["data"]["speedup_scored"] is False and event["data"]["score_speedup"] is None
    assert event["data"]["score"] == pytest.approx(5 / 7), "correct (5) of 7 points"
    delivery = wait_until_final(endpoint_id)
    assert delivery.status == DeliveryStatus.DELIVERED
    log = deliveries(owner, endpoint_id)
    assert log[0]["webhook_id"] == request["headers"]["webhook-id"]
    assert log[0]["attempt_log"][0]["status_code"] == 200
    assert log[0]["attempt_log"][0]["response_excerpt"] == "ok"


@pytest.mark.django_db(transaction=True)
def test_a_failing_endpoint_gets_retries_with_growing_delays(
    celery_worker_process, receiver_factory, task, owner
):
    receiver = receiver_factory([500, 503, 200])
    endpoint_id, secret = register(owner, receiver.url)

    grade(task, owner)
    receiver.wait_for(3)

    ids = {r["headers"]["webhook-id"] for r in receiver.requests}
    assert len(ids) == 1, "a retry is the same message"
    for request in receiver.requests:
        verify(secret, request)
    gaps = [
        b["at"] - a["at"] for a, b in zip(receiver.requests, receiver.requests[1:], strict=False)
    ]
    assert gaps[0] >= 0.3 and gaps[1] >= 0.6, gaps
    assert wait_until_final(endpoint_id).status == DeliveryStatus.DELIVERED
    log = deliveries(owner, endpoint_id)[0]
    assert [a["status_code"] for a in log["attempt_log"]] == [500, 503, 200]
    assert log["attempt_log"][0]["response_excerpt"] == "not now"
    assert log["attempts"] == 3 and log["next_attempt_at"] is None


@pytest.mark.django_db(transaction=True)
def test_an_endpoint_that_never_answers_2xx_is_given_up_after_the_last_retry(
    celery_worker_process, receiver_factory, task, owner
):
    receiver = receiver_factory([500])
    endpoint_id, _ = register(owner, receiver.url)

    grade(task, owner)

    delivery = wait_until_final(endpoint_id)
    assert delivery.status == DeliveryStatus.FAILED
    assert delivery.attempts == 3 == len(receiver.requests)
    assert delivery.last_status_code == 500


@pytest.mark.django_db
@override_settings(WEBHOOK_RETRY_DELAYS_S=[])
def test_redirects_are_not_followed(
    receiver_factory, task, owner, django_capture_on_commit_callbacks
):
    target = receiver_factory([200])
    redirecting = receiver_factory([302], location=target.url)
    register(owner, redirecting.url)
    with django_capture_on_commit_callbacks():
        [delivery_id] = services.submission_graded(submission_id=grade(task, owner).pk)

    assert services.delivery_attempt(delivery_id=delivery_id, attempt=1) == "failed"
    assert services.delivery_attempt(delivery_id=delivery_id, attempt=1) == "not claimed"
    assert len(redirecting.requests) == 1
    assert target.requests == []


@pytest.mark.django_db
def test_events_go_only_to_the_submitters_endpoints_subscribed_to_them(
    task, owner, colleague, django_capture_on_commit_callbacks
):
    graded_only, _ = register(owner, "http://127.0.0.1:9/graded", ["submission.graded"])
    reviewed_only, _ = register(owner, "http://127.0.0.1:9/reviewed", ["submission.reviewed"])
    register(colleague, "http://127.0.0.1:9/colleague")
    with django_capture_on_commit_callbacks():  # not run: no delivery leaves this test
        submission = grade(task, owner)

    with django_capture_on_commit_callbacks():
        graded = services.submission_graded(submission_id=submission.pk)
        reviewed = services.submission_reviewed(submission_id=submission.pk)

    assert [WebhookDelivery.objects.get(pk=i).endpoint_id for i in graded] == [graded_only]
    assert [WebhookDelivery.objects.get(pk=i).endpoint_id for i in reviewed] == [reviewed_only]
    assert WebhookDelivery.objects.get(pk=reviewed[0]).event == "submission.reviewed"


@pytest.mark.parametrize(
    "url",
    [
        "http://93.184.215.14/hook",
        "https://127.0.0.1/hook",
        "https://localhost/hook",
        "https://[::1]/hook",
        "https://10.1.2.3/hook",
        "https://192.168.0.10/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://[fd00::1]/hook",
        "https://0.0.0.0/hook",
        "https://user:pw@93.184.215.14/hook",
        "ftp://93.184.215.14/hook",
    ],
)
def test_production_refuses_plain_http_and_non_public_addresses(url):
    with pytest.raises(addresses.RefusedUrl):
        addresses.check_callback_url(url, allow_insecure=False)


def test_production_accepts_https_to_a_public_address():
    addresses.check_callback_url("https://93.184.215.14/hook", allow_insecure=False)


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("http://127.0.0.1:8080/hook", True),
        ("http://localhost:8080/hook", True),
        ("http://10.0.0.5/hook", False),
        ("http://192.168.1.1/hook", False),
    ],
)
def test_development_allows_loopback_only_in_addition(url, allowed):
    if allowed:
        addresses.check_callback_url(url, allow_insecure=True)
    else:
        with pytest.raises(addresses.RefusedUrl):
            addresses.check_callback_url(url, allow_insecure=True)


@pytest.mark.django_db
@override_settings(WEBHOOKS_ALLOW_INSECURE=False)
def test_registration_through_the_api_says_why_a_url_is_refused(owner):
    response = bearer(token_for(owner)).post(
        "/api/v1/webhooks/", {"url": "http://127.0.0.1:9/hook"}, format="json"
    )

    assert response.status_code == 400
    assert "https" in response.json()["error"]["fields"]["url"][0]


@pytest.mark.django_db
def test_the_sweep_resends_deliveries_whose_retry_is_long_overdue(task, owner):
    from datetime import timedelta

    from django.utils import timezone

    endpoint_id, _ = register(owner, "http://127.0.0.1:9/hook")
    overdue, recent = (
        WebhookDelivery.objects.create(
            endpoint_id=endpoint_id,
            event="submission.graded",
            body="{}",
            attempts=1,
            next_attempt_at=timezone.now() - timedelta(minutes=minutes),
        )
        for minutes in (30, 1)
    )

    swept = services.deliveries_sweep(grace=timedelta(minutes=10))

    assert swept == [overdue.pk]
    assert recent.pk not in swept


@pytest.mark.django_db(transaction=True)
def test_a_delivery_goes_to_the_address_that_was_checked_not_to_a_rebound_name(
    receiver_factory, task, owner, monkeypatch, django_capture_on_commit_callbacks
):
    """DNS rebinding: the name answers with an allowed address when checked and
    with a private one afterwards. The delivery connects to the checked address
    (the name is never resolved again) and still says the name in its Host header."""
    receiver = receiver_factory([200])
    port = receiver.server.server_address[1]
    name = "hooks.rebinding.test"
    real_getaddrinfo = socket.getaddrinfo
    lookups: list[str] = []

    def rebinding(host, port_, *args, **kwargs):
        if host != name:
            return real_getaddrinfo(host, port_, *args, **kwargs)
        lookups.append(host)
        # Registration and the check before delivery see loopback (allowed here);
        # any later lookup would see a private address.
        address = "127.0.0.1" if len(lookups) <= 2 else "10.255.255.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port_))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    # This test makes the attempt itself: a Celery worker alive in the same session
    # (another test's) must not take the job and deliver first from its own process.
    queued: list[list[int]] = []
    monkeypatch.setattr(services, "_enqueue", lambda ids, countdown=0: queued.append(ids))
    register(owner, f"http://{name}:{port}/hook")
    with django_capture_on_commit_callbacks():
        [delivery_id] = services.submission_graded(submission_id=grade(task, owner).pk)

    assert queued[-1] == [delivery_id]  # (the first is the grading's own event)
    assert services.delivery_attempt(delivery_id=delivery_id, attempt=1) == "delivered"
    assert len(lookups) == 2, "the name is resolved at registration and at the check only"
    headers = {k.lower(): v for k, v in receiver.requests[0]["headers"].items()}
    assert headers["host"] == f"{name}:{port}"


def test_the_checked_address_is_where_a_delivery_connects():
    pinned = addresses.check_callback_url(
        "https://93.184.215.14:8443/hook?x=1", allow_insecure=False
    )
    assert pinned.url == "https://93.184.215.14:8443/hook?x=1"
    assert pinned.host == "93.184.215.14:8443"


def test_a_name_is_pinned_with_its_own_host_header_and_tls_name(monkeypatch):
    address = "2606:2800:21f:cb07:6820:80da:af6b:8b2c"

    def public(host, port, *args, **kwargs):
        return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0))]

    monkeypatch.setattr(socket, "getaddrinfo", public)

    pinned = addresses.check_callback_url("https://Bücher.example/hook", allow_insecure=False)

    assert pinned.url == f"https://[{address}]/hook"
    assert pinned.host == pinned.server_name == "xn--bcher-kva.example"


def make_certificates(folder: Path, name: str) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate for ``name`` signed by it."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=folder)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=Test CA",
            "-keyout", "ca.key", "-out", "ca.pem")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
            "-keyout", "server.key", "-out", "server.csr")  # fmt: skip
    (folder / "san.ext").write_text(f"subjectAltName=DNS:{name}\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "1", "-extfile", "san.ext",
            "-out", "server.pem")  # fmt: skip
    return folder / "ca.pem", folder / "server.pem", folder / "server.key"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("certified", ["hooks.tls.test", "someone-else.test"])
def test_https_to_the_pinned_address_asks_for_and_checks_the_name(
    certified, tmp_path, receiver_factory, task, owner, monkeypatch,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    """The delivery connects to the checked address but TLS still asks for the
    URL's name (SNI) and checks the certificate against it."""
    name = "hooks.tls.test"
    ca, cert, key = make_certificates(tmp_path, certified)
    receiver = receiver_factory([200])
    asked: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, server_name, ctx: asked.append(server_name)
    receiver.server.socket = context.wrap_socket(receiver.server.socket, server_side=True)
    port = receiver.server.server_address[1]
    real_getaddrinfo = socket.getaddrinfo

    def resolve(host, port_, *args, **kwargs):
        if host == name:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port_))]
        return real_getaddrinfo(host, port_, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setattr(certifi, "where", lambda: str(ca))
    # The test makes the attempt itself; no worker of the session may take the job.
    monkeypatch.setattr(services, "_enqueue", lambda ids, countdown=0: None)
    register(owner, f"https://{name}:{port}/hook")
    with django_capture_on_commit_callbacks():
        [delivery_id] = services.submission_graded(submission_id=grade(task, owner).pk)

    outcome = services.delivery_attempt(delivery_id=delivery_id, attempt=1)

    assert asked == [name]
    if certified == name:
        assert outcome == "delivered"
        headers = {k.lower(): v for k, v in receiver.requests[0]["headers"].items()}
        assert headers["host"] == f"{name}:{port}"
    else:
        assert outcome.startswith("retry")
        assert receiver.requests == []
        (attempt,) = WebhookDelivery.objects.get(pk=delivery_id).attempt_log.all()
        assert "CERTIFICATE_VERIFY_FAILED" in attempt.error
