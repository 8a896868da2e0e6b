/*
 * check.h - the conformance kit behind `tenferro check-engine`.
 *
 * The kit drives an engine under test and the CPU reference engine through
 * the public API only (engine.h, runtime.h, ops.h), exactly as a plugin
 * author's application would. Its parts:
 *   prims.c, prim_cases.c, prim_shape.c
 *                  every primitive x sub-op x dtype the engine claims, on
 *                  generated shapes, strides and data, compared with the
 *                  reference; unclaimed ones must be refused;
 *   grads.c        finite-difference checks of eager ops' derivatives;
 *   lifecycle.c    instances created and destroyed repeatedly, several alive
 *                  at once, two threads;
 *   abi.c          descriptor, supports() of unknowns, data-dependent errors;
 *   hooks.c        the counting allocator, the error-log collector and the
 *                  crash/hang reporter.
 * Results collect in a ck_ctx; cmd_check_engine.c prints them.
 */
#ifndef TF_CHECK_H
#define TF_CHECK_H

#include <stdarg.h>
#include <stdio.h>

#include <tenferro/ops.h>
#include <tenferro/tenferro.h>

/* What one table cell (a row's op for one dtype) came to. */
typedef enum ck_state {
    CK_NA = 0, /* the ABI does not define this op for this dtype */
    CK_UNSUP,  /* the engine does not claim it (and refused to run it) */
    CK_PASS,
    CK_FAIL, /* wrong values: max_err says by how much */
    CK_ERROR /* the engine returned an error on a call it claimed */
} ck_state;

typedef struct ck_cell {
    ck_state state;
    int cases;           /* cases run */
    double max_err;      /* floats: worst error relative to the tolerance's scale */
    tf_status status;    /* CK_ERROR: what the engine returned */
    int refusal_checked; /* an unclaimed signature was executed and refused */
} ck_cell;

#define CK_MAX_ROWS 96
#define CK_NAME_LEN 40

typedef struct ck_row {
    char name[CK_NAME_LEN];
    ck_cell cell[TF_DTYPE_COUNT];
} ck_row;

/* A line of a section other than the table (gradients, lifecycle, ABI). */
typedef struct ck_line {
    int section; /* ck_section */
    ck_state state;
    char *text;
} ck_line;

typedef enum ck_section {
    CK_SEC_GRADS,
    CK_SEC_LIFECYCLE,
    CK_SEC_ABI,
    CK_SEC_COUNT_
} ck_section;

typedef struct ck_ctx {
    /* set up by the command */
    const char *plugin_arg;    /* what the user gave */
    tf_plugin *plugin;         /* the engine under test's plugin */
    tf_plugin *ref_plugin;     /* the reference's */
    tf_engine_options options; /* for every instance of the engine under test */
    tf_engine *eut;            /* the engine under test */
    tf_engine *ref;            /* the reference */
    unsigned dtype_mask;       /* bit d: dtype d is checked */
    int quick;
    int verbose;
    int json;

    /* results */
    ck_row rows[CK_MAX_ROWS];
    int n_rows;
    char **failures; /* detail lines, in order */
    int n_failures, cap_failures;
    ck_line *lines;
    int n_lines, cap_lines;
    int refused;         /* unclaimed combinations refused as they must be */
    int wrongly_refused; /* unclaimed combinations that were not refused properly */
    int oom;             /* the kit itself ran out of memory */
} ck_ctx;

/* ---- results (cmd_check_engine.c) ---- */

/* A new row (NA everywhere); NULL (and ctx->oom) when the table is full. */
ck_row *ck_row_add(ck_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends a detail line to the failures list. */
void ck_failure(ck_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends a line to a section. */
void ck_line_add(ck_ctx *ctx, ck_section sec, ck_state state, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* tf_error_message() with the cause appended when there is one; static buffer per thread. */
const char *ck_error_text(void);

/* ---- the parts ---- */

void ck_run_prims(ck_ctx *ctx);
void ck_run_grads(ck_ctx *ctx);
void ck_run_lifecycle(ck_ctx *ctx);
void ck_run_abi(ck_ctx *ctx);

/* Creates another instance of the engine under test with ctx->options. */
tf_status ck_eut_create(ck_ctx *ctx, tf_engine **out);

/* hooks.c: a counting allocator and an error-log collector, installed before anything loads. */
void ck_hooks_install(void);
long long ck_live_bytes(void);                 /* host bytes the library and plugins hold now */
int ck_logged_errors(char *first, size_t cap); /* TF_LOG_ERROR messages so far, the first */

/* Records what the kit does now (printf-style), named if the engine crashes or hangs. */
void ck_doing(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Names ck_doing on SIGSEGV/SIGBUS/SIGFPE/SIGILL/SIGABRT, then dies of it; timeout_s > 0:
   after that many seconds prints it and exits 1. */
void ck_guard_install(unsigned timeout_s);

/* Deterministic pseudo-random numbers (xorshift64*), in [0, 1). */
double ck_rand(uint64_t *state);

#endif /* TF_CHECK_H */
