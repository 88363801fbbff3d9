/* Math kernels through a stand-in executor: broadcasting paths and threads against naive
 * loops, integer corner cases (no UB), Cast rules, activations' numerics. */
#include "testing.h"

#include "base/half.h"
#include "backends/native/kernels/cast/cast.h"
#include "backends/native/kernels/elementwise/elementwise.h"

#include <stdlib.h>

typedef struct mk_run {
    kernel_ctx ctx;
    graph_node node;
    tensor out;
    threadpool *pool;
} mk_run;

static og_status *mk_output(kernel_ctx *c, int i, og_dtype dt, int rank, const int64_t *dims,
                            tensor **o) {
    mk_run *r = c->exec;
    (void)i;
    tensor_release(&r->out);
    OG_TRY(tensor_set_shape(&r->out, dt, rank, dims));
    OG_TRY(tensor_alloc_data(&r->out));
    *o = &r->out;
    return NULL;
}

static og_status *mk_scratch(kernel_ctx *c, size_t n, void **p) {
    (void)c, (void)n, (void)p;
    return og_errorf(OG_ERR_RUNTIME, "math kernels take no scratch");
}

/* Runs fn on inputs with attributes; threads > 1 gives it a pool. */
static og_status *mk_call(mk_run *r, kernel_fn fn, graph_attr *attrs, int na,
                          const tensor *const *in, int nin, int threads) {
    memset(r, 0, sizeof *r);
    if (threads > 1) OG_TRY(threadpool_create(threads, &r->pool));
    r->node = (graph_node){.name = "t", .op_type = "T", .domain = "", .opset = 21,
                           .n_inputs = nin, .n_outputs = 1, .n_attrs = na, .attrs = attrs};
    r->ctx = (kernel_ctx){.node = &r->node, .opset = 21, .n_inputs = nin, .inputs = in,
                          .n_outputs = 1, .pool = r->pool, .output = mk_output,
                          .scratch = mk_scratch, .exec = r, .where = "test"};
    return fn(&r->ctx);
}

static void mk_free(mk_run *r) {
    tensor_release(&r->out);
    threadpool_free(r->pool);
}

static tensor mk_t(og_dtype dt, int rank, const int64_t *dims, void *data) {
    tensor t = {0};
    og_status_free(tensor_set_shape(&t, dt, rank, dims));
    t.data = data;
    return t;
}

static graph_attr mk_int_attr(const char *name, int64_t v) {
    return (graph_attr){.name = name, .type = ATTR_INT, .i = v};
}

TEST(math_add_broadcast_paths_match_naive) {
    enum { A = 64, B = 3, C = 1000 };
    static float x[A * B * C], row[B * 1], vec[C], out[A * B * C];
    for (int i = 0; i < A * B * C; i++) x[i] = (float)(i % 977) * 0.5f;
    for (int i = 0; i < B; i++) row[i] = (float)i * 100;
    for (int i = 0; i < C; i++) vec[i] = (float)i;
    float scalar = 7;
    int64_t dx[3] = {A, B, C}, drow[2] = {B, 1}, dvec[1] = {C};
    tensor tx = mk_t(OG_FLOAT32, 3, dx, x), trow = mk_t(OG_FLOAT32, 2, drow, row),
           tvec = mk_t(OG_FLOAT32, 1, dvec, vec), ts = mk_t(OG_FLOAT32, 0, NULL, &scalar);
    const tensor *cases[3][2] = {{&tx, &trow}, {&tvec, &tx}, {&ts, &tx}};
    for (int c = 0; c < 3; c++) {
        for (int threads = 1; threads <= 4; threads += 3) {
            mk_run r;
            CHECK_OK(mk_call(&r, cpu_sub, NULL, 0, cases[c], 2, threads));
            CHECK_EQ_INT(r.out.rank, 3);
            for (int a = 0; a < A; a++)
                for (int b = 0; b < B; b++)
                    for (int k = 0; k < C; k++) {
                        int i = (a * B + b) * C + k;
                        float other = c == 0 ? row[b] : c == 1 ? vec[k] : scalar;
                        out[i] = c == 0 ? x[i] - other : other - x[i];
                    }
            CHECK(memcmp(r.out.data, out, sizeof out) == 0);
            mk_free(&r);
        }
    }
}

TEST(math_broadcast_mismatch_is_an_error) {
    float a[6] = {0}, b[4] = {0};
    int64_t da[2] = {2, 3}, db[1] = {4};
    tensor ta = mk_t(OG_FLOAT32, 2, da, a), tb = mk_t(OG_FLOAT32, 1, db, b);
    const tensor *in[2] = {&ta, &tb};
    mk_run r;
    CHECK_ERR(mk_call(&r, cpu_add, NULL, 0, in, 2, 1), OG_ERR_INVALID_ARGUMENT, "[2,3]");
    mk_free(&r);
    const tensor *one[1] = {&ta};
    int32_t i32[6] = {0};
    tensor ti = mk_t(OG_INT32, 2, da, i32);
    one[0] = &ti;
    CHECK_ERR(mk_call(&r, cpu_sqrt, NULL, 0, one, 1, 1), OG_ERR_UNSUPPORTED, "int32");
    mk_free(&r);
}

TEST(math_integer_division_and_mod_are_defined) {
    int32_t a[6] = {7, -7, 7, -7, INT32_MIN, 5}, b[6] = {3, 3, -3, -3, -1, 0};
    int64_t d[1] = {6};
    tensor ta = mk_t(OG_INT32, 1, d, a), tb = mk_t(OG_INT32, 1, d, b);
    const tensor *in[2] = {&ta, &tb};
    mk_run r;
    CHECK_OK(mk_call(&r, cpu_div, NULL, 0, in, 2, 1));
    const int32_t *y = r.out.data;
    int32_t div[6] = {2, -2, -2, 2, INT32_MIN, 0};
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(y[i], div[i]);
    mk_free(&r);
    CHECK_OK(mk_call(&r, cpu_mod, NULL, 0, in, 2, 1));
    y = r.out.data;
    int32_t pymod[6] = {1, 2, -2, -1, 0, 0};
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(y[i], pymod[i]);
    mk_free(&r);
    graph_attr fm = mk_int_attr("fmod", 1);
    CHECK_OK(mk_call(&r, cpu_mod, &fm, 1, in, 2, 1));
    y = r.out.data;
    int32_t cmod[6] = {1, -1, 1, -1, 0, 0};
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(y[i], cmod[i]);
    mk_free(&r);
    int32_t big[2] = {INT32_MAX, INT32_MIN};
    int64_t d2[1] = {2};
    tensor tbig = mk_t(OG_INT32, 1, d2, big);
    const tensor *in2[2] = {&tbig, &tbig};
    CHECK_OK(mk_call(&r, cpu_add, NULL, 0, in2, 2, 1)); /* wraps, no UB */
    CHECK_EQ_INT(((int32_t *)r.out.data)[0], -2);
    mk_free(&r);
    const tensor *one[1] = {&tbig};
    CHECK_OK(mk_call(&r, cpu_abs, NULL, 0, one, 1, 1));
    CHECK_EQ_INT(((int32_t *)r.out.data)[1], INT32_MIN);
    mk_free(&r);
}

TEST(math_float16_rounds_once) {
    uint16_t a[3], b[3];
    float fa[3] = {1.0009765625f, 3.14159f, -65504.0f}, fb[3] = {1.0009765625f, 2.71828f, 2.0f};
    for (int i = 0; i < 3; i++) a[i] = f32_to_f16(fa[i]), b[i] = f32_to_f16(fb[i]);
    int64_t d[1] = {3};
    tensor ta = mk_t(OG_FLOAT16, 1, d, a), tb = mk_t(OG_FLOAT16, 1, d, b);
    const tensor *in[2] = {&ta, &tb};
    mk_run r;
    CHECK_OK(mk_call(&r, cpu_mul, NULL, 0, in, 2, 1));
    const uint16_t *y = r.out.data;
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(y[i], f32_to_f16(f16_to_f32(a[i]) * f16_to_f32(b[i])));
    CHECK(isinf(f16_to_f32(y[2])));
    mk_free(&r);
}

TEST(math_pow_mixed_dtypes) {
    float base[3] = {2, 3, -2};
    int64_t e64[3] = {10, 0, 3};
    int32_t ibase[2] = {2, 9};
    float fe[2] = {0.5f, 0.5f};
    int64_t d3[1] = {3}, d2[1] = {2};
    tensor tb = mk_t(OG_FLOAT32, 1, d3, base), te = mk_t(OG_INT64, 1, d3, e64);
    const tensor *in[2] = {&tb, &te};
    mk_run r;
    CHECK_OK(mk_call(&r, cpu_pow, NULL, 0, in, 2, 1));
    CHECK_EQ_INT(r.out.dtype, OG_FLOAT32);
    const float *y = r.out.data;
    CHECK_NEAR(y[0], 1024, 0);
    CHECK_NEAR(y[1], 1, 0);
    CHECK_NEAR(y[2], -8, 0);
    mk_free(&r);
    tensor tib = mk_t(OG_INT32, 1, d2, ibase), tfe = mk_t(OG_FLOAT32, 1, d2, fe);
    const tensor *in2[2] = {&tib, &tfe};
    CHECK_OK(mk_call(&r, cpu_pow, NULL, 0, in2, 2, 1));
    CHECK_EQ_INT(r.out.dtype, OG_INT32);
    CHECK_EQ_INT(((int32_t *)r.out.data)[0], 1); /* sqrt(2) truncated */
    CHECK_EQ_INT(((int32_t *)r.out.data)[1], 3);
    mk_free(&r);
}

/* numpy (onnx's reference) refuses integers to negative integer powers; so do we, with
 * the element named, in the same-dtype and the mixed-dtype paths. */
TEST(math_pow_integer_negative_exponent_is_an_error) {
    int32_t base[3] = {2, 1, -1}, e32[3] = {3, 2, -1};
    int8_t e8[3] = {1, -2, 0};
    int64_t d3[1] = {3};
    tensor tb = mk_t(OG_INT32, 1, d3, base), te = mk_t(OG_INT32, 1, d3, e32);
    tensor te8 = mk_t(OG_INT8, 1, d3, e8);
    const tensor *in[2] = {&tb, &te}, *in8[2] = {&tb, &te8};
    mk_run r;
    CHECK_ERR(mk_call(&r, cpu_pow, NULL, 0, in, 2, 1), OG_ERR_INVALID_ARGUMENT,
              "element 2 is -1");
    mk_free(&r);
    CHECK_ERR(mk_call(&r, cpu_pow, NULL, 0, in8, 2, 1), OG_ERR_INVALID_ARGUMENT,
              "element 1 is -2");
    mk_free(&r);
}

static og_status *cast_to(mk_run *r, const tensor *x, og_dtype to, int saturate) {
    graph_attr at[2] = {mk_int_attr("to", to), mk_int_attr("saturate", saturate)};
    const tensor *in[1] = {x};
    return mk_call(r, cpu_cast, at, 2, in, 1, 1);
}

TEST(math_cast_rules) {
    float f[6] = {NAN, 300.5f, -1.5f, 1e30f, 480.0f, 0.0625f};
    int64_t d[1] = {6};
    tensor t = mk_t(OG_FLOAT32, 1, d, f);
    mk_run r;
    CHECK_OK(cast_to(&r, &t, OG_INT32, 1));
    const int32_t *i = r.out.data;
    CHECK_EQ_INT(i[0], 0);
    CHECK_EQ_INT(i[1], 300);
    CHECK_EQ_INT(i[2], -1);
    mk_free(&r);
    CHECK_OK(cast_to(&r, &t, OG_UINT8, 1));
    CHECK_EQ_INT(((uint8_t *)r.out.data)[1], 44); /* 300 keeps its low bits */
    mk_free(&r);
    CHECK_OK(cast_to(&r, &t, OG_FLOAT8E4M3FN, 1));
    const uint8_t *q = r.out.data;
    CHECK_EQ_INT(q[0], 0x7f);
    CHECK_EQ_INT(q[3], 0x7e); /* saturates to 448 */
    CHECK_EQ_INT(q[4], 0x7e);
    CHECK_EQ_INT(q[5], 0x18); /* 2^-4: exponent 3, mantissa 0 */
    mk_free(&r);
    CHECK_OK(cast_to(&r, &t, OG_FLOAT8E4M3FN, 0));
    CHECK_EQ_INT(((uint8_t *)r.out.data)[4], 0x7f); /* NaN without saturation */
    mk_free(&r);
    /* 1 + 2^-11 + 2^-40 rounds up in one step, but to 1 through float32 first */
    double dd = 1.0 + ldexp(1, -11) + ldexp(1, -40);
    int64_t d1[1] = {1};
    tensor td = mk_t(OG_FLOAT64, 1, d1, &dd);
    CHECK_OK(cast_to(&r, &td, OG_FLOAT16, 1));
    CHECK_EQ_INT(((uint16_t *)r.out.data)[0], 0x3c01);
    mk_free(&r);
    int8_t i4[3] = {-8, 7, -1};
    int64_t d3[1] = {3};
    tensor ti = mk_t(OG_INT8, 1, d3, i4);
    CHECK_OK(cast_to(&r, &ti, OG_INT4, 1));
    const uint8_t *p = r.out.data;
    CHECK_EQ_INT(p[0], 0x78);
    CHECK_EQ_INT(p[1], 0x0f);
    mk_free(&r);
}

TEST(math_where_sum_mean_broadcast) {
    uint8_t c[2] = {1, 0};
    int64_t x[3] = {1, 2, 3}, y = -1;
    int64_t dc[2] = {2, 1}, dx[1] = {3};
    tensor tc = mk_t(OG_BOOL, 2, dc, c), tx = mk_t(OG_INT64, 1, dx, x),
           ty = mk_t(OG_INT64, 0, NULL, &y);
    const tensor *in[3] = {&tc, &tx, &ty};
    mk_run r;
    CHECK_OK(mk_call(&r, cpu_where, NULL, 0, in, 3, 1));
    const int64_t *o = r.out.data;
    int64_t want[6] = {1, 2, 3, -1, -1, -1};
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(o[i], want[i]);
    mk_free(&r);
    float a[3] = {1, 2, 3}, b[2] = {10, 20}, s = 100;
    int64_t db[2] = {2, 1};
    tensor ta = mk_t(OG_FLOAT32, 1, dx, a), tb = mk_t(OG_FLOAT32, 2, db, b),
           ts = mk_t(OG_FLOAT32, 0, NULL, &s);
    const tensor *v[3] = {&ta, &tb, &ts};
    CHECK_OK(mk_call(&r, cpu_mean, NULL, 0, v, 3, 1));
    CHECK_EQ_INT(r.out.dims[0], 2);
    CHECK_EQ_INT(r.out.dims[1], 3);
    const float *m = r.out.data;
    CHECK_NEAR(m[0], 37, 1e-5);
    CHECK_NEAR(m[5], 41, 1e-5);
    mk_free(&r);
}

TEST(math_activation_numerics) {
    float x[6] = {-100, 100, 0.5f, 1.5f, 2.5f, -2.5f};
    int64_t d[1] = {6};
    tensor t = mk_t(OG_FLOAT32, 1, d, x);
    const tensor *in[1] = {&t};
    mk_run r;
    CHECK_OK(mk_call(&r, cpu_sigmoid, NULL, 0, in, 1, 1));
    const float *y = r.out.data;
    CHECK(y[0] == 0); /* onnxruntime's (MLAS's) logistic is 0 below -18 (base/vmath.c) */
    CHECK_NEAR(y[1], 1, 0);
    mk_free(&r);
    CHECK_OK(mk_call(&r, cpu_round, NULL, 0, in, 1, 1));
    y = r.out.data;
    CHECK_NEAR(y[2], 0, 0);
    CHECK_NEAR(y[3], 2, 0);
    CHECK_NEAR(y[4], 2, 0);
    CHECK_NEAR(y[5], -2, 0);
    mk_free(&r);
    CHECK_OK(mk_call(&r, cpu_softplus, NULL, 0, in, 1, 1));
    y = r.out.data;
    CHECK_NEAR(y[1], 100, 0);
    CHECK(y[0] > 0);
    mk_free(&r);
    CHECK_OK(mk_call(&r, cpu_gelu, NULL, 0, in, 1, 1));
    CHECK_NEAR(((float *)r.out.data)[3], 1.5 * 0.5 * (1 + erf(1.5 / sqrt(2.0))), 1e-6);
    mk_free(&r);
}

TEST(math_clip_integer_with_one_bound) {
    int8_t x[4] = {-128, -5, 5, 127}, lo = -6;
    int64_t d[1] = {4};
    tensor t = mk_t(OG_INT8, 1, d, x), tl = mk_t(OG_INT8, 0, NULL, &lo);
    const tensor *in[2] = {&t, &tl};
    mk_run r;
    CHECK_OK(mk_call(&r, cpu_clip, NULL, 0, in, 2, 1));
    const int8_t *y = r.out.data;
    CHECK_EQ_INT(y[0], -6);
    CHECK_EQ_INT(y[1], -5);
    CHECK_EQ_INT(y[3], 127);
    mk_free(&r);
}
