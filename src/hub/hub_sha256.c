/* SHA-256 of a download as it is written: the hub names an LFS file's blob by the sha256
 * of its bytes, and a blob whose hash differs is refused. OpenSSL's libcrypto (which
 * libcurl already loads) hashes with the CPU's SHA instructions where it has them: a
 * plain C loop runs well under the speed of a fast link. */
#include "hub/hub.h"

#include <openssl/evp.h>

bool hub_sha256_init(hub_sha256 *s) {
    if (!s->ctx && !(s->ctx = EVP_MD_CTX_new())) return false;
    return EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) == 1;
}

void hub_sha256_update(hub_sha256 *s, const void *data, size_t n) {
    EVP_DigestUpdate(s->ctx, data, n);
}

void hub_sha256_hex(hub_sha256 *s, char out[65]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    out[0] = 0;
    if (EVP_DigestFinal_ex(s->ctx, md, &len) != 1 || len != 32) return;
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = 0;
}

void hub_sha256_free(hub_sha256 *s) {
    EVP_MD_CTX_free(s->ctx);
    s->ctx = NULL;
}
