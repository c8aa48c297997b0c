// llama_probe: runs a GGUF model with llama.cpp's own library (libllama, built from the pinned
// sdist by .ci/setup-llama) and prints what the end-to-end tests compare, as one JSON object:
//   {"tokens": [...], "n_vocab": N, "logits": [...], "generated": [...],
//    "meta_count": N, "metadata": {"key": "value", ...}, "chat_template": "..." | null}
// - tokens: llama_tokenize of the prompt, adding BOS/EOS as the vocabulary says (add_special)
//   and parsing special tokens written in the prompt (parse_special);
// - logits: the whole vocabulary's logits at the prompt's last position, printed with %.9g so
//   an f32 survives the round trip through text exactly;
// - generated: N_PREDICT greedy tokens (argmax, lowest id on ties; no sampler, no stop at
//   end-of-generation), so two files run the same model only if every step agrees;
// - metadata: every key/value llama.cpp kept from the file, as llama_model_meta_val_str gives it.
// One thread, a fixed context, an f32 KV cache and no flash attention: a run is deterministic.
// Any failure: a message on stderr and exit status 1.
// Usage: llama_probe MODEL.gguf PROMPT N_PREDICT
#include "llama.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static void die(const char * what) {
    std::fprintf(stderr, "llama_probe: %s\n", what);
    std::exit(1);
}

// llama.cpp logs to stderr at load time; keep only errors, so a failure is readable.
static void quiet_log(enum ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR) {
        std::fputs(text, stderr);
    }
}

static void put_json_string(const std::string & s) {
    std::putchar('"');
    for (unsigned char c : s) {
        switch (c) {
            case '"': std::fputs("\\\"", stdout); break;
            case '\\': std::fputs("\\\\", stdout); break;
            case '\n': std::fputs("\\n", stdout); break;
            case '\r': std::fputs("\\r", stdout); break;
            case '\t': std::fputs("\\t", stdout); break;
            default:
                if (c < 0x20) {
                    std::printf("\\u%04x", c);
                } else {
                    std::putchar(c);
                }
        }
    }
    std::putchar('"');
}

// A metadata string by index: the functions return the full length, so grow and ask again.
static std::string meta_string(int32_t (*get)(const llama_model *, int32_t, char *, size_t),
                               const llama_model * model, int32_t i) {
    std::vector<char> buf(256);
    int32_t n = get(model, i, buf.data(), buf.size());
    if (n < 0) {
        die("cannot read a metadata entry");
    }
    if (static_cast<size_t>(n) >= buf.size()) {
        buf.resize(static_cast<size_t>(n) + 1);
        n = get(model, i, buf.data(), buf.size());
    }
    return std::string(buf.data(), static_cast<size_t>(n));
}

static int argmax(const float * logits, int32_t n_vocab) {
    int best = 0;
    for (int32_t j = 1; j < n_vocab; j++) {
        if (logits[j] > logits[best]) {
            best = j;
        }
    }
    return best;
}

int main(int argc, char ** argv) {
    if (argc != 4) {
        die("usage: llama_probe MODEL.gguf PROMPT N_PREDICT");
    }
    const char * path = argv[1];
    const std::string prompt = argv[2];
    errno = 0;
    char * end = nullptr;
    const long n_predict = std::strtol(argv[3], &end, 10);
    if (errno != 0 || *end != '\0' || n_predict < 0 || n_predict > 4096) {
        die("N_PREDICT must be a number in 0..=4096");
    }

    llama_log_set(quiet_log, nullptr);
    llama_backend_init();

    llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(path, mparams);
    if (model == nullptr) {
        die("llama.cpp cannot load the model");
    }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    const int32_t n_vocab = llama_vocab_n_tokens(vocab);

    // Tokenize: the first call with no room returns minus the number of tokens needed.
    const int32_t needed = -llama_tokenize(vocab, prompt.data(), static_cast<int32_t>(prompt.size()),
                                           nullptr, 0, true, true);
    std::vector<llama_token> tokens(static_cast<size_t>(needed > 0 ? needed : 0));
    if (llama_tokenize(vocab, prompt.data(), static_cast<int32_t>(prompt.size()), tokens.data(),
                       static_cast<int32_t>(tokens.size()), true, true) != needed) {
        die("tokenization failed");
    }
    if (tokens.empty()) {
        die("the prompt tokenizes to nothing");
    }

    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = static_cast<uint32_t>(tokens.size() + static_cast<size_t>(n_predict) + 16);
    cparams.n_batch = cparams.n_ctx;
    cparams.n_ubatch = cparams.n_ctx;
    cparams.n_threads = 1;
    cparams.n_threads_batch = 1;
    cparams.no_perf = true;
    // An f32 KV cache (llama.cpp's default is f16) and no flash attention (on the CPU it
    // rounds Q to f16): the logits of an f32 model then differ from transformers' f32 forward
    // by float rounding only (~1e-6), so the test's reference check can be tight.
    cparams.type_k = GGML_TYPE_F32;
    cparams.type_v = GGML_TYPE_F32;
    cparams.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_context * ctx = llama_init_from_model(model, cparams);
    if (ctx == nullptr) {
        die("cannot create a llama.cpp context");
    }

    std::vector<llama_token> prompt_tokens = tokens;
    if (llama_decode(ctx, llama_batch_get_one(prompt_tokens.data(),
                                              static_cast<int32_t>(prompt_tokens.size()))) != 0) {
        die("llama_decode failed on the prompt");
    }
    const float * last = llama_get_logits_ith(ctx, -1);
    if (last == nullptr) {
        die("no logits for the prompt's last position");
    }
    const std::vector<float> logits(last, last + n_vocab);

    std::vector<llama_token> generated;
    llama_token next = argmax(logits.data(), n_vocab);
    for (long i = 0; i < n_predict; i++) {
        generated.push_back(next);
        if (i + 1 == n_predict) {
            break;
        }
        if (llama_decode(ctx, llama_batch_get_one(&next, 1)) != 0) {
            die("llama_decode failed while generating");
        }
        const float * step = llama_get_logits_ith(ctx, -1);
        if (step == nullptr) {
            die("no logits while generating");
        }
        next = argmax(step, n_vocab);
    }

    std::printf("{\"tokens\":[");
    for (size_t i = 0; i < tokens.size(); i++) {
        std::printf(i ? ",%d" : "%d", tokens[i]);
    }
    std::printf("],\"n_vocab\":%d,\"logits\":[", n_vocab);
    for (int32_t i = 0; i < n_vocab; i++) {
        std::printf(i ? ",%.9g" : "%.9g", static_cast<double>(logits[static_cast<size_t>(i)]));
    }
    std::printf("],\"generated\":[");
    for (size_t i = 0; i < generated.size(); i++) {
        std::printf(i ? ",%d" : "%d", generated[i]);
    }
    const int32_t meta_count = llama_model_meta_count(model);
    std::printf("],\"meta_count\":%d,\"metadata\":{", meta_count);
    for (int32_t i = 0; i < meta_count; i++) {
        if (i) {
            std::putchar(',');
        }
        put_json_string(meta_string(llama_model_meta_key_by_index, model, i));
        std::putchar(':');
        put_json_string(meta_string(llama_model_meta_val_str_by_index, model, i));
    }
    std::printf("},\"chat_template\":");
    const char * tmpl = llama_model_chat_template(model, nullptr);
    if (tmpl == nullptr) {
        std::printf("null");
    } else {
        put_json_string(tmpl);
    }
    std::printf("}\n");

    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return std::fflush(stdout) == 0 ? 0 : 1;
}
