#include "testing.h"

#include "base/half.h"
#include "base/json_str.h"
#include "base/strmap.h"
#include "base/tensor.h"
#include "base/threadpool.h"

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdlib.h>

TEST(half_roundtrips_every_f16) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = f16_to_f32((uint16_t)h);
        if (isnan(f)) continue;
        CHECK_EQ_INT(f32_to_f16(f), h);
    }
}

TEST(half_rounds_to_nearest_even) {
    for (uint32_t h = 0; h < 0x7bff; h++) {
        float a = f16_to_f32((uint16_t)h), b = f16_to_f32((uint16_t)(h + 1));
        float mid = (a + b) / 2;
        CHECK_EQ_INT(f32_to_f16(mid), (h & 1) ? h + 1 : h);
        CHECK_EQ_INT(f32_to_f16(nextafterf(mid, INFINITY)), h + 1);
    }
    CHECK_EQ_INT(f32_to_f16(65520.0f), 0x7c00); /* overflow rounds to infinity */
    CHECK_EQ_INT(f32_to_f16(65519.0f), 0x7bff);
}

TEST(bf16_rounds_to_nearest_even) {
    CHECK_EQ_INT(f32_to_bf16(1.0f), 0x3f80);
    CHECK_EQ_INT(f32_to_bf16(f32_from_bits(0x3f808000u)), 0x3f80); /* tie to even */
    CHECK_EQ_INT(f32_to_bf16(f32_from_bits(0x3f818000u)), 0x3f82);
    CHECK(isnan(bf16_to_f32(f32_to_bf16(NAN))));
    CHECK_NEAR(bf16_to_f32(0x4049), 3.140625, 0);
}

TEST(strmap_put_get_grow) {
    strmap m;
    strmap_init(&m);
    static char keys[1000][8];
    for (int i = 0; i < 1000; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        CHECK(strmap_put(&m, keys[i], i));
    }
    for (int i = 0; i < 1000; i++) CHECK_EQ_INT(strmap_get(&m, keys[i], -1), i);
    CHECK_EQ_INT(strmap_get(&m, "absent", -7), -7);
    strmap_free(&m);
}

TEST(tensor_shapes_and_packed_sizes) {
    tensor t = {0};
    int64_t dims[] = {3, 5};
    CHECK_OK(tensor_set_shape(&t, OG_INT4, 2, dims));
    CHECK_EQ_INT(t.nbytes, 8); /* 15 nibbles round up to 8 bytes */
    CHECK_OK(tensor_set_shape(&t, OG_FLOAT16, 2, dims));
    CHECK_EQ_INT(t.nbytes, 30);
    int64_t bad[] = {-2, 3};
    CHECK_ERR(tensor_set_shape(&t, OG_FLOAT32, 2, bad), OG_ERR_INVALID_ARGUMENT, "[-2,3]");
    int64_t huge[] = {INT64_MAX / 2, 4};
    CHECK_ERR(tensor_set_shape(&t, OG_FLOAT32, 2, huge), OG_ERR_INVALID_ARGUMENT, "invalid shape");
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_ERR(tensor_set_shape(&t, OG_FLOAT32, 9, nine), OG_ERR_UNSUPPORTED, "rank 9");
}

static atomic_llong pool_sum;
static void add_range(void *arg, int64_t b, int64_t e) {
    (void)arg;
    long long s = 0;
    for (int64_t i = b; i < e; i++) s += i;
    atomic_fetch_add(&pool_sum, s);
}

TEST(threadpool_covers_range_exactly_once) {
    threadpool *p;
    CHECK_OK(threadpool_create(3, &p));
    for (int64_t n = 0; n < 2000; n += 37) {
        atomic_store(&pool_sum, 0);
        threadpool_parallel_for(p, n, 1, add_range, NULL);
        CHECK_EQ_INT(atomic_load(&pool_sum), n * (n - 1) / 2);
    }
    threadpool_free(p);
    threadpool_free(NULL);
}

/* Every byte but NUL, alone between two letters and all together, comes back from cJSON's
 * parser (an independent reader) as it went in; NUL, which a cJSON string cannot hold, is
 * \u0000 and does not end the text; the stream writer gives the same bytes. */
TEST(json_str_escapes_every_byte) {
    char all[256];
    for (int b = 1; b < 256; b++) {
        char s[3] = {'a', (char)b, 'z'};
        all[b - 1] = (char)b;
        size_t n;
        char *j = json_str_dup(s, 3, &n);
        CHECK(j && n == strlen(j));
        cJSON *v = j ? cJSON_Parse(j) : NULL;
        CHECK(cJSON_IsString(v) && strlen(v->valuestring) == 3 && !memcmp(v->valuestring, s, 3));
        if (b < 0x20 || b == '"' || b == '\\') CHECK(j && j[2] == '\\');
        else CHECK(j && n == 5);
        cJSON_Delete(v);
        free(j);
    }
    char *j = json_str_dup(all, 255, NULL);
    cJSON *v = j ? cJSON_Parse(j) : NULL;
    CHECK(cJSON_IsString(v) && strlen(v->valuestring) == 255 && !memcmp(v->valuestring, all, 255));
    cJSON_Delete(v);
    free(j);

    static const char nul[] = "x\0\0y\n\"";
    size_t n;
    j = json_str_dup(nul, sizeof nul - 1, &n);
    static const char want[] = "\"x\\u0000\\u0000y\\n\\\"\"";
    CHECK(j && n == sizeof want - 1 && !memcmp(j, want, n));
    free(j);
    char buf[64] = {0};
    FILE *f = fmemopen(buf, sizeof buf, "w");
    CHECK(f != NULL);
    if (f) {
        json_str_fwrite(f, nul, sizeof nul - 1);
        fclose(f);
        CHECK(!strcmp(buf, want));
    }
    j = json_str_dup("", 0, &n);
    CHECK(j && n == 2 && !strcmp(j, "\"\""));
    free(j);
}

static _Thread_local int on_this_thread;
static atomic_int pool_calls, pool_elsewhere;
static void count_call(void *arg, int64_t b, int64_t e) {
    (void)arg;
    atomic_fetch_add(&pool_calls, 1);
    if (!on_this_thread) atomic_fetch_add(&pool_elsewhere, 1);
    add_range(NULL, b, e);
}

/* threadpool_set_serial: the whole range in one call on the caller, no job handed out;
 * cleared, work is split again. */
TEST(threadpool_serial_runs_on_the_caller) {
    threadpool *p;
    CHECK_OK(threadpool_create(2, &p));
    on_this_thread = 1;
    for (int serial = 1; serial >= 0; serial--) {
        threadpool_set_serial(p, serial);
        uint64_t jobs0 = threadpool_jobs(p);
        atomic_store(&pool_sum, 0);
        atomic_store(&pool_calls, 0);
        atomic_store(&pool_elsewhere, 0);
        threadpool_parallel_for(p, 1000, 1, count_call, NULL);
        threadpool_parallel_for_cost(p, 1000, 1e6, count_call, NULL);
        CHECK_EQ_INT(atomic_load(&pool_sum), 2 * (1000 * 999 / 2));
        CHECK_EQ_INT(threadpool_jobs(p) - jobs0, serial ? 0 : 2);
        if (serial) {
            CHECK_EQ_INT(atomic_load(&pool_calls), 2);
            CHECK_EQ_INT(atomic_load(&pool_elsewhere), 0);
        } else {
            CHECK(atomic_load(&pool_calls) > 2);
        }
    }
    threadpool_free(p);
}
