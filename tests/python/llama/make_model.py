"""Makes one tiny random Hugging Face model directory for the llama.cpp end-to-end test
(crates/envelope-cli/tests/apr_llama.rs) and prints a JSON manifest of it on stdout.

Usage: make_model.py NAME DIR, NAME one of MODELS below. DIR is what `save_pretrained` writes
(config.json, generation_config.json, safetensors, tokenizer files), exactly what a user would
download from the Hub, only small: 2 layers, hidden size 64-128, head_dim 16-32, a vocabulary
of a few hundred tokens, and every intermediate size a multiple of 32 so Q8_0 blocks apply.

The models (each exercises what a published one of its family has):
- llama-spm: LlamaForCausalLM with a SentencePiece tokenizer trained here, Llama-2 style (BPE,
  byte fallback, <unk>=0 <s>=1 </s>=2, identity normalization, dummy prefix, split digits);
  saved SHARDED (model-0000N-of-0000M.safetensors + index), f32.
- llama-bpe: LlamaForCausalLM with a byte-level BPE tokenizer built with `tokenizers` the way
  Llama 3's is (its Split regex + ByteLevel, ignore_merges, the special tokens appended after
  the vocabulary, BOS added by the post-processor) and a Llama 3 chat template; GQA; Llama 3.1's
  `llama3` RoPE scaling (the converter writes it as a rope_freqs tensor); f32.
- mistral: MistralForCausalLM, GQA (2 key/value heads for 4 heads), an explicit head_dim (32)
  that is not hidden_size / heads (16), as Mistral Nemo's; the SentencePiece tokenizer; saved in
  bf16 as Mistral's checkpoints are.
- qwen2: Qwen2ForCausalLM: q/k/v biases, tied embeddings (no lm_head in the checkpoint), the
  Qwen2 pre-tokenizer (NFC, single digits), ChatML special tokens and template, and a
  vocab_size padded past the tokenizer (as Qwen2's is), f32.

Weights: torch.manual_seed(0) and every parameter redrawn (norm weights near 1, embeddings
N(0, 0.02), everything else, biases included, N(0, 0.2)): transformers' own init zeroes biases
and keeps norms at 1, which would leave those tensors untested (see `redraw` for the scales).

The manifest: {"name", "dir", "dtype" (the converter --outtype giving the same tensor types:
f32 or bf16), "tokenizer_pre" (the llama.cpp pre-tokenizer the BPE tokenizer mirrors, or null),
"prompt", and transformers' own run of the prompt: "tokens" (tokenizer(prompt), special tokens
added as the tokenizer says) and "logits" (the last position's, in f32)}. The test checks
llama.cpp's tokens against these (the test tokenizers really are what llama.cpp implements)
and its logits within a loose tolerance (another implementation of the same network).

Why torch: llama.cpp's converter imports it, and transformers' forward is the reference here.
"""

import io
import json
import random
import sys
from pathlib import Path

import torch

MODELS = ("llama-spm", "llama-bpe", "mistral", "qwen2")

# Llama 3's pre-tokenizer split, as in its tokenizer.json (llama.cpp: LLAMA_VOCAB_PRE_TYPE_LLAMA3).
LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Qwen2's: the same but one digit at a time (llama.cpp: LLAMA_VOCAB_PRE_TYPE_QWEN2).
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    "{% endif %}"
)
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)

WORDS = (
    "the of and to in is was for on that with as by at from his her it an were are which this "
    "model file tensor weight layer token vocabulary llama mistral qwen quantize export import "
    "café naïve über straße garçon déjà vu hello world quick brown fox jumps over lazy dog "
    "I've you're we'll they'd she's don't can't 2024 3.14 1000 42 7 "
    "( ) [ ] { } , . ; : ! ? - -- ' \" / \\ + = * & % $ # @"
).split()


def corpus(seed: int, lines: int = 3000) -> list[str]:
    """Deterministic text for the tokenizer trainers: words, numbers, punctuation, new lines and
    runs of spaces, so merges for all of them exist."""
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 14))]
        if rng.random() < 0.2:
            words.insert(rng.randrange(len(words)), "  " * rng.randint(1, 3))
        line = " ".join(words)
        if rng.random() < 0.3:
            line += "\n" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))
        out.append(line.capitalize())
    return out


def sentencepiece_tokenizer(out: Path) -> None:
    """A Llama-2-style SentencePiece model, trained here; tokenizer.model and
    tokenizer_config.json written as transformers' LlamaTokenizer saves them."""
    import sentencepiece as spm
    from transformers import LlamaTokenizer

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus(1)),
        model_writer=model,
        model_type="bpe",
        vocab_size=512,
        byte_fallback=True,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        character_coverage=1.0,
        split_digits=True,
        allow_whitespace_only_pieces=True,
        normalization_rule_name="identity",
        add_dummy_prefix=True,
        remove_extra_whitespaces=False,
        num_threads=1,
        minloglevel=2,
    )
    path = out / "tokenizer.model"
    path.write_bytes(model.getvalue())
    tokenizer = LlamaTokenizer(vocab_file=str(path), legacy=True, add_bos_token=True,
                               add_eos_token=False)
    tokenizer.save_pretrained(out)


def bpe_tokenizer(out: Path, split: str, specials: list[str], *, nfc: bool, ignore_merges: bool,
                  bos: str | None, eos: str, template: str, vocab_size: int):
    """A byte-level BPE tokenizer.json trained here with the given pre-tokenizer split; the
    special tokens get the ids after the trained vocabulary, as Llama 3's and Qwen2's do."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
    from tokenizers import pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(byte_fallback=False, ignore_merges=ignore_merges))
    if nfc:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(split), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(2), trainer)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    post = [processors.ByteLevel(trim_offsets=False)]
    if bos is not None:
        bos_id = tok.token_to_id(bos)
        post.append(processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, bos_id)]))
    tok.post_processor = processors.Sequence(post)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos,
                                   clean_up_tokenization_spaces=False, model_max_length=256)
    fast.chat_template = template
    fast.save_pretrained(out)
    return fast


def redraw(model: torch.nn.Module) -> None:
    """Norm weights near 1; embeddings small and the layers' weights large, so each layer moves
    the hidden state well away from the input token's embedding: with tied embeddings, greedy
    decoding of a random model otherwise repeats its last token forever, and a generation that
    never changes checks little."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif "embed" in name:
                p.copy_(0.02 * torch.randn_like(p))
            else:
                p.copy_(0.2 * torch.randn_like(p))


def make(name: str, out: Path) -> dict:
    import transformers
    from transformers import AutoTokenizer

    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    common = dict(num_hidden_layers=2, max_position_embeddings=256, rms_norm_eps=1e-5,
                  torch_dtype="float32")
    pre = None
    dtype = "f32"
    shard = None
    if name in ("llama-spm", "mistral"):
        sentencepiece_tokenizer(out)
        vocab = 512
        prompt = "Hello world! The quick brown fox, 12345 cafés and a 🦙 (naïve)."
        if name == "llama-spm":
            config = transformers.LlamaConfig(
                vocab_size=vocab, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                num_key_value_heads=4, bos_token_id=1, eos_token_id=2, **common)
            cls = transformers.LlamaForCausalLM
            shard = "150KB"
        else:
            config = transformers.MistralConfig(
                vocab_size=vocab, hidden_size=64, intermediate_size=192, num_attention_heads=4,
                num_key_value_heads=2, sliding_window=None, bos_token_id=1, eos_token_id=2,
                rope_theta=1000000.0, head_dim=32, **common)  # head_dim != hidden / heads (16)
            cls = transformers.MistralForCausalLM
            dtype = "bf16"
    elif name == "llama-bpe":
        specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                    "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
        fast = bpe_tokenizer(out, LLAMA3_SPLIT, specials, nfc=False, ignore_merges=True,
                             bos="<|begin_of_text|>", eos="<|eot_id|>", template=LLAMA3_TEMPLATE,
                             vocab_size=600)
        pre = "llama-bpe"
        prompt = ("<|start_header_id|>user<|end_header_id|>\n\nHello world! I've 12345 cafés,"
                  "  a 🦙\tand   spaces.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")
        config = transformers.LlamaConfig(
            vocab_size=len(fast), hidden_size=128, intermediate_size=256, num_attention_heads=4,
            num_key_value_heads=2, bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
            rope_theta=500000.0, rope_scaling={
                # Llama 3.1's scaling (the converter's rope_freqs tensor), scaled down to this
                # model's 256 positions.
                "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
            **common)
        cls = transformers.LlamaForCausalLM
    elif name == "qwen2":
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        fast = bpe_tokenizer(out, QWEN2_SPLIT, specials, nfc=True, ignore_merges=False, bos=None,
                             eos="<|im_end|>", template=CHATML_TEMPLATE, vocab_size=500)
        pre = "qwen2"
        prompt = "<|im_start|>user\nHello world! I've 12345 cafés, a 🦙.<|im_end|>\n<|im_start|>assistant\n"
        config = transformers.Qwen2Config(
            vocab_size=(len(fast) + 31) // 32 * 32, hidden_size=64, intermediate_size=160,
            num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
            use_sliding_window=False, eos_token_id=fast.eos_token_id, rope_theta=1000000.0,
            **common)
        cls = transformers.Qwen2ForCausalLM
    else:
        raise SystemExit(f"make_model.py: unknown model {name!r}; one of {', '.join(MODELS)}")

    model = cls(config)
    redraw(model)
    model.eval()
    if dtype == "bf16":
        model = model.to(torch.bfloat16)
    save = {"max_shard_size": shard} if shard else {}
    model.save_pretrained(out, safe_serialization=True, **save)

    # The reference: transformers' tokenizer and forward, on the weights as saved, in f32.
    # SentencePiece: the slow tokenizer, which is the sentencepiece library itself (the fast one
    # would be converted from the proto with a protobuf newer than the converter's pin allows).
    tokenizer = AutoTokenizer.from_pretrained(out, use_fast=pre is not None)
    tokens = tokenizer(prompt)["input_ids"]
    with torch.no_grad():
        logits = model.float()(torch.tensor([tokens])).logits[0, -1]
    return {
        "name": name,
        "dir": str(out),
        "dtype": dtype,
        "tokenizer_pre": pre,
        "prompt": prompt,
        "tokens": tokens,
        "logits": [float(x) for x in logits],
    }


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in MODELS:
        raise SystemExit(f"usage: make_model.py {{{','.join(MODELS)}}} DIR")
    json.dump(make(sys.argv[1], Path(sys.argv[2])), sys.stdout)
    print()


if __name__ == "__main__":
    main()
