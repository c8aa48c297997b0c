#!/usr/bin/env python3
"""Writes a random Llama-architecture Hugging Face checkpoint of a chosen size, sharded the way
`save_pretrained` shards it (`model-0000N-of-0000M.safetensors` + `model.safetensors.index.json`),
with a SentencePiece tokenizer trained on the spot: the input of `scripts/bench-llm-import.sh`.

Usage: make-llama-checkpoint.py DIR [--hidden 2048] [--layers 16] [--ffn 5632] [--vocab 32000]
       [--shard-gib 1.0] [--dtype f16|f32]

The defaults are TinyLlama-1.1B's shapes (1.1 B parameters: 2.2 GB in f16). Weights are random
(seeded): the benchmark measures reading, converting and writing, not what the model says.
Tensors are generated one at a time and each shard is written before the next is built, so the
generator's own memory is one shard.
"""
import argparse
import json
import os
import tempfile

import numpy as np
import sentencepiece as spm
from safetensors.numpy import save_file


def train_tokenizer(out_dir: str) -> None:
    text = "\n".join(
        f"the quick brown fox {i} jumps over the lazy dog number {i * 7 % 101}" for i in range(4000)
    )
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write(text)
        spm.SentencePieceTrainer.train(
            input=corpus,
            model_prefix=os.path.join(out_dir, "tokenizer"),
            vocab_size=400,
            model_type="bpe",
            byte_fallback=True,
            unk_id=0,
            bos_id=1,
            eos_id=2,
            pad_id=-1,
            normalization_rule_name="identity",
            minloglevel=2,
        )
    os.remove(os.path.join(out_dir, "tokenizer.vocab"))
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(
            {
                "tokenizer_class": "LlamaTokenizer",
                "bos_token": "<s>",
                "eos_token": "</s>",
                "unk_token": "<unk>",
                "add_bos_token": True,
                "add_eos_token": False,
            },
            f,
            indent=2,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--ffn", type=int, default=5632)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--shard-gib", type=float, default=1.0)
    parser.add_argument("--dtype", choices=["f16", "f32"], default="f16")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    dtype = np.float16 if args.dtype == "f16" else np.float32
    head_dim = args.hidden // args.heads
    shapes = [("model.embed_tokens.weight", (args.vocab, args.hidden))]
    for i in range(args.layers):
        p = f"model.layers.{i}."
        shapes += [
            (p + "input_layernorm.weight", (args.hidden,)),
            (p + "self_attn.q_proj.weight", (args.hidden, args.hidden)),
            (p + "self_attn.k_proj.weight", (args.kv_heads * head_dim, args.hidden)),
            (p + "self_attn.v_proj.weight", (args.kv_heads * head_dim, args.hidden)),
            (p + "self_attn.o_proj.weight", (args.hidden, args.hidden)),
            (p + "post_attention_layernorm.weight", (args.hidden,)),
            (p + "mlp.gate_proj.weight", (args.ffn, args.hidden)),
            (p + "mlp.up_proj.weight", (args.ffn, args.hidden)),
            (p + "mlp.down_proj.weight", (args.hidden, args.ffn)),
        ]
    shapes += [("model.norm.weight", (args.hidden,)), ("lm_head.weight", (args.vocab, args.hidden))]

    limit = int(args.shard_gib * (1 << 30))
    itemsize = np.dtype(dtype).itemsize
    shards, current, size = [], [], 0
    for name, shape in shapes:
        nbytes = int(np.prod(shape)) * itemsize
        if current and size + nbytes > limit:
            shards.append(current)
            current, size = [], 0
        current.append((name, shape))
        size += nbytes
    shards.append(current)

    rng = np.random.default_rng(17)
    weight_map, total = {}, 0
    for n, shard in enumerate(shards, start=1):
        file = f"model-{n:05d}-of-{len(shards):05d}.safetensors"
        tensors = {}
        for name, shape in shard:
            if len(shape) == 1:
                values = np.ones(shape, dtype=np.float32)
            else:
                values = rng.standard_normal(shape, dtype=np.float32) * 0.02
            tensors[name] = values.astype(dtype)
            weight_map[name] = file
            total += tensors[name].nbytes
        save_file(tensors, os.path.join(args.dir, file), metadata={"format": "pt"})
        del tensors
    with open(os.path.join(args.dir, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": args.hidden,
        "intermediate_size": args.ffn,
        "num_hidden_layers": args.layers,
        "num_attention_heads": args.heads,
        "num_key_value_heads": args.kv_heads,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "vocab_size": args.vocab,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "tie_word_embeddings": False,
        "torch_dtype": "float16" if args.dtype == "f16" else "float32",
        "hidden_act": "silu",
    }
    with open(os.path.join(args.dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    train_tokenizer(args.dir)
    print(f"{args.dir}: {len(shapes)} tensors, {total / 1e9:.2f} GB in {len(shards)} shards")


if __name__ == "__main__":
    main()
