/*
 * defer_run.c - running a deferred batch (defer.c builds them): which of its
 * results are written, the one FUSED call (with the tail's reduction as its
 * reduced output where the engine takes it, ABI 1.6; its one result over an
 * input only the batch holds where one is) or the steps one by one, the
 * marks left on memory, and the hooks through which every read of pending
 * memory runs its batch first. The rules are defer.c's header comment.
 */
#include <string.h>

#include "defer_internal.h"

/* The step of b whose result t is, or TF_FX_NONE. */
uint32_t tf__lazy_find_step(const struct tf_batch *b, const tf_tensor *t)
{
    for (uint32_t k = 0; k < b->n_steps; k++)
        if (b->out[k] && tf__same_view(b->out[k], t))
            return k;
    return TF_FX_NONE;
}

struct tf_batch tf__lazy_lost;      /* the mark of memory whose batch failed */
struct tf_batch tf__lazy_unwritten; /* the mark of a result left unwritten */

/* inside run_batch's engine calls: the batch's own operands need no flush */
static _Thread_local bool t_running;

/* ---- running a batch (engine lock held) ---- */

bool tf__lazy_still_held(const tf_tensor *t)
{
    return atomic_load_explicit(&((tf_tensor *)t)->refs, memory_order_acquire) > 1 ||
           atomic_load_explicit(&t->storage->refs, memory_order_acquire) > 1;
}

/* What may read step k's result (see "Which results are written"): a tf_lazy_want. */
static int step_held(const struct tf_batch *b, uint32_t k)
{
    const tf_tensor *t = b->out[k];
    if (!t) /* a program's inner step: only its own program reads it */
        return TF_LAZY_UNREAD;
    if (atomic_load_explicit(&t->storage->refs, memory_order_acquire) > 1)
        return TF_LAZY_READ;
    size_t refs = atomic_load_explicit(&((tf_tensor *)t)->refs, memory_order_acquire);
    if (refs != 2) /* 1: the batch alone; more: views, another eager, the tail */
        return refs > 1 ? TF_LAZY_READ : TF_LAZY_UNREAD;
    if (!b->owner[k] || !pthread_equal(b->thread, pthread_self()) || !b->wanted)
        return TF_LAZY_READ;
    return b->wanted(b->owner[k]);
}

/* ---- residual batches: results only the tape holds, left pending ---- */

/*
 * At a session's end (a derivative's included) a result that only the tape
 * holds, for rules that read it (exp(x) of a training step, which exp's rule
 * reads and nothing else will unless another derivative runs), is not
 * written: its steps and the inputs they read move to a residual batch of
 * their own, which belongs to no session and stays open on the engine. The
 * result is pending there, and is computed as any pending memory is, by the
 * first read (a later backward through that tape) or by the first write into
 * an input the residual reads (tf__ready_write); a residual is never run by
 * tf_engine_synchronize, which has nothing to wait for in it. When the last
 * owner of its results dies (the tape freed with the loss), it is dropped
 * without running (tf__lazy_disown_slow). It runs with its results written:
 * it never leaves another residual.
 */

void tf__lazy_link_batch(struct tf_batch *b)
{
    tf_engine *e = b->engine;
    b->open = true;
    b->prev = NULL;
    b->next = e->open_batches;
    if (e->open_batches)
        e->open_batches->prev = b;
    e->open_batches = b;
    atomic_fetch_add_explicit(&e->n_open, 1, memory_order_release);
}

/* Takes the open batch b off its engine's list. */
static void close_batch(struct tf_batch *b)
{
    tf_engine *e = b->engine;
    b->open = false;
    if (b->prev)
        b->prev->next = b->next;
    else
        e->open_batches = b->next;
    if (b->next)
        b->next->prev = b->prev;
    b->prev = b->next = NULL;
    atomic_fetch_sub_explicit(&e->n_open, 1, memory_order_release);
}

/* Releases b's inputs and immediates' tensors, which stop counting it as a reader. */
static void release_operands(struct tf_batch *b)
{
    for (uint32_t i = 0; i < b->n_in; i++) {
        atomic_fetch_sub_explicit(&b->in[i]->storage->readers, 1, memory_order_relaxed);
        tf_tensor_release(b->in[i]);
    }
    for (uint32_t j = 0; j < b->n_imm; j++) {
        atomic_fetch_sub_explicit(&b->imm_t[j]->storage->readers, 1, memory_order_relaxed);
        tf_tensor_release(b->imm_t[j]);
    }
}

/* Drops an unopened or emptied residual r: its operands released, then r itself. */
static void residual_free(struct tf_batch *r)
{
    release_operands(r);
    tf__free(r);
}

/*
 * The residual of b's results keep[] (those only the tape holds), built before b
 * runs: the steps they need, renumbered, and the inputs and immediates those read
 * (retained; their storages count it as a reader). step_of[k]: step k's number in
 * it. NULL when none is kept, when it would read no memory (FUSED has inputs), or
 * out of memory: the results are then written as any other.
 */
static struct tf_batch *residual_of(const struct tf_batch *b, const bool *keep, uint32_t *step_of)
{
    bool need[DEFER_MAX_STEPS] = {false}, any = false;
    for (uint32_t k = 0; k < b->n_steps; k++)
        any = (need[k] = keep[k]) || any;
    if (!any)
        return NULL;
    for (uint32_t k = b->n_steps; k-- > 0;) {
        const tf_fused_step *st = &b->steps[k];
        if (need[k] && !(st->a & (TF_FX_IN | TF_FX_IMM)))
            need[st->a] = true;
        if (need[k] && st->kind == TF_FUSED_BINARY && !(st->b & (TF_FX_IN | TF_FX_IMM)))
            need[st->b] = true;
    }
    struct tf_batch *r = tf__calloc(1, sizeof *r);
    if (!r)
        return NULL;
    uint32_t in_of[TF_FUSED_MAX_INPUTS], imm_of[TF_FUSED_MAX_IMMEDIATES];
    memset(in_of, 0xff, sizeof in_of); /* TF_FX_NONE */
    memset(imm_of, 0xff, sizeof imm_of);
    for (uint32_t k = 0; k < b->n_steps; k++) {
        if (!need[k])
            continue;
        tf_fused_step st = b->steps[k];
        uint32_t *ref[2] = {&st.a, &st.b};
        for (int o = 0; o < (st.kind == TF_FUSED_BINARY ? 2 : 1); o++) {
            uint32_t x = *ref[o], i = x & ~(TF_FX_IN | TF_FX_IMM);
            if (x & TF_FX_IN) {
                if (in_of[i] == TF_FX_NONE) {
                    r->in[r->n_in] = b->in[i];
                    in_of[i] = r->n_in++;
                }
                *ref[o] = TF_FX_IN | in_of[i];
            } else if (x & TF_FX_IMM) {
                if (imm_of[i] == TF_FX_NONE) {
                    r->imm[r->n_imm] = b->imm[i];
                    r->imm_t[r->n_imm] = b->imm_t[i];
                    imm_of[i] = r->n_imm++;
                }
                *ref[o] = TF_FX_IMM | imm_of[i];
            } else {
                *ref[o] = step_of[x];
            }
        }
        step_of[k] = r->n_steps;
        r->steps[r->n_steps++] = st;
    }
    if (r->n_in == 0) {
        tf__free(r);
        return NULL;
    }
    for (uint32_t i = 0; i < r->n_in; i++) {
        tf_tensor_retain(r->in[i]);
        atomic_fetch_add_explicit(&r->in[i]->storage->readers, 1, memory_order_relaxed);
    }
    for (uint32_t j = 0; j < r->n_imm; j++) {
        tf_tensor_retain(r->imm_t[j]);
        atomic_fetch_add_explicit(&r->imm_t[j]->storage->readers, 1, memory_order_relaxed);
    }
    r->engine = b->engine;
    r->residual = true;
    r->dtype = b->dtype;
    r->rank = b->rank;
    memcpy(r->shape, b->shape, sizeof r->shape);
    r->wanted = b->wanted;
    r->mode = b->mode;
    r->thread = b->thread;
    return r;
}

void tf__lazy_residual_collect(struct tf_batch *r, const tf_tensor *dying)
{
    for (uint32_t k = 0; k < r->n_steps; k++) {
        const tf_tensor *t = r->out[k];
        if (!t)
            continue;
        size_t refs = atomic_load_explicit(&((tf_tensor *)t)->refs, memory_order_acquire);
        if (r->owner[k] || atomic_load_explicit(&t->storage->refs, memory_order_acquire) > 1 ||
            refs > (size_t)(tf__same_view(t, dying) ? 2 : 1))
            return; /* something may still read it */
    }
    for (uint32_t k = 0; k < r->n_steps; k++) {
        if (r->out[k]) {
            atomic_store_explicit(&r->out[k]->storage->pending, &tf__lazy_unwritten,
                                  memory_order_release);
            tf_tensor_release(r->out[k]);
        }
    }
    close_batch(r);
    residual_free(r);
}

/* After b ran: its results keep[] move to the residual r (their references, their
   owners, their pending marks), which opens on the engine. */
static void residual_open(struct tf_batch *b, struct tf_batch *r, const bool *keep,
                          const uint32_t *step_of)
{
    for (uint32_t k = 0; k < b->n_steps; k++) {
        if (!keep[k])
            continue;
        uint32_t j = step_of[k];
        r->out[j] = b->out[k];
        r->owner[j] = b->owner[k];
        b->out[k] = NULL;
        b->owner[k] = NULL;
        atomic_store_explicit(&r->out[j]->storage->pending, r, memory_order_release);
    }
    tf__lazy_link_batch(r);
}


/* An engine that cannot take the program in one call: its steps one by one,
   into the results that are held and into scratch tensors for the others. */
static tf_status run_unfused(struct tf_batch *b, const tf_fused_step *steps, uint32_t n,
                             const bool *held)
{
    tf_tensor *dst[DEFER_MAX_STEPS];
    for (uint32_t k = 0; k < n; k++)
        dst[k] = held[k] ? b->out[k] : NULL;
    b->stats.engine_calls += n;
    tf_status st = tf__lazy_run_steps(b->engine, steps, n, b->n_in, b->in, b->imm_t, b->dtype,
                                      b->rank, b->shape, dst);
    for (uint32_t k = 0; k < n; k++)
        if (!held[k])
            tf_tensor_release(dst[k]);
    return st;
}

/* ---- the one result written over a dying input (lock held) ---- */

/*
 * Whether b's result `out` (its one output: the call has no reduced one) may
 * be computed into the memory of input `t`, which then becomes out's: the
 * rule of docs/runtime.md, "Writing in place". t's only counted references
 * are the batch's: its tensor's (refs 1), its storage's (refs 1: no view or
 * other tensor over it) and its storage's reader count (1: no other open
 * batch reads it, and t is not also one of b's immediates, whose tensors b
 * counts too); it is current (not pending, not a mark), the session engine's
 * own memory (not the application's wrapped host memory), of b's dtype and
 * shape, dense, and laid out as out is, in memory of out's size freed the
 * same way. And out's storage is referred to by out alone (a view of a
 * pending result holds it; no view then), so the memory exchanged is read
 * through out, the one tensor the batch knows.
 *
 * Why the counts cannot rise while they are read: a new reference to t, to
 * its storage or a new reader of it can only be made from an existing one
 * (tf_tensor_retain, a view, a batch appending t need t itself), and the
 * batch, run under the engine's defer_lock, is the only holder; nothing
 * uncounted reaches t either (borrowed pointers, tf_eager_value and
 * tf_tensor_data, are valid only while a counted holder lives). So once they
 * read 1 they stay 1 until the batch releases t, and t's memory is written
 * where only the batch could see it. out's storage count can rise meanwhile
 * (a thread holding out makes a view of it), but a view of pending memory
 * reads it only once its batch has run (flush_storage waits for the lock),
 * and so sees the exchanged memory, as out does.
 */
static bool may_donate(const struct tf_batch *b, const tf_tensor *t, const tf_tensor *out)
{
    tf_storage *s = t->storage, *os = out->storage;
    if (atomic_load_explicit(&((tf_tensor *)t)->refs, memory_order_acquire) != 1 ||
        atomic_load_explicit(&s->refs, memory_order_acquire) != 1 ||
        atomic_load_explicit(&s->readers, memory_order_acquire) != 1 ||
        atomic_load_explicit(&s->pending, memory_order_acquire) != NULL)
        return false;
    if (s->kind != TF_STORAGE_ENGINE || s->engine != b->engine ||
        s->free.engine != os->free.engine || s->nbytes != os->nbytes)
        return false;
    if (t->dtype != out->dtype || !tf__same_shape(t, out) || t->offset != out->offset ||
        !tf__strides_dense(t->rank, t->shape, t->strides))
        return false;
    for (uint32_t d = 0; d < t->rank; d++)
        if (t->strides[d] != out->strides[d])
            return false;
    return true;
}

/* The input of b whose memory may receive b's one result `out` (may_donate), or -1: never
   without TF_ENGINE_CAP_IN_PLACE and a FUSED of one output (ABI 1.2). */
static int donor_of(const struct tf_batch *b, const tf_tensor *out)
{
    tf_engine *e = b->engine;
    const tf_storage *os = out->storage;
    if (!tf__engine_in_place(e) || e->desc->abi_minor < 2 || os->kind != TF_STORAGE_ENGINE ||
        os->engine != e ||
        atomic_load_explicit(&((tf_storage *)os)->refs, memory_order_acquire) != 1 ||
        !tf__engine_fuses(e, b->dtype, b->n_in, 1))
        return -1;
    for (uint32_t j = 0; j < b->n_in; j++)
        if (may_donate(b, b->in[j], out))
            return (int)j;
    return -1;
}

/*
 * The FUSED call p of b's one result `out` into input j's memory
 * (donor_of), which then becomes out's: the two storages exchange their
 * memory, so out's holds the values and the input's, which dies with the
 * batch, the fresh memory out was given, never written. Neither tensor's
 * storage pointer changes, nor a storage's host_accessible: other threads
 * read those unlocked (a thread holding out checks a read's placement before
 * the read waits for this batch); host and buffer are read only once the
 * memory is current, which the batch's release of out's `pending` (or the
 * lock) orders after the exchange. On failure nothing changed but the
 * input's memory, which only the batch sees.
 */
static tf_status run_donated(struct tf_batch *b, const tf_fused_params *p, int j, tf_tensor *out)
{
    tf_tensor *donor = b->in[j];
    tf_status st = tf__engine_execute_fused(b->engine, p, b->n_in, b->in, 1, &donor, j);
    if (st)
        return st;
    tf_storage *ds = donor->storage, *os = out->storage;
    void *host = os->host;
    tf_engine_buffer *buffer = os->buffer;
    os->host = ds->host;
    os->buffer = ds->buffer;
    ds->host = host;
    ds->buffer = buffer;
    /* (nbytes are equal.) Nothing is known of either memory's contents: both fill_n
       are 0 already (the call forgot the input's as its output's; out's memory was
       never filled, a FILL into pending memory running the batch first), stored
       so that no constant of one memory is ever read as the other's */
    atomic_store_explicit(&os->fill_n, 0, memory_order_release);
    atomic_store_explicit(&ds->fill_n, 0, memory_order_release);
    return TF_OK;
}

/*
 * ABI 1.6: the step of b whose result b's tail reduces over every axis of
 * extent above 1, where b's engine may take the reduction as a FUSED call's
 * reduced output (TF_FX_NONE otherwise). The tail then stops holding that
 * result: only whoever else holds it makes it written.
 */
static uint32_t tail_to_fuse(struct tf_batch *b)
{
    if (!b->tail_in || b->tail_in->rank != b->rank)
        return TF_FX_NONE;
    for (uint32_t k = 0; k < b->rank; k++)
        if (b->shape[k] != 1 && !(b->tail.axes_mask >> k & 1))
            return TF_FX_NONE;
    uint32_t kt = tf__lazy_find_step(b, b->tail_in);
    if (kt == TF_FX_NONE)
        return kt;
    tf_tensor_release(b->tail_in); /* b->out[kt] is the same view, still retained */
    b->tail_in = NULL;
    return kt;
}

/* Which of b's results are written (held[]) and, keeping the tape's (keep_tape),
   which stay pending (keep[]); whether the tail is the call's reduced output. */
static bool decide(struct tf_batch *b, bool keep_tape, uint32_t kt, bool *held, bool *keep)
{
    uint32_t n_held = 0;
    for (uint32_t k = 0; k < b->n_steps; k++) {
        int w = step_held(b, k);
        keep[k] = keep_tape && w == TF_LAZY_TAPE;
        held[k] = w != TF_LAZY_UNREAD && !keep[k];
        n_held += held[k];
    }
    bool fuse_tail = kt != TF_FX_NONE && tf__engine_fuses_reduce(b->engine, b->dtype, b->n_in,
                                                                 n_held, (tf_reduce_op)b->tail.op);
    if (kt != TF_FX_NONE && !fuse_tail) /* the REDUCE call reads it */
        held[kt] = !(keep[kt] = false);
    return fuse_tail;
}

/* Computes what is still held of b's results (held[k]: step k's is) into
 *written of them, and, with kt a step (tail_to_fuse), the tail's reduction of it:
 *as the same FUSED call's reduced output where the engine takes that, else the
 *step's result is written and *tail_in set to it for a REDUCE call of its own.
 *keep_tape: results only the tape holds are not computed but left to *residual
 *(keep[k]: step k's; step_of, their steps there), where memory allows.
 *Called with the lock held. */
static tf_status compute(struct tf_batch *b, bool keep_tape, bool *held, bool *keep,
                         uint32_t *step_of, struct tf_batch **residual, uint32_t *written,
                         uint32_t kt, tf_tensor **tail_in)
{
    bool fuse_tail = decide(b, keep_tape, kt, held, keep);
    *residual = keep_tape ? residual_of(b, keep, step_of) : NULL;
    if (keep_tape && !*residual) /* nothing kept, or it cannot be: all as without */
        fuse_tail = decide(b, false, kt, held, keep);
    if (kt != TF_FX_NONE && !fuse_tail)
        *tail_in = b->out[kt];
    uint32_t n_kept = 0;
    for (uint32_t k = 0; k < b->n_steps; k++)
        n_kept += keep[k];
    uint32_t outs[DEFER_MAX_STEPS], n_out = 0, n = 0;
    tf_tensor *out_t[DEFER_MAX_STEPS + 1];
    for (uint32_t k = 0; k < b->n_steps; k++)
        if (held[k]) {
            outs[n_out] = k;
            out_t[n_out++] = b->out[k];
            n = k + 1;
        }
    b->stats.results_dropped += b->n_steps - n_out - n_kept;
    *written = n_out;
    if (n_out == 0 && !fuse_tail)
        return TF_OK; /* nothing anyone can read: nothing to compute */
    if (fuse_tail) {
        out_t[n_out] = b->tail_out;
        n = kt + 1 > n ? kt + 1 : n;
    }
    tf_fused_step steps[DEFER_MAX_STEPS];
    tf__lazy_resolve(b->steps, n, b->n_in, steps);
    if (!fuse_tail && n > 1 && !tf__engine_fuses(b->engine, b->dtype, b->n_in, n_out))
        return run_unfused(b, steps, n, held);
    b->stats.engine_calls++;
    /* one result and no reduced one: into an input only the batch holds, if one is */
    int donor = !fuse_tail && n_out == 1 ? donor_of(b, out_t[0]) : -1;
    if (!fuse_tail && n == 1 && donor < 0) /* one step: the primitive itself */
        return tf__lazy_run_step(b->engine, &steps[0], b->in, b->imm_t, out_t[0]);
    uint32_t reduce = fuse_tail ? b->tail.op + 1 : 0, reduce_step = fuse_tail ? kt : 0;
    tf_fused_params p = {sizeof p, n, steps, n_out, outs, b->n_imm, b->imm, reduce, reduce_step};
    if (donor >= 0)
        return run_donated(b, &p, donor, out_t[0]);
    return tf__engine_execute_fused(b->engine, &p, b->n_in, b->in, n_out + fuse_tail, out_t, -1);
}

tf_status tf__lazy_run_batch(struct tf_batch *b, bool keep_tape)
{
    if (!b->open)
        return TF_OK;
    b->stats.batches_run++;
    /* a tail nobody can read is dropped first, so that its input is not forced */
    if (b->tail_out && !tf__lazy_still_held(b->tail_out)) {
        tf_tensor_release(b->tail_in);
        b->tail_in = NULL;
        b->stats.results_dropped++;
    }
    uint32_t written = 0, kt = tail_to_fuse(b), step_of[DEFER_MAX_STEPS];
    bool held[DEFER_MAX_STEPS], keep[DEFER_MAX_STEPS];
    tf_tensor *tail_in = b->tail_in;
    struct tf_batch *residual = NULL;
    t_running = true;
    tf_status st = compute(b, keep_tape && !b->residual, held, keep, step_of, &residual, &written,
                           kt, &tail_in),
              tail_st = TF_OK;
    if (!st && tail_in) {
        b->stats.engine_calls++;
        tail_st =
            tf_engine_execute(b->engine, TF_PRIM_REDUCE, &b->tail, 1, &tail_in, 1, &b->tail_out);
        written += !tail_st;
    } else if (!st && kt != TF_FX_NONE) {
        written++; /* the FUSED call's reduced output */
    }
    t_running = false;
    if (!st)
        b->stats.results_written += written;
    if (residual && !st)
        residual_open(b, residual, keep, step_of); /* its results are no longer b's */
    else if (residual)
        residual_free(residual); /* they are lost with the others */
    struct tf_batch *mark = st ? &tf__lazy_lost : NULL;
    for (uint32_t k = 0; k < b->n_steps; k++) {
        if (!b->out[k])
            continue;
        /* not written, yet its eager lives on in the tape: never to be read */
        bool unwritten =
            !st && !held[k] && atomic_load_explicit(&b->out[k]->refs, memory_order_acquire) > 1;
        atomic_store_explicit(&b->out[k]->storage->pending, unwritten ? &tf__lazy_unwritten : mark,
                              memory_order_release);
        tf_tensor_release(b->out[k]);
        b->owner[k] = NULL;
    }
    if (b->tail_out) {
        atomic_store_explicit(&b->tail_out->storage->pending, st || tail_st ? &tf__lazy_lost : NULL,
                              memory_order_release);
        tf_tensor_release(b->tail_out);
        tf_tensor_release(b->tail_in);
        b->tail_out = b->tail_in = NULL;
    }
    release_operands(b);
    b->n_in = b->n_steps = b->n_imm = 0;
    close_batch(b);
    if (b->residual) /* no session's: done with */
        tf__free(b);
    return st ? st : tail_st;
}

/* Whether pb marks memory no batch will write (lost, unwritten) rather than naming a batch. */
bool tf__lazy_is_mark(const struct tf_batch *pb)
{
    return pb == &tf__lazy_lost || pb == &tf__lazy_unwritten;
}

/* The error of `op` reading memory under the mark pb. */
tf_status tf__lazy_mark_error(const struct tf_batch *pb, const char *op)
{
    if (pb == &tf__lazy_lost)
        return tf__error(TF_ERR_BACKEND, op, NULL,
                         "%s: the value was lost: the engine failed the deferred elementwise "
                         "ops that compute it (the error was reported to the call that ran "
                         "them)",
                         op);
    return tf__error(TF_ERR_RUNTIME_STATE, op, NULL,
                     "%s: internal error: a deferred result was left unwritten because only "
                     "derivative rules declared not to read it held it, and it was read",
                     op);
}

static tf_status flush_storage(tf_storage *storage)
{
    if (t_running)
        return TF_OK; /* a batch's own operands, inside its run */
    struct tf_batch *b = atomic_load_explicit(&storage->pending, memory_order_acquire);
    if (!b)
        return TF_OK;
    if (tf__lazy_is_mark(b))
        return tf__lazy_mark_error(b, "read");
    /* b may be run and reused by another thread until we hold its engine's
       lock; the storage (held by our caller) keeps that engine alive */
    tf_engine *e = storage->engine;
    bool taken = tf__engine_lock_slow(e);
    tf_status st = TF_OK;
    b = atomic_load_explicit(&storage->pending, memory_order_acquire);
    if (tf__lazy_is_mark(b))
        st = tf__lazy_mark_error(b, "read");
    else if (b)
        st = tf__lazy_run_batch(b, false);
    tf__engine_unlock(e, taken);
    return st;
}

/* Runs every open batch of e, the residuals too or not; the lock is held. Returns the
   first failure. (Running a batch frees no other: `next` stays valid.) */
static tf_status run_all(tf_engine *e, bool residuals)
{
    tf_status first = TF_OK;
    for (struct tf_batch *b = e->open_batches, *next; b; b = next) {
        next = b->next;
        if (!residuals && b->residual)
            continue;
        tf_status st = tf__lazy_run_batch(b, false);
        if (!first)
            first = st;
    }
    return first;
}

static tf_status run_engine(tf_engine *e, bool residuals)
{
    if (t_running || atomic_load_explicit(&e->n_open, memory_order_acquire) == 0)
        return TF_OK;
    bool taken = tf__engine_lock_slow(e);
    tf_status st = run_all(e, residuals);
    tf__engine_unlock(e, taken);
    return st;
}

/* tf_engine_synchronize: the work queued, which a residual is not (nothing waits
   for it: it runs when read) */
static tf_status flush_engine(tf_engine *e)
{
    return run_engine(e, false);
}

static tf_status before_write(const tf_tensor *t)
{
    tf_storage *s = t->storage;
    tf_status st = tf__ready(t);
    if (st || t_running || !atomic_load_explicit(&s->readers, memory_order_acquire))
        return st;
    /* only memory of the batch's own engine joins a batch */
    return s->kind == TF_STORAGE_ENGINE ? run_engine(s->engine, true) : TF_OK;
}

/* How the layers below make pending memory current (internal.h). */
const tf_pending_hooks tf__lazy_hooks = {flush_storage, before_write, flush_engine};
