"""transformers' side of the SafeTensors export interop test
(crates/envelope-cli/tests/apr_transformers.rs, docs/apr.md §7).

    make DIR                 a tiny random LlamaForCausalLM (seeded, f32) saved with
                             save_pretrained, plus a generation config and a tokenizer config
    logits ORIGINAL EXPORT   from_pretrained both (the export with dtype="auto", so its
                             config.json's dtype is what it loads in; the original cast by
                             transformers to that dtype) and compare their state dicts and logits
    refused EXPORT ORIGINAL  the int8 + scales form, even given the original config.json and
                             renamed model.safetensors, must be refused by from_pretrained (its
                             __metadata__.format is not pt/tf/flax/mlx: transformers 4.57 raises
                             ValueError "Incompatible safetensors file" for a single file,
                             OSError "does not contain the valid metadata" in load_state_dict)

Each command prints one JSON object on stdout; the Rust test asserts on it.
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

import safetensors
import torch
import transformers

# Token ids of the prompt whose last-position logits are compared (any ids below the vocabulary).
PROMPT = [[1, 17, 42, 99, 3, 64, 7, 120]]


def make(directory):
    torch.manual_seed(1234)
    config = transformers.LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        bos_token_id=1,
        eos_token_id=2,
    )
    model = transformers.LlamaForCausalLM(config).to(torch.float32).eval()
    # The default init is N(0, 0.02): scale up so f16/bf16 rounding is visible in the logits.
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(5.0)
    model.save_pretrained(directory)
    # A kept file the export must copy verbatim (the model needs no tokenizer to run).
    Path(directory, "tokenizer_config.json").write_text(
        json.dumps({"model_max_length": 64, "tokenizer_class": "LlamaTokenizerFast"}, indent=2)
    )
    print(json.dumps({"files": sorted(p.name for p in Path(directory).iterdir())}))


def logits_of(model):
    with torch.no_grad():
        return model(torch.tensor(PROMPT)).logits[0, -1]


def logits(original, export):
    exported = transformers.AutoModelForCausalLM.from_pretrained(export, dtype="auto").eval()
    dtype = exported.dtype
    # The reference: transformers' own cast of the f32 checkpoint (`.to(dtype)` of every weight,
    # round to nearest even) as it loads it.
    reference = transformers.AutoModelForCausalLM.from_pretrained(original, dtype=dtype).eval()
    ours = exported.state_dict()
    theirs = reference.state_dict()
    same_weights = ours.keys() == theirs.keys() and all(
        torch.equal(ours[k], theirs[k]) for k in ours
    )
    a = logits_of(exported)
    b = logits_of(reference)
    f32 = logits_of(transformers.AutoModelForCausalLM.from_pretrained(original).eval())
    print(
        json.dumps(
            {
                "dtype": str(dtype).removeprefix("torch."),
                "same_weights": same_weights,
                "equal_logits": torch.equal(a, b),
                "max_abs_diff": (a.float() - b.float()).abs().max().item(),
                # How far the cast moved the logits from the f32 model's (must be > 0 for f16
                # and bf16, or the test would not tell a cast from none).
                "diff_from_f32": (a.float() - f32).abs().max().item(),
                "f32_logit_scale": f32.abs().max().item(),
            }
        )
    )


def refused(export, original):
    outcomes = {}
    with tempfile.TemporaryDirectory() as scratch:
        # As exported: no config.json.
        try:
            transformers.AutoModelForCausalLM.from_pretrained(export)
            outcomes["as_exported"] = None
        except (OSError, ValueError) as error:
            outcomes["as_exported"] = f"{type(error).__name__}: {error}"
        # A user's mistake: the original config.json next to the int8 weights renamed.
        mistaken = Path(scratch, "mistaken")
        mistaken.mkdir()
        shutil.copy(Path(original, "config.json"), mistaken / "config.json")
        shutil.copy(Path(export, "weights.safetensors"), mistaken / "model.safetensors")
        try:
            transformers.AutoModelForCausalLM.from_pretrained(mistaken)
            outcomes["with_config"] = None
        except (OSError, ValueError) as error:
            outcomes["with_config"] = f"{type(error).__name__}: {error}"
        # The same as a one-shard checkpoint: the check in load_state_dict.
        shard = "model-00001-of-00001.safetensors"
        (mistaken / "model.safetensors").rename(mistaken / shard)
        with safetensors.safe_open(mistaken / shard, framework="pt") as f:
            weight_map = {name: shard for name in f.keys()}
        (mistaken / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {}, "weight_map": weight_map})
        )
        try:
            transformers.AutoModelForCausalLM.from_pretrained(mistaken)
            outcomes["as_shard"] = None
        except (OSError, ValueError) as error:
            outcomes["as_shard"] = f"{type(error).__name__}: {error}"
    # The first line is enough (transformers lists every model type it knows).
    print(json.dumps({k: v and v.splitlines()[0][:300] for k, v in outcomes.items()}))


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"make": make, "logits": logits, "refused": refused}[command](*args)
