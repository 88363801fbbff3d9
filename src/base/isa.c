/* CPU feature detection for the kernels' run-time dispatch (see isa.h). */
#include "base/isa.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CPU_X86 1
#else
#define CPU_X86 0
#endif

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static isa_level supported = ISA_GENERIC;
static atomic_int active = ISA_GENERIC;
static char env_error[64];
static bool avx512_core;

#if CPU_X86
/* XCR0: which register states the OS saves on context switches. */
static unsigned long long xcr0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* Linux hands out the AMX tile data state only to processes that ask for it. */
static bool amx_permission(void) {
#if defined(__linux__) && defined(__x86_64__) && defined(SYS_arch_prctl)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return false;
#endif
}

static isa_level detect(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return ISA_GENERIC;
    bool osxsave = c & (1u << 27), fma = c & (1u << 12), f16c = c & (1u << 29);
    if (!osxsave) return ISA_GENERIC;
    unsigned long long x = xcr0();
    bool ymm_state = (x & 0x6) == 0x6, zmm_state = (x & 0xe6) == 0xe6;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return ISA_GENERIC;
    bool avx2 = b & (1u << 5);
    avx512_core = (b & (1u << 16)) && (b & (1u << 17)) && (b & (1u << 30)) &&
                  (b & (1u << 31)) && zmm_state; /* F, DQ, BW, VL */
    bool avx512 = avx512_core && (c & (1u << 11)); /* and VNNI */
    bool amx = (d & (1u << 24)) && (d & (1u << 25)); /* AMX-TILE, AMX-INT8 */
    if (!(avx2 && fma && f16c && ymm_state)) return ISA_GENERIC;
    if (!(avx512 && zmm_state)) return ISA_AVX2;
    if (amx && amx_permission() && (xcr0() & (3ull << 17)) == (3ull << 17))
        return ISA_AMX;
    return ISA_AVX512;
}
#else
static isa_level detect(void) { return ISA_GENERIC; }
#endif

static void init(void) {
    isa_level s = detect();
    while (s > ISA_GENERIC && !isa_compiled(s)) s--;
    supported = s;
    isa_level want = s;
    const char *env = getenv("OG_ISA");
    if (env && *env) {
        int found = -1;
        for (int l = ISA_GENERIC; l <= ISA_AMX; l++)
            if (strcmp(env, isa_name((isa_level)l)) == 0) found = l;
        if (found < 0) {
            strncpy(env_error, env, sizeof env_error - 1);
        } else if ((isa_level)found < want) {
            want = (isa_level)found;
        }
    }
    atomic_store(&active, (int)want);
}

isa_level isa_supported(void) {
    pthread_once(&once, init);
    return supported;
}

bool isa_cpu_avx512_core(void) {
    pthread_once(&once, init);
    return avx512_core;
}

isa_level isa_active(void) {
    pthread_once(&once, init);
    return (isa_level)atomic_load_explicit(&active, memory_order_relaxed);
}

isa_level isa_set(isa_level level) {
    pthread_once(&once, init);
    if (level > supported) level = supported;
    if (level < ISA_GENERIC) level = ISA_GENERIC;
    return (isa_level)atomic_exchange(&active, (int)level);
}

const char *isa_name(isa_level level) {
    switch (level) {
    case ISA_GENERIC: return "generic";
    case ISA_AVX2: return "avx2";
    case ISA_AVX512: return "avx512";
    case ISA_AMX: return "amx";
    }
    return "?";
}

bool isa_compiled(isa_level level) {
#if !CPU_X86
    return level == ISA_GENERIC;
#else
#ifdef OG_NO_AMX
    if (level == ISA_AMX) return false;
#endif
    return level >= ISA_GENERIC && level <= ISA_AMX;
#endif
}

const char *isa_env_error(void) {
    pthread_once(&once, init);
    return env_error;
}
