/*
 * check.h - the conformance kit behind `tenferro check-engine`.
 *
 * The kit drives an engine under test and the CPU reference engine through
 * the public API only (engine.h, runtime.h, ops.h), exactly as a plugin
 * author's application would. Its parts:
 *   prims.c, prim_cases.c, prim_shape.c, fused_ref.c
 *                  every primitive x sub-op x dtype the engine claims, on
 *                  generated shapes, strides and data, compared with the
 *                  reference; unclaimed ones must be refused;
 *   grads.c        finite-difference checks of eager ops' derivatives;
 *   lifecycle.c    instances created and destroyed repeatedly, several alive
 *                  at once, two threads;
 *   abi.c          descriptor, supports() of unknowns, data-dependent errors;
 *   hooks.c        the counting, guarded allocator, the error-log collector
 *                  and the crash/hang reporter of the kit's own process;
 *   isolate.c      worker processes: every case and check runs in one, so a
 *                  crash, abort or hang of the engine is that check's
 *                  failure and the run goes on; the culprit search;
 *   worker.c       a worker's life: loading the plugins, creating the
 *                  instances, running jobs;
 *   probe.c        the probe worker: the kit's own process asks it for the
 *                  plugin's description and every supports() answer, so
 *                  that no call into the engine under test is made there.
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
    CK_FAIL,  /* wrong values: max_err says by how much */
    CK_ERROR, /* the engine returned an error on a call it claimed */
    CK_CRASH  /* the process running the check died or hung: see ck_fate */
} ck_state;

/* How a worker process running a check ended when it did not finish it. */
typedef struct ck_fate {
    int signal;      /* the signal that killed it, 0 if none */
    int exit_status; /* it exited (signal 0, timed_out 0) with this status */
    int timed_out;   /* no answer within the per-check timeout: it was killed */
} ck_fate;

typedef struct ck_cell {
    ck_state state;
    int cases;           /* cases run */
    double max_err;      /* floats: worst error relative to the tolerance's scale */
    tf_status status;    /* CK_ERROR: what the engine returned */
    int refusal_checked; /* an unclaimed signature was executed and refused */
    ck_fate fate;        /* CK_CRASH: how its process ended */
    int damaged;         /* CK_FAIL: it left memory or its process damaged (isolate.c) */
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

/* A step of a worker's setup that failed (ck_meta.setup). */
typedef enum ck_setup {
    CK_SETUP_OK = 0,
    CK_SETUP_LOAD,       /* tf_plugin_load of the engine under test */
    CK_SETUP_REF_LOAD,   /* of the reference */
    CK_SETUP_CREATE,     /* an instance of the engine under test */
    CK_SETUP_REF_CREATE, /* an instance of the reference */
} ck_setup;

/* What the report says about the plugins, read where they are loaded (a worker, or the
   kit's own process with --no-fork), and how their setup went there. */
typedef struct ck_meta {
    char name[128], version[128], file[1024];
    unsigned abi_major, abi_minor;
    char device[640]; /* "device N: <name> / <driver>" or "device N: unavailable: <why>" */
    char ref_name[128], ref_file[1024];
    int setup;        /* ck_setup: the step that failed, CK_SETUP_OK if none */
    tf_status status; /* its status */
    char why[1024];   /* its message */
} ck_meta;

typedef enum ck_section {
    CK_SEC_GRADS,
    CK_SEC_LIFECYCLE,
    CK_SEC_ABI,
    CK_SEC_COUNT_
} ck_section;

typedef struct ck_ctx {
    /* set up by the command */
    const char *plugin_arg;        /* what the user gave */
    const char *reference_arg;     /* the reference's name or path */
    ck_meta meta;                  /* the plugins' description (probe.c, worker.c) */
    tf_plugin *plugin;             /* the engine under test's plugin: NULL in the kit's own
                                      process unless --no-fork (a worker loads it) */
    tf_plugin *ref_plugin;         /* the reference's (likewise) */
    tf_engine_options options;     /* for every instance of the engine under test */
    tf_engine *eut;                /* the engine under test */
    tf_engine *ref;                /* the reference */
    tf_engine_options ref_options; /* for every instance of the reference */
    unsigned dtype_mask;           /* bit d: dtype d is checked */
    int quick;
    int verbose;
    int json;
    int isolate;            /* run checks in worker processes (isolate.c); 0: --no-fork */
    unsigned case_timeout;  /* seconds a worker may take for one case or check */
    double deadline;        /* CLOCK_MONOTONIC seconds of --timeout, 0 for none */
    int stopped;            /* --timeout passed: no further checks run */
    struct ck_iso *iso;     /* the worker processes (isolate.c) */
    struct ck_probe *probe; /* the probe worker and its answers (probe.c) */
    int argc;               /* the command line after "tenferro", for the workers */
    char **argv;

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

/* Makes room for one more of `count` items of `size` bytes in the array at *items (a
   pointer to the array's pointer), doubling *cap; 0 (and ctx->oom) when out of memory. */
int ck_grow(ck_ctx *ctx, void *items, int *cap, int count, size_t size);

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

/* ---- probe.c: what the engine claims, asked where a crash costs nothing ---- */

/*
 * Whether the engine under test claims prim/op for the dtypes dt[0..n): 1 or 0, asked
 * twice (the answers must agree). In the kit's own process the probe worker asks it
 * (answers are remembered); in a worker, or with --no-fork, the instance ctx->eut. -1 when
 * there is no answer: supports() crashed, aborted or hung, or answered twice differently;
 * that is recorded as the failure of cell (row, col), or of the run when row is NULL.
 */
int ck_claims(ck_ctx *ctx, ck_row *row, tf_dtype col, tf_prim prim, uint32_t op, const tf_dtype *dt,
              size_t n);
/* The kit's own process: loads the plugins in the probe worker and fills ctx->meta.
   0, or 2 after printing why not on stderr (the loader's refusal, or a crash, abort or
   hang of the plugin while loading, initialising or instantiating it, named). */
int ck_probe_open(ck_ctx *ctx);
/* --no-fork and workers: loads the plugins here, fills ctx->meta (ctx->meta.setup says
   what failed); with `create`, also the instances ctx->eut and ctx->ref. */
void ck_meta_open_here(ck_ctx *ctx, int create);

/* hooks.c: a counting allocator and an error-log collector, installed before anything loads. */
void ck_hooks_install(void);
long long ck_live_bytes(void);                 /* host bytes the library and plugins hold now */
int ck_logged_errors(char *first, size_t cap); /* TF_LOG_ERROR messages so far, the first */
void ck_logged_add(int n, const char *first);  /* counts n more, logged in a worker */
/* Blocks from the allocator whose guard bytes were overwritten since the last call (live
   ones, and freed ones found damaged when freed): how many, the first described in what. */
int ck_heap_check(char *what, size_t cap);

/* Records what the kit does now (printf-style), named if the engine crashes or hangs; the
   step (ck_step) is cleared. */
void ck_doing(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *ck_doing_now(void); /* the last ck_doing text */
/* Records the step of what ck_doing said that runs now ("execute", "download of the
   outputs"), named after it if the engine dies there. */
void ck_step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* fn gets every ck_doing text, step_fn every ck_step text (a worker sends them to the
   parent); NULL: none. */
typedef void (*ck_doing_fn)(const char *text);
void ck_doing_hook(ck_doing_fn fn, ck_doing_fn step_fn);
/* Names ck_doing on SIGSEGV/SIGBUS/SIGFPE/SIGILL/SIGABRT, then dies of it; timeout_s > 0:
   after that many seconds prints it and exits 1. */
void ck_guard_install(unsigned timeout_s);
/* Back to the default dispositions and no alarm (a worker dies of its signal). */
void ck_guard_remove(void);

/* ---- isolate.c: where checks run ---- */

/* One check of a section (gradients, lifecycle, ABI), run by index. */
typedef void (*ck_check_fn)(ck_ctx *ctx, int index);

/* The checks of the sections (grads.c, lifecycle.c, abi.c): the ones isolate.c can run. */
void ck_grads_one(ck_ctx *ctx, int index);

/* Whether the kit checks dtype d on this engine: --dtypes, and complex only for an
   engine of ABI minor >= 4 (prims.c). */
int ck_wants_dtype(const ck_ctx *ctx, tf_dtype d);
void ck_lifecycle_one(ck_ctx *ctx, int index);
void ck_abi_descriptor_one(ck_ctx *ctx, int index);
void ck_abi_data_error_one(ck_ctx *ctx, int index);

/* Starts a new group of checks: the next one runs in a fresh worker process. */
void ck_iso_group(ck_ctx *ctx);
/* Runs fn(ctx, index) as a check of section sec ("what" names it if it dies). */
void ck_iso_check(ck_ctx *ctx, ck_section sec, ck_check_fn fn, int index, const char *what);
/* Ends the last worker and frees what isolate.c holds. */
void ck_iso_finish(ck_ctx *ctx);
/* A worker's life (worker.c; the command line said --worker R,W): loads the plugins,
   creates the instances (saying so to the parent, which names that step if it dies),
   then runs jobs read from fd req, results written to fd rep; never returns. */
void ck_iso_worker(ck_ctx *ctx, int req_fd, int rep_fd) __attribute__((noreturn));
/* "SIGSEGV", ... or "signal N" (static). */
const char *ck_signal_name(int sig);
/* "crashed (SIGSEGV)", "exited with status 3", "gave no answer within 30 s" into buf. */
void ck_fate_text(const ck_ctx *ctx, const ck_fate *f, char *buf, size_t cap);

/* Deterministic pseudo-random numbers (xorshift64*), in [0, 1). */
double ck_rand(uint64_t *state);

#endif /* TF_CHECK_H */
