/*
 * defer_run.c - running a deferred batch (defer.c builds them): which of its
 * results are written, the one FUSED call (with the tail's reduction as its
 * reduced output where the engine takes it, ABI 1.6; its one result over an
 * input only the batch holds where one is) or the steps one by one, the
 * marks left on memory, and the hooks through which every read of pending
 * memory runs its batch first. The rules are defer.c's header comment.
 */
#include "defer_internal.h"

bool tf__lazy_same_view(const tf_tensor *a, const tf_tensor *b)
{
    if (a == b)
        return true;
    if (a->storage != b->storage || a->offset != b->offset || a->rank != b->rank)
        return false;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->strides[d] != b->strides[d])
            return false;
    return true;
}

/* The step of b whose result t is, or TF_FX_NONE. */
uint32_t tf__lazy_find_step(const struct tf_batch *b, const tf_tensor *t)
{
    for (uint32_t k = 0; k < b->n_steps; k++)
        if (b->out[k] && tf__lazy_same_view(b->out[k], t))
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

/* Whether step k's result must be written (see "Which results are written"). */
static bool step_held(const struct tf_batch *b, uint32_t k)
{
    const tf_tensor *t = b->out[k];
    if (!t) /* a program's inner step: only its own program reads it */
        return false;
    if (atomic_load_explicit(&t->storage->refs, memory_order_acquire) > 1)
        return true;
    size_t refs = atomic_load_explicit(&((tf_tensor *)t)->refs, memory_order_acquire);
    if (refs != 2) /* 1: the batch alone; more: views, another eager, the tail */
        return refs > 1;
    return !b->owner[k] || !pthread_equal(b->thread, pthread_self()) || !b->wanted ||
           b->wanted(b->owner[k]);
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

/* Computes what is still held of b's results (held[k]: step k's is) into
 *written of them, and, with kt a step (tail_to_fuse), the tail's reduction of it:
 *as the same FUSED call's reduced output where the engine takes that, else the
 *step's result is written and *tail_in set to it for a REDUCE call of its own.
 *Called with the lock held. */
static tf_status compute(struct tf_batch *b, bool *held, uint32_t *written, uint32_t kt,
                         tf_tensor **tail_in)
{
    uint32_t n_held = 0;
    for (uint32_t k = 0; k < b->n_steps; k++) {
        held[k] = step_held(b, k);
        n_held += held[k];
    }
    bool fuse_tail = kt != TF_FX_NONE && tf__engine_fuses_reduce(b->engine, b->dtype, b->n_in,
                                                                 n_held, (tf_reduce_op)b->tail.op);
    if (kt != TF_FX_NONE && !fuse_tail) { /* the REDUCE call reads it */
        held[kt] = true;
        *tail_in = b->out[kt];
    }
    uint32_t outs[DEFER_MAX_STEPS], n_out = 0, n = 0;
    tf_tensor *out_t[DEFER_MAX_STEPS + 1];
    for (uint32_t k = 0; k < b->n_steps; k++)
        if (held[k]) {
            outs[n_out] = k;
            out_t[n_out++] = b->out[k];
            n = k + 1;
        }
    b->stats.results_dropped += b->n_steps - n_out;
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

/* Runs b and returns it to the empty state; the lock is held. */
tf_status tf__lazy_run_batch(struct tf_batch *b)
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
    uint32_t written = 0, kt = tail_to_fuse(b);
    bool held[DEFER_MAX_STEPS];
    tf_tensor *tail_in = b->tail_in;
    t_running = true;
    tf_status st = compute(b, held, &written, kt, &tail_in), tail_st = TF_OK;
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
    for (uint32_t i = 0; i < b->n_in; i++) {
        atomic_fetch_sub_explicit(&b->in[i]->storage->readers, 1, memory_order_relaxed);
        tf_tensor_release(b->in[i]);
    }
    for (uint32_t j = 0; j < b->n_imm; j++) {
        atomic_fetch_sub_explicit(&b->imm_t[j]->storage->readers, 1, memory_order_relaxed);
        tf_tensor_release(b->imm_t[j]);
    }
    b->n_in = b->n_steps = b->n_imm = 0;
    b->open = false;
    tf_engine *e = b->engine;
    if (b->prev)
        b->prev->next = b->next;
    else
        e->open_batches = b->next;
    if (b->next)
        b->next->prev = b->prev;
    b->prev = b->next = NULL;
    atomic_fetch_sub_explicit(&e->n_open, 1, memory_order_release);
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
        st = tf__lazy_run_batch(b);
    tf__engine_unlock(e, taken);
    return st;
}

/* Runs every open batch of e; the lock is held. Returns the first failure. */
static tf_status run_all(tf_engine *e)
{
    tf_status first = TF_OK;
    while (e->open_batches) {
        tf_status st = tf__lazy_run_batch(e->open_batches);
        if (!first)
            first = st;
    }
    return first;
}

static tf_status flush_engine(tf_engine *e)
{
    if (t_running || atomic_load_explicit(&e->n_open, memory_order_acquire) == 0)
        return TF_OK;
    bool taken = tf__engine_lock_slow(e);
    tf_status st = run_all(e);
    tf__engine_unlock(e, taken);
    return st;
}

static tf_status before_write(const tf_tensor *t)
{
    tf_storage *s = t->storage;
    tf_status st = tf__ready(t);
    if (st || t_running || !atomic_load_explicit(&s->readers, memory_order_acquire))
        return st;
    /* only memory of the batch's own engine joins a batch */
    return s->kind == TF_STORAGE_ENGINE ? flush_engine(s->engine) : TF_OK;
}

/* How the layers below make pending memory current (internal.h). */
const tf_pending_hooks tf__lazy_hooks = {flush_storage, before_write, flush_engine};
