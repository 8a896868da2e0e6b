/*
 * defer_internal.h - a deferred batch, shared by defer.c (building one) and
 * defer_run.c (running it). Everything here happens under the batch's
 * engine's defer_lock, except where a comment says otherwise.
 */
#ifndef TF_DEFER_INTERNAL_H
#define TF_DEFER_INTERNAL_H

#include "lazy_internal.h"

/*
 * The most steps of a batch: a program's on engines of ABI 1.5 or later, of
 * which at most TF_FUSED_MAX_OUTPUTS may be held (plan() counts them); on
 * older engines TF_FUSED_MAX_OUTPUTS, so that each step may become an output
 * of the one call.
 */
#define DEFER_MAX_STEPS TF_FUSED_MAX_STEPS

struct tf_batch {
    tf_engine *engine;
    struct tf_batch *prev, *next; /* the engine's open batches */
    bool open;                    /* has steps not yet run */
    uint8_t mode;                 /* its session's tf_defer_mode (a sharer's too) */
    bool residual;                /* no session's: results only the tape holds (defer_run.c) */
    tf_dtype dtype;
    uint32_t rank;
    int64_t shape[TF_MAX_RANK];
    uint32_t n_in, n_steps, n_imm;
    tf_tensor *in[TF_FUSED_MAX_INPUTS]; /* retained; their storages count us as readers */
    /* ABI 1.5: scalar constants read as immediates (TF_FX_IMM | j), and the
       tensors they were read from (retained; their storages count us as
       readers: a write into one runs the batch first, and an engine that
       takes no FUSED call for the batch reads them) */
    double imm[TF_FUSED_MAX_IMMEDIATES];
    tf_tensor *imm_t[TF_FUSED_MAX_IMMEDIATES];
    tf_fused_step steps[DEFER_MAX_STEPS]; /* a, b: TF_FX_IN | input, TF_FX_IMM | imm, a step */
    tf_tensor *out[DEFER_MAX_STEPS];      /* retained; their storages point at us */
    const void *owner[DEFER_MAX_STEPS];   /* what out[k] became (an eager tensor), or NULL */
    int (*wanted)(const void *owner);     /* whether anything may still read an owner's value */
    pthread_t thread;                     /* the session's (the batch opened there) */
    tf_tensor *tail_in;                   /* retained: the result the tail reduces, or NULL */
    tf_tensor *tail_out;                  /* retained; its storage points at us */
    tf_reduce_params tail;                /* the tail's REDUCE */
    tf_defer_stats stats;                 /* the session's (changed under the lock) */
};

/* The marks of memory no batch will write: its batch failed (lost), or it was left
   unwritten because nothing could read it (defer.c, "Which results are written"). */
extern struct tf_batch tf__lazy_lost, tf__lazy_unwritten;
bool tf__lazy_is_mark(const struct tf_batch *pb);
/* The error of `op` reading memory under the mark pb. */
tf_status tf__lazy_mark_error(const struct tf_batch *pb, const char *op);
/* Whether more than the batch refers to t (its tensor or its storage). */
bool tf__lazy_still_held(const tf_tensor *t);
/* The step of b whose result t is (the same view), or TF_FX_NONE. */
uint32_t tf__lazy_find_step(const struct tf_batch *b, const tf_tensor *t);
/* Opens b on its engine's list of open batches (n_open counts it). The lock is held. */
void tf__lazy_link_batch(struct tf_batch *b);
/*
 * Runs b and returns it to the empty state (frees it, a residual); its
 * status. The lock is held. keep_tape (a session's end): results only the
 * tape holds are not computed but move to a residual batch, pending there.
 */
tf_status tf__lazy_run_batch(struct tf_batch *b, bool keep_tape);
/* The owners of residual r's results are gone (`dying`, a result whose last
   holder is letting go, may still count one): if nothing else can read them, r is
   dropped without running. The lock is held. */
void tf__lazy_residual_collect(struct tf_batch *r, const tf_tensor *dying);
/* What reads and writes of pending memory call (tensor_internal.h). */
extern const tf_pending_hooks tf__lazy_hooks;

#endif /* TF_DEFER_INTERNAL_H */
