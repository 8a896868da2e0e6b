/*
 * lazy_internal.h - deferred elementwise chains (core/src/lazy: defer.c,
 * program.c): a session's back-to-back
 * elementwise ops collected into a batch and run as one TF_PRIM_FUSED call.
 *
 * This is the layer between the engine boundary and the runtime: it knows
 * tensors and engines, and nothing of eager tensors, sessions or the tape.
 * A session holds a tf_lazy; the runtime tells it, through `wanted`,
 * whether anything may still read a result (see defer.c, "Which results
 * are written").
 */
#ifndef TF_LAZY_INTERNAL_H
#define TF_LAZY_INTERNAL_H

#include <tenferro/runtime.h>

#include "engine_internal.h"

/* A program's reference (a batch's, a rule's while it is built): an input
   (TF_FX_IN | index), a batch's immediate (TF_FX_IMM | index) or a step (its
   index); TF_FX_NONE: none. */
#define TF_FX_IN 0x80000000u
#define TF_FX_IMM 0x40000000u
#define TF_FX_NONE 0xffffffffu

/* ---- programs of FUSED steps without FUSED (program.c) ---- */

/* Resolves n steps built with references into registers (inputs 0 .. n_in-1,
   step k n_in + k), as TF_PRIM_FUSED reads them. */
void tf__lazy_resolve(const tf_fused_step *steps, uint32_t n, uint32_t n_in, tf_fused_step *out);
/* One reference resolved so (an immediate becomes TF_FUSED_IMM | index). */
uint32_t tf__lazy_resolve_ref(uint32_t ref, uint32_t n_in);
/* One resolved step as its own UNARY or BINARY call on e, reading regs[] (and, for an
   operand TF_FUSED_IMM | j, the tensor imm[j] the immediate was taken from). */
tf_status tf__lazy_run_step(tf_engine *e, const tf_fused_step *step, tf_tensor *const *regs,
                            tf_tensor *const *imm, tf_tensor *out);
/*
 * n resolved steps, one primitive call each, over the n_in tensors in[] (and the
 * immediates' tensors imm[], NULL when there are none): step
 * k writes dst[k], or, where dst[k] is NULL, a new dense tensor of dtype and
 * shape that it puts there (the caller releases those, also on failure).
 * Stops at the first failure.
 */
tf_status tf__lazy_run_steps(tf_engine *e, const tf_fused_step *steps, uint32_t n, uint32_t n_in,
                             tf_tensor *const *in, tf_tensor *const *imm, tf_dtype dtype,
                             uint32_t rank, const int64_t *shape, tf_tensor **dst);

/* ---- deferred chains (defer.c) ---- */

/*
 * What a batch's `wanted` callback says of a result's owner, which decides
 * when the result is computed (never what it holds: a result kept pending
 * is computed when first read, from inputs no one may write meanwhile).
 */
typedef enum tf_lazy_want {
    TF_LAZY_UNREAD = 0, /* nothing can read it: never written */
    TF_LAZY_READ = 1,   /* something may read it: written when the batch runs */
    /* only the tape holds it, for rules that read it: at a session's end it
       stays pending, in a residual batch of its own (defer_run.c) */
    TF_LAZY_TAPE = 2
} tf_lazy_want;

/* What a session defers with. One thread at a time (the session's). */
typedef struct tf_lazy {
    tf_engine *engine;      /* borrowed from the session */
    uint8_t mode;           /* a tf_defer_mode */
    struct tf_batch *batch; /* NULL until the first deferred op */
    bool shared;            /* batch is another tf_lazy's (tf__lazy_share): never freed here */
    /*
     * Whether anything may still read the value of a result's owner (the
     * object tf__lazy_adopt named: an eager tensor), and what, as a
     * tf_lazy_want: asked when a batch runs on its session's thread, while
     * the owner is alive. NULL: always read.
     */
    int (*wanted)(const void *owner);
} tf_lazy;

/*
 * Runs one primitive for z's session: a UNARY or BINARY of a float dtype
 * joins z's batch when it can (its result pending until read or the batch
 * runs), a REDUCE of a batch result may join as the batch's tail, anything
 * else runs at once.
 */
tf_status tf__lazy_exec(tf_lazy *z, tf_prim prim, const void *params, size_t n_in,
                        tf_tensor *const *in, tf_tensor *out);
/*
 * Runs a program of n_steps resolved steps (TF_PRIM_FUSED's registers: the
 * inputs in[0 .. n), then the steps) whose last step's result is `out`: it
 * joins z's batch as a whole where z defers results like `out` (its inner
 * steps have no tensors: only the program reads them), otherwise it runs at
 * once as one FUSED call, or as one primitive per step on an engine without
 * FUSED for it.
 */
tf_status tf__lazy_program(tf_lazy *z, const tf_fused_step *steps, uint32_t n_steps, uint32_t n,
                           tf_tensor *const *in, tf_tensor *out);
/*
 * Whether z defers elementwise results like `out` (its float dtype and
 * size): its mode, and under TF_DEFER_AUTO the engine's
 * TF_ENGINE_CAP_DEFER_CHAINS (on a host-memory engine, for results of
 * TF_DEFER_HOST_MIN_BYTES or more).
 */
bool tf__lazy_defers(const tf_lazy *z, const tf_tensor *out);
/* Whether t's contents are a step of z's open batch, not yet run. */
bool tf__lazy_in_batch(const tf_lazy *z, const tf_tensor *t);
/*
 * z, which has no batch yet, takes the open batch that t is pending on as its
 * own, when that batch opened on this thread on z's engine: z's deferred ops
 * then join it, so that they read its results as steps of one program rather
 * than as memory it must write first. A derivative's session does this with
 * the batch its output's forward ops still wait in (autodiff.c). The batch
 * stays its own session's: z runs it at tf__lazy_end but never frees it, and
 * its stats count z's ops. Sessions belong to one thread, so the owner cannot
 * append to or end it meanwhile. Whether z took it.
 */
bool tf__lazy_share(tf_lazy *z, const tf_tensor *t);
/* Runs z's open batch and frees it (session end; a shared one is only run); its status. */
tf_status tf__lazy_end(tf_lazy *z);
/* Sets z's mode, running the open batch first when deferral turns off. */
tf_status tf__lazy_set_mode(tf_lazy *z, uint8_t mode);
/* What z's batches did (zeros before the first). */
void tf__lazy_stats(tf_lazy *z, tf_defer_stats *out);

/* t became the value of `owner`: if t is pending, its batch may ask z->wanted(owner). */
void tf__lazy_adopt_slow(tf_tensor *t, const void *owner);
static inline void tf__lazy_adopt(tf_tensor *t, const void *owner)
{
    if (atomic_load_explicit(&t->storage->pending, memory_order_acquire))
        tf__lazy_adopt_slow(t, owner);
}
/* `owner`, t's, is going away: its batch forgets it (under the engine lock). */
void tf__lazy_disown_slow(tf_tensor *t, const void *owner);
static inline void tf__lazy_disown(tf_tensor *t, const void *owner)
{
    if (t && atomic_load_explicit(&t->storage->pending, memory_order_acquire))
        tf__lazy_disown_slow(t, owner);
}

#endif /* TF_LAZY_INTERNAL_H */
