"""The serving driver: runs inside an engine's sandbox, in the serving environment.

It serves the grader's commands over the kernel harness's channel (fd 3 in,
fd 4 out, framed by ``harness.protocol``):

- ``start``: start vLLM's OpenAI-compatible server (``python -m
  vllm.entrypoints.openai.api_server``) with the checked engine arguments,
  listening on the sandbox's own loopback, in a process group of its own;
  answer once ``/health`` answers (with the seconds that took), or with the
  end of the engine's log when it exits first or does not come up in time;
- ``bench``: drive a workload with vLLM's own benchmark client
  (``vllm.benchmarks.serve``: its datasets, arrival process, request
  functions and ``calculate_metrics``), with the arguments the grader sends,
  and answer with vLLM's result; the engine must still be running after;
- ``stop``: SIGTERM to the engine's process group, SIGKILL after a grace
  period; answer with how it ended.

The driver and the client run in the engine's sandbox because its network
namespace holds nothing but its loopback interface: nothing outside can reach
the engine. Nothing here runs a solver's code: a solver sends engine flags,
which went through ``graders.serving.flags`` and vLLM's own checks before
the sandbox started. The grader believes the client's figures on that ground,
and still checks them for shape (``graders.serving.engine``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Any

from harness.main import read_message, send

HOST = "127.0.0.1"
PORT = 8000
LOG = Path("engine.log")
LOG_TAIL_BYTES = 8000
STOP_GRACE_S = 15.0


def _tail() -> str:
    try:
        with LOG.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - LOG_TAIL_BYTES))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _healthy() -> bool:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{PORT}/health", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def write_length_prompts(
    model: str, *, rows: list[list[int]], requests: int, seed: int, path: str
) -> None:
    """A length-distribution workload as vLLM's custom dataset reads it (JSONL of
    ``prompt`` and ``output_tokens``), into ``path`` in the working folder: ``requests``
    rows drawn from the task's (input, output) lengths by ``seed``, each with a prompt of
    exactly its input length in the model's tokenizer. A prompt is words drawn at random
    from the tokenizer's one-token words, so that no two requests share a prefix by
    accident (which prefix caching would reward)."""
    import random

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)

    def count(text: str) -> int:
        return len(tokenizer(text).input_ids)

    words = sorted(
        text
        for token in tokenizer.get_vocab()
        if (text := tokenizer.convert_tokens_to_string([token])).startswith(" ")
        and text[1:].isalpha()
        and count(text) == 1
    )
    if not words:
        raise ValueError("the tokenizer has no one-token words to build prompts of")
    rng = random.Random(seed)
    drawn: list[list[int]] = []
    while len(drawn) < requests:  # every row once per pass, in a seeded order
        drawn += rng.sample(rows, len(rows))
    lines = []
    for prompt_len, output_len in drawn[:requests]:
        prompt = "".join(rng.choice(words) for _ in range(prompt_len))
        while count(prompt) > prompt_len:  # words that merged: trim to the length
            prompt = prompt[: prompt.rindex(" ")]
        while count(prompt) < prompt_len:
            prompt += rng.choice(words)
        lines.append(json.dumps({"prompt": prompt, "output_tokens": output_len}))
    Path(path).write_text("\n".join(lines) + "\n")


class Driver:
    def __init__(self) -> None:
        self.engine: subprocess.Popen[bytes] | None = None
        self.model = ""

    def start(self, header: dict[str, Any]) -> dict[str, Any]:
        self.model = str(header["model"])
        argv = [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            self.model,
            "--host",
            HOST,
            "--port",
            str(PORT),
            "--disable-uvicorn-access-log",
            *[str(arg) for arg in header["argv"]],
        ]
        began = time.monotonic()
        with LOG.open("wb") as log:
            self.engine = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = began + float(header["timeout_s"])
        while time.monotonic() < deadline:
            code = self.engine.poll()
            if code is not None:
                return {"ready": False, "exit_code": code, "log": _tail()}
            if _healthy():
                return {"ready": True, "ready_s": round(time.monotonic() - began, 3)}
            time.sleep(0.25)
        return {"ready": False, "exit_code": None, "log": _tail()}

    def bench(self, header: dict[str, Any]) -> dict[str, Any]:
        from vllm.benchmarks.serve import add_cli_args, main
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        if self.engine is None or self.engine.poll() is not None:
            return {"engine_alive": False, "log": _tail()}
        if header.get("lengths"):
            write_length_prompts(self.model, **header["lengths"])
        parser = FlexibleArgumentParser()
        add_cli_args(parser)
        args = parser.parse_args(
            [
                "--backend",
                "vllm",
                "--base-url",
                f"http://{HOST}:{PORT}",
                "--model",
                self.model,
                "--disable-tqdm",
                *[str(arg) for arg in header["argv"]],
            ]
        )
        began = time.monotonic()
        with contextlib.redirect_stdout(sys.stderr):  # the client prints its tables
            result = main(args)
        alive = self.engine.poll() is None
        return {
            "engine_alive": alive,
            "wall_s": round(time.monotonic() - began, 3),
            "result": json.loads(json.dumps(result, default=str)),
            "log": "" if alive else _tail(),
        }

    def stop(self, _header: dict[str, Any]) -> dict[str, Any]:
        if self.engine is None:
            return {"stopped": True, "exit_code": None}
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.engine.pid, signal.SIGTERM)
        try:
            code = self.engine.wait(STOP_GRACE_S)
            killed = False
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.engine.pid, signal.SIGKILL)
            code = self.engine.wait()
            killed = True
        # Anything the engine left in its group (workers) goes too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.engine.pid, signal.SIGKILL)
        return {"stopped": True, "exit_code": code, "killed": killed}


def main() -> None:
    driver = Driver()
    handlers = {"start": driver.start, "bench": driver.bench, "stop": driver.stop}
    send({"op": "hello", "seq": 0, "ok": True, "pid": os.getpid()})
    status = 0
    try:
        while True:
            message = read_message()
            if message is None:
                break
            header = message[0]
            handler = handlers.get(str(header.get("op")))
            if handler is None:  # bye
                break
            try:
                reply = {"ok": True, **handler(header)}
            except Exception as exc:
                reply = {
                    "ok": False,
                    "error": {
                        "type": type(exc).__name__,
                        "message": str(exc)[:2000],
                        "traceback": traceback.format_exc()[-4000:],
                    },
                }
            send({"op": header["op"], "seq": header.get("seq"), **reply})
    except BaseException:
        status = 1
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            driver.stop({})
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
