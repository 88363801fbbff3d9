/* Which vector instructions the GEMM kernels may use, decided at run time.
 *
 * The kernels for each instruction set are compiled into every build (each in its own
 * file with its own -m flags) and picked by what this CPU and the OS support, so one
 * binary runs everywhere and uses the best it can. OG_ISA=generic|avx2|avx512|amx caps
 * the choice (a level the CPU lacks falls back to the best it has), which lets tests
 * and CI run each fallback on any machine and an AMX machine compare AMX against the
 * others. */
#ifndef OG_BASE_ISA_H
#define OG_BASE_ISA_H

#include <stdbool.h>

typedef enum isa_level {
    ISA_GENERIC = 0, /* portable C */
    ISA_AVX2 = 1,    /* AVX2 + FMA + F16C */
    ISA_AVX512 = 2,  /* AVX-512 F/BW/VL/DQ + VNNI */
    ISA_AMX = 3,     /* AVX512 above + AMX-TILE/INT8, tile state granted by the kernel */
} isa_level;

/* The level the kernels use now: the best the CPU supports, capped by OG_ISA (read on
 * the first call) or by isa_set(). */
isa_level isa_active(void);
/* The best level this CPU and OS support (AMX only when the kernel granted the tile
 * data permission, asked for with arch_prctl(ARCH_REQ_XCOMP_PERM) on the first call). */
isa_level isa_supported(void);
/* Whether this CPU and OS have AVX-512 F, BW, DQ and VL (VNNI or not), whatever level is
 * active: the test onnxruntime's MLAS makes to take its AVX-512 kernels, whose arithmetic
 * some of ours reproduce (matmul_nbits_pack.h). */
bool isa_cpu_avx512_core(void);
/* Caps the active level (tests); returns the previous active level. A level above
 * isa_supported() is lowered to it. Not thread-safe against running kernels. */
isa_level isa_set(isa_level level);
/* "generic", "avx2", "avx512", "amx". */
const char *isa_name(isa_level level);
/* Whether the compiler could build the level's kernels (AMX needs gcc >= 11/clang >= 12). */
bool isa_compiled(isa_level level);
/* The value of OG_ISA when it named no level ("" when it was fine or unset), so that the
 * CLI can say it was ignored. */
const char *isa_env_error(void);

#endif
