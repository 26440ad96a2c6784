/* SipHash-2-4 (Aumasson and Bernstein): a keyed 64-bit PRF. A trusted checker (the
 * hpc-kernels host, the HumanEval checker) tags its verdict line with it under a fresh 128-bit
 * key that only the scorer and the checker ever hold, so a line written by candidate code
 * into the same output stream cannot pass for the checker's. Must match
 * codegen_eval/tagging.py. */
#ifndef CODEGEN_SIPHASH_H
#define CODEGEN_SIPHASH_H
#include <stddef.h>
#include <stdint.h>

#define CODEGEN_ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define CODEGEN_SIPROUND                                                                   \
    do {                                                                                \
        v0 += v1; v1 = CODEGEN_ROTL(v1, 13); v1 ^= v0; v0 = CODEGEN_ROTL(v0, 32);             \
        v2 += v3; v3 = CODEGEN_ROTL(v3, 16); v3 ^= v2;                                     \
        v0 += v3; v3 = CODEGEN_ROTL(v3, 21); v3 ^= v0;                                     \
        v2 += v1; v1 = CODEGEN_ROTL(v1, 17); v1 ^= v2; v2 = CODEGEN_ROTL(v2, 32);             \
    } while (0)

/* The last block b (the message length in its top byte), then finalization; the hash is
 * then v0 ^ v1 ^ v2 ^ v3. */
#define CODEGEN_SIP_LAST(b)                                                              \
    do {                                                                                \
        v3 ^= (b);                                                                      \
        CODEGEN_SIPROUND;                                                               \
        CODEGEN_SIPROUND;                                                               \
        v0 ^= (b);                                                                      \
        v2 ^= 0xff;                                                                     \
        CODEGEN_SIPROUND;                                                               \
        CODEGEN_SIPROUND;                                                               \
        CODEGEN_SIPROUND;                                                               \
        CODEGEN_SIPROUND;                                                               \
    } while (0)

static inline uint64_t codegen_le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

static inline uint64_t codegen_siphash24(const unsigned char key[16], const void *data, size_t len) {
    const unsigned char *in = (const unsigned char *)data;
    uint64_t k0 = codegen_le64(key), k1 = codegen_le64(key + 8);
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
    size_t full = len - len % 8;
    for (size_t i = 0; i < full; i += 8) {
        uint64_t m = codegen_le64(in + i);
        v3 ^= m;
        CODEGEN_SIPROUND;
        CODEGEN_SIPROUND;
        v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < len % 8; ++i) b |= (uint64_t)in[full + i] << (8 * i);
    CODEGEN_SIP_LAST(b);
    return v0 ^ v1 ^ v2 ^ v3;
}
#endif
