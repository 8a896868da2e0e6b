/*
 * cpu_fused.h - a FUSED program prepared for one call (cpu_fused.c), as the
 * interpreter runs it and the hot-program compiler (cpu_jit.c) compiles it.
 */
#ifndef TENFERRO_CPU_FUSED_H
#define TENFERRO_CPU_FUSED_H

#include "cpu_internal.h"

/* Registers: the inputs, the steps, then (ABI 1.5) the immediates from FUSED_IMM_REG. */
#define FUSED_IMM_REG (TF_FUSED_MAX_INPUTS + TF_FUSED_MAX_STEPS)
#define FUSED_REGS (FUSED_IMM_REG + TF_FUSED_MAX_IMMEDIATES)
/* loc[] of immediate j: FUSED_LOC_IMM + j, read from fused_prog.imm[j] with stride 0. */
#define FUSED_LOC_IMM 1024

typedef struct fused_step {
    cpu_row_fn fn;
    uint32_t op;
    int nsrc;   /* 1 or 2 */
    int src[2]; /* registers read */
    int dst;    /* the register written */
} fused_step;

/* A program ready to run: its live steps only (a step nobody reads is dropped). */
typedef struct fused_prog {
    uint32_t dtype;
    int n_in;
    int n_out;
    int n_steps;
    int in_place; /* out[0] is one of the inputs: the last register lives in a slot */
    /* non-NULL: elementwise output o's register streamed_reg[o] (o < n_streamed) lives
       in a slot, stored into the output with these non-temporal stores per chunk */
    cpu_stream_copy_fn stream;
    int n_streamed;
    int streamed_reg[TF_FUSED_MAX_OUTPUTS];
    int64_t chunk;
    int64_t esize;
    /* where register r lives: operand loc[r] >= 0 of the row (the outputs, then the
       inputs), immediate loc[r] - FUSED_LOC_IMM, or slot -1 - loc[r] */
    int loc[FUSED_REGS];
    fused_step steps[TF_FUSED_MAX_STEPS];
    /* 1.6, a reduced output: its register, REDUCE op and row operand (the unit's
       buffer; -1 when an elementwise output holds the register), else -1 */
    int red_reg;
    uint32_t red_op;
    int red_buf;
    /* the compiled program (cpu_jit.c), or NULL: run on dense rows; jit_lanes folds
       the reduced register into REDUCE's lanes instead of writing the buffer */
    cpu_jit_fn jit, jit_lanes;
    cpu_row_fn rows[TF_FUSED_MAX_STEPS]; /* steps[k].fn, as the compiled code calls them */
    /* ABI 1.5: the immediates, rounded to the dtype (its bytes) */
    _Alignas(8) unsigned char imm[TF_FUSED_MAX_IMMEDIATES][8];
} fused_prog;


/*
 * The compiled form of a prepared program, or NULL (cpu_jit.c): the engine's option
 * jit decides when a program is compiled; a program that cannot be (a dtype the
 * compiler does not cover, no compiler) runs interpreted. Fails (1,
 * *err filled) only where jit=always asks a compile that failed.
 */
int tf__cpu_jit_lookup(const cpu_engine *e, fused_prog *fp, int64_t numel, cpu_err *err);

#endif /* TENFERRO_CPU_FUSED_H */
