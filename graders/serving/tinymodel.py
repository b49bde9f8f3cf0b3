"""Building a serving task's tiny model from its bundle, byte for byte the same each time.

No model can be downloaded on a grading host, so a CPU serving task names a
model by recipe: a byte-level BPE tokenizer trained on a fixed text, and a
Llama of the given shape with weights drawn from a seed. What a serving task
measures is the engine (scheduling, batching, caching), not what the model
says, so random weights serve: every request still runs the real prefill and
decode of a real architecture.

This module runs in the serving environment (``.venv-serving``: torch,
transformers and tokenizers as the engine pins them), never in the web app:
``python -m graders.serving.tinymodel OUT_DIR RECIPE_JSON``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

# The tokenizer's training text: varied English and code, a few KB, fixed forever (a
# change here changes every tiny model's tokenizer, hence its digest).
CORPUS = (
    "The quick brown fox jumps over the lazy dog. A serving engine batches requests, "
    "schedules prefill and decode steps, and keeps the key-value cache of every running "
    "sequence in blocks. When memory runs short, the scheduler preempts a sequence and "
    "recomputes it later. Chunked prefill splits a long prompt into pieces so that decode "
    "steps of other requests are not starved. Prefix caching reuses the blocks of a shared "
    "system prompt. Latency is measured as time to first token, time per output token and "
    "end-to-end latency; goodput counts the requests that meet every objective.\n"
    "def attention(q, k, v):\n    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
    "    return torch.softmax(scores, dim=-1) @ v\n"
    "for step in range(100):\n    loss = model(batch).mean()\n    loss.backward()\n"
    "0123456789 + - * / = ( ) [ ] { } < > , . ; : ! ? ' \" # @ $ % ^ & _ | ~\n"
) * 8

FILES = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json")


@dataclass(frozen=True)
class Recipe:
    """A tiny Llama: its shape, its vocabulary size and the seed of its weights."""

    seed: int = 0
    vocab_size: int = 512
    hidden_size: int = 256
    intermediate_size: int = 512
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 4096

    def parameters(self) -> int:
        """About how many weights the model has: attention and MLP per layer, the
        embeddings and the output head."""
        head = self.hidden_size // max(self.num_attention_heads, 1)
        attention = self.hidden_size * head * (2 * self.num_attention_heads)
        attention += self.hidden_size * head * (2 * self.num_key_value_heads)
        mlp = 3 * self.hidden_size * self.intermediate_size
        return self.num_hidden_layers * (attention + mlp) + 2 * self.vocab_size * self.hidden_size

    def digest(self) -> str:
        """Names the built model: a cache of built models is keyed by it."""
        text = json.dumps(asdict(self), sort_keys=True) + CORPUS
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def build(recipe: Recipe, out: Path) -> dict[str, str]:
    """Writes the model and tokenizer into ``out``; the sha256 of every file written."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=recipe.vocab_size,
        special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator([CORPUS], trainer=trainer)
    special = {"bos_token": "<s>", "eos_token": "</s>"}
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, **special)
    fast.save_pretrained(out)

    config = LlamaConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=recipe.hidden_size,
        intermediate_size=recipe.intermediate_size,
        num_hidden_layers=recipe.num_hidden_layers,
        num_attention_heads=recipe.num_attention_heads,
        num_key_value_heads=recipe.num_key_value_heads,
        max_position_embeddings=recipe.max_position_embeddings,
        bos_token_id=tokenizer.token_to_id("<s>"),
        eos_token_id=tokenizer.token_to_id("</s>"),
        torch_dtype="bfloat16",
    )
    torch.manual_seed(recipe.seed)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    for path in out.iterdir():  # read by the sandbox's unprivileged user
        path.chmod(0o644)
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(out.iterdir())
        if path.is_file()
    }


def main(argv: list[str]) -> int:
    out, recipe_json = Path(argv[0]), argv[1]
    digests = build(Recipe(**json.loads(recipe_json)), out)
    print(json.dumps(digests))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
