// gguf_probe: ggml's own C/C++ code as an independent oracle for the `apr` crate's interop tests.
//
//   gguf_probe load FILE
//       Loads FILE with ggml's GGUF loader (gguf_init_from_file, data included), the loader
//       llama.cpp uses, which is stricter than the Python `gguf` reader. On success prints one
//       JSON object: alignment, every key with its GGUF type, and every tensor's name, ggml type,
//       dimensions (ggml order), byte size and FNV-1a 64 of its data. Exit 1 if ggml refuses it.
//   gguf_probe quantize q8_0|q4_0|q4_1 IN OUT
//       Reads little-endian f32 values from IN (a multiple of 32), quantizes them with ggml's
//       reference quantizer (quantize_row_*_ref), writes the blocks to OUT.
//   gguf_probe dequantize q8_0|q4_0|q4_1 IN OUT
//       Reads blocks from IN, dequantizes them with ggml (dequantize_row_*), writes f32 to OUT.
//
// Built from the ggml sources vendored in the pinned llama-cpp-python sdist by .ci/setup-ggml.
#include "ggml.h"
#include "gguf.h"
#include "ggml-quants.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

static std::vector<uint8_t> read_file(const char * path) {
    std::vector<uint8_t> out;
    FILE * f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    uint8_t buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
    fclose(f);
    return out;
}

static void write_file(const char * path, const void * data, size_t len) {
    FILE * f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len) { perror(path); exit(2); }
    fclose(f);
}

static uint64_t fnv1a64(const uint8_t * data, size_t len) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) { h ^= data[i]; h *= 0x100000001b3ULL; }
    return h;
}

static void json_string(const char * s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') { putchar('\\'); putchar(*s); }
        else if ((unsigned char) *s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    }
    putchar('"');
}

static int load(const char * path) {
    struct ggml_context * ctx = nullptr;
    struct gguf_init_params params = { /*no_alloc =*/ false, /*ctx =*/ &ctx };
    struct gguf_context * g = gguf_init_from_file(path, params);
    if (!g) { fprintf(stderr, "ggml refused %s\n", path); return 1; }
    printf("{\"version\":%u,\"alignment\":%zu,\"kv\":{", gguf_get_version(g), gguf_get_alignment(g));
    for (int64_t i = 0; i < gguf_get_n_kv(g); i++) {
        if (i) putchar(',');
        json_string(gguf_get_key(g, i));
        printf(":");
        json_string(gguf_type_name(gguf_get_kv_type(g, i)));
    }
    printf("},\"tensors\":[");
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) {
        const char * name = gguf_get_tensor_name(g, i);
        struct ggml_tensor * t = ggml_get_tensor(ctx, name);
        if (i) putchar(',');
        printf("{\"name\":");
        json_string(name);
        printf(",\"type\":");
        json_string(ggml_type_name(t->type));
        printf(",\"ne\":[");
        for (int d = 0; d < ggml_n_dims(t); d++) printf("%s%lld", d ? "," : "", (long long) t->ne[d]);
        printf("],\"offset\":%zu,\"nbytes\":%zu,\"fnv1a64\":\"%016llx\"}", gguf_get_tensor_offset(g, i),
               ggml_nbytes(t), (unsigned long long) fnv1a64((const uint8_t *) t->data, ggml_nbytes(t)));
    }
    printf("]}\n");
    gguf_free(g);
    ggml_free(ctx);
    return 0;
}

static int convert(bool quantize, const std::string & type, const char * in, const char * out) {
    std::vector<uint8_t> input = read_file(in);
    enum ggml_type t = type == "q8_0" ? GGML_TYPE_Q8_0 : type == "q4_0" ? GGML_TYPE_Q4_0
                     : type == "q4_1" ? GGML_TYPE_Q4_1 : GGML_TYPE_COUNT;
    if (t == GGML_TYPE_COUNT) { fprintf(stderr, "unknown type %s\n", type.c_str()); return 2; }
    const size_t block = ggml_blck_size(t), block_bytes = ggml_type_size(t);
    if (quantize) {
        if (input.size() % (4 * block)) { fprintf(stderr, "input is not whole blocks\n"); return 2; }
        const int64_t k = input.size() / 4;
        std::vector<float> x(k);
        memcpy(x.data(), input.data(), input.size());
        std::vector<uint8_t> y(k / block * block_bytes);
        switch (t) {
            case GGML_TYPE_Q8_0: quantize_row_q8_0_ref(x.data(), (block_q8_0 *) y.data(), k); break;
            case GGML_TYPE_Q4_0: quantize_row_q4_0_ref(x.data(), (block_q4_0 *) y.data(), k); break;
            default:             quantize_row_q4_1_ref(x.data(), (block_q4_1 *) y.data(), k); break;
        }
        write_file(out, y.data(), y.size());
    } else {
        if (input.size() % block_bytes) { fprintf(stderr, "input is not whole blocks\n"); return 2; }
        const int64_t k = input.size() / block_bytes * block;
        std::vector<float> y(k);
        switch (t) {
            case GGML_TYPE_Q8_0: dequantize_row_q8_0((const block_q8_0 *) input.data(), y.data(), k); break;
            case GGML_TYPE_Q4_0: dequantize_row_q4_0((const block_q4_0 *) input.data(), y.data(), k); break;
            default:             dequantize_row_q4_1((const block_q4_1 *) input.data(), y.data(), k); break;
        }
        write_file(out, y.data(), y.size() * 4);
    }
    return 0;
}

int main(int argc, char ** argv) {
    if (argc == 3 && std::string(argv[1]) == "load") return load(argv[2]);
    if (argc == 5 && (std::string(argv[1]) == "quantize" || std::string(argv[1]) == "dequantize")) {
        return convert(std::string(argv[1]) == "quantize", argv[2], argv[3], argv[4]);
    }
    fprintf(stderr, "usage: gguf_probe load FILE | quantize|dequantize q8_0|q4_0|q4_1 IN OUT\n");
    return 2;
}
