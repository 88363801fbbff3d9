/* The dtype lists kernels expand their per-dtype loops over (X macros), and the fast
 * float16 conversions those loops load and store with. Shared by the elementwise and
 * cast families and any kernel that writes one loop per dtype. */
#ifndef OG_NATIVE_KERNELS_DTYPE_LISTS_H
#define OG_NATIVE_KERNELS_DTYPE_LISTS_H

#include "base/half.h"
#include "base/tensor.h"

#include <stdint.h>
#ifdef __F16C__
#include <immintrin.h>
#endif

/* float16 <-> float32 through the F16C instructions where the build targets them (same
 * round-to-nearest-even results as half.h, several times faster). */
#ifdef __F16C__
static inline float mk_h2f(uint16_t h) { return _cvtsh_ss(h); }
static inline uint16_t mk_f2h(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }
#else
#define mk_h2f f16_to_f32
#define mk_f2h f32_to_f16
#endif

/* ---- type lists: X(storage type, dtype, suffix, compute type, load, store) -------- */
#define MK_ID(v) (v)
#define MK_FLOAT_TYPES(X)                                                                \
    X(float, OG_FLOAT32, f32, float, MK_ID, MK_ID)                                       \
    X(uint16_t, OG_FLOAT16, f16, float, mk_h2f, mk_f2h)                          \
    X(uint16_t, OG_BFLOAT16, bf16, float, bf16_to_f32, f32_to_bf16)                      \
    X(double, OG_FLOAT64, f64, double, MK_ID, MK_ID)
#define MK_SINT_TYPES(X)                                                                 \
    X(int8_t, OG_INT8, i8, int8_t, MK_ID, MK_ID)                                         \
    X(int16_t, OG_INT16, i16, int16_t, MK_ID, MK_ID)                                     \
    X(int32_t, OG_INT32, i32, int32_t, MK_ID, MK_ID)                                     \
    X(int64_t, OG_INT64, i64, int64_t, MK_ID, MK_ID)
#define MK_UINT_TYPES(X)                                                                 \
    X(uint8_t, OG_UINT8, u8, uint8_t, MK_ID, MK_ID)                                      \
    X(uint16_t, OG_UINT16, u16, uint16_t, MK_ID, MK_ID)                                  \
    X(uint32_t, OG_UINT32, u32, uint32_t, MK_ID, MK_ID)                                  \
    X(uint64_t, OG_UINT64, u64, uint64_t, MK_ID, MK_ID)
#define MK_NUM_TYPES(X) MK_FLOAT_TYPES(X) MK_SINT_TYPES(X) MK_UINT_TYPES(X)

static inline int mk_is_float(og_dtype t) {
    return t == OG_FLOAT32 || t == OG_FLOAT16 || t == OG_BFLOAT16 || t == OG_FLOAT64;
}

#endif
