/*
 * defer.c - deferred elementwise chains: a session's back-to-back elementwise
 * ops run as one TF_PRIM_FUSED call.
 *
 * exp(x) * y + x issued eagerly makes three passes over memory, each writing
 * an array the next one reads back. Here a session's UNARY and BINARY ops of
 * one float dtype and shape are appended to the session's batch instead: the
 * result tensor is allocated at once (so running out of memory is still
 * reported by the op), but its contents stay pending, marked on its storage,
 * until something reads them. Then the whole batch runs as one program that
 * reads the batch's inputs once and writes only the results something still
 * holds (ABI 1.3 lets one FUSED call write several); results that were
 * released meanwhile are never written at all.
 *
 * What reads memory makes it current first: every engine call of the core
 * (engine.c's execute, upload, download; extension kernels), the host-side
 * readers of tensor.c, and tf_engine_synchronize. A write into memory an
 * open batch reads (tf_engine_execute into a constant's tensor) runs that
 * batch first, so the batch sees what the eager order would have shown it.
 * Only memory of the session's engine joins a batch; the application's own
 * host memory (tf_tensor_wrap_host), which it may change behind the
 * library's back, makes the op run at once.
 *
 * Threads. A session and its engine belong to one thread, but the values it
 * returns may be read anywhere, and reading a pending one runs its batch on
 * the engine. So while an engine has an open batch, every call the core
 * makes into it, and every change to a batch, happens under the engine's
 * defer_lock; an engine without open batches (the owner alone opens them)
 * costs one atomic load per call.
 *
 * A reduction (TF_PRIM_REDUCE) of one of a batch's results joins the batch
 * as its *tail*: its output is pending on the batch too, and it runs right
 * after the batch's call. So sum(exp(x) * y + x) whose intermediates are
 * released before anything reads them leaves them unwritten: the loss
 * issued, the batch still waits, and the sum's input is the one result that
 * must be written besides those still held. A tail whose output is released
 * before the batch runs is dropped and does not keep its input alive.
 *
 * Which results are written. A result is held when more than the batch
 * refers to its tensor, with one exception: when its only other holder is
 * the eager tensor it was recorded as, and that eager is referred to only by
 * tape nodes whose rules read its shape alone (tf_op_rule.unread: `+` and
 * `-` of their inputs, `reduce_sum` of its input; their results and `*`'s),
 * nothing can read it: it is dropped like a released one and its memory
 * marked unwritten (k_unwritten). So a training step's exp(x) * y, which the
 * tape holds only as the input of `+`, is not written. The eager is asked
 * only when the batch runs on its session's thread: there the counts it
 * reads can only fall while it reads them (an op of another thread reading
 * the value runs the batch first); another thread running the batch takes
 * every such result as held. The eager forgets its batch under the engine
 * lock when it dies (tf__lazy_disown).
 *
 * A result that only tape nodes hold, for rules that do read it (exp(x),
 * which exp's rule reads), is written when the batch runs on a read, a write
 * or a full batch; at a session's end (a derivative's included) it is not:
 * it stays pending in a residual batch that computes it when something first
 * reads it, and is dropped unrun when the tape lets go (defer_run.c). So the
 * training step sum(exp(x) * y + x) writes its gradient and its loss only.
 *
 * Where they are written. A result has memory of its own, allocated with its
 * tensor; but when the batch writes one result and no reduced output, and an
 * input is held by nothing but the batch (a parameter's old value and its
 * gradient in `p - lr * g`, once the application let go of both), the call
 * writes over that input's memory, which the result's storage takes over
 * (engines with TF_ENGINE_CAP_IN_PLACE; defer_run.c, donor_of, says when and
 * why no one else can see it).
 *
 * Scalar constants as immediates (engines of ABI 1.5 or later). An operand
 * whose memory a FILL made and nothing wrote since (the engine boundary
 * keeps its value on the storage: fill_n) is a constant the host knows: it
 * joins the batch as an immediate of the FUSED call, TF_FX_IMM | j, rather
 * than as one of its TF_FUSED_MAX_INPUTS inputs (learning rates, betas,
 * the 2 of x * 2). The engine rounds it to the dtype as the FILL did, so
 * the bits are those of the input. Its tensor is still kept and counted as
 * a reader: a write into it runs the batch first, and an engine that takes
 * the batch as one primitive per step reads it as memory.
 *
 * A derivative's session may take the open batch of the session whose graph
 * it differentiates (tf__lazy_share, autodiff.c): when that batch opened on
 * the same thread, the reverse rules append to it and read the forward's
 * results as steps. Both sessions are then one thread's, so appends never
 * race; the sharer runs the batch at its end and never frees it.
 *
 * A batch runs: when one of its results is read; when an op does not fit it
 * (another shape or dtype, more than TF_FUSED_MAX_INPUTS inputs or
 * TF_FUSED_MAX_IMMEDIATES immediates, more than TF_FUSED_MAX_STEPS steps,
 * 8 before ABI 1.5, or a ninth result still held when the next op comes);
 * at tf_engine_synchronize; at session end. If
 * the engine fails it, the error goes to whoever made it run, and its
 * results are marked lost (k_lost): reading them later is a
 * TF_ERR_BACKEND error, never stale memory.
 */
#include <string.h>

#include "defer_internal.h"

/* The most steps a batch of e takes (see DEFER_MAX_STEPS). */
static uint32_t max_steps(tf_engine *e)
{
    return tf__engine_immediates(e) ? DEFER_MAX_STEPS : TF_FUSED_MAX_OUTPUTS;
}

/* ---- building a batch ---- */

typedef enum plan_result {
    PLAN_OK,
    PLAN_FULL,
    PLAN_MARKED
} plan_result;

/* What plan() makes of a program's operands: b's inputs and immediates as they would be. */
typedef struct plan_ins {
    uint32_t n_in, n_imm;
    tf_tensor *in[TF_FUSED_MAX_INPUTS];
    double imm[TF_FUSED_MAX_IMMEDIATES];
    tf_tensor *imm_t[TF_FUSED_MAX_IMMEDIATES];
} plan_ins;


/*
 * Whether t is a scalar constant of b's dtype the host knows (a FILL made it:
 * tensor_internal.h, fill_n), every element t addresses holding it, which b
 * may read as an immediate (its engine is of ABI 1.5 or later); *value: it.
 */
static bool known_constant(const struct tf_batch *b, const tf_tensor *t, double *value)
{
    const tf_storage *s = t->storage;
    int64_t n = atomic_load_explicit(&((tf_storage *)s)->fill_n, memory_order_acquire);
    if (n == 0 || s->fill_dtype != t->dtype || !tf__engine_immediates(b->engine))
        return false;
    int64_t lo, hi;
    tf__view_extent(t->rank, t->shape, t->strides, t->offset, &lo, &hi);
    if (lo < 0 || hi >= n)
        return false;
    *value = s->fill_value;
    return true;
}

/* How many of b's results something other than b holds now: at most that many are
   written when b runs (a result only b holds stays so). */
static uint32_t live_results(const struct tf_batch *b)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < b->n_steps; k++)
        n += b->out[k] && tf__lazy_still_held(b->out[k]);
    return n;
}

/* The reference of immediate `value` (read from t) in pi, added if new; TF_FX_NONE when
   the immediates are full. */
static uint32_t immediate_ref(plan_ins *pi, double value, tf_tensor *t)
{
    for (uint32_t j = 0; j < pi->n_imm; j++)
        if (memcmp(&pi->imm[j], &value, sizeof value) == 0)
            return TF_FX_IMM | j;
    if (pi->n_imm == TF_FUSED_MAX_IMMEDIATES)
        return TF_FX_NONE;
    pi->imm[pi->n_imm] = value;
    pi->imm_t[pi->n_imm] = t;
    return TF_FX_IMM | pi->n_imm++;
}

/*
 * The references in b of a program's n inputs xs[] (to append n_steps
 * steps): results of b as their steps, scalar constants the host knows as
 * immediates (engines of ABI 1.5 or later; while there is room, and not when
 * the batch would then read no memory at all), other memory as inputs of b
 * (new ones appended to a copy of b's in *pi). PLAN_FULL: the program does
 * not fit b as it is, which must run first. PLAN_MARKED: an input is lost
 * or unwritten memory (*mark says which).
 */
static plan_result plan(const struct tf_batch *b, uint32_t n_steps, size_t n, tf_tensor *const *xs,
                        uint32_t *ref, plan_ins *pi, const struct tf_batch **mark)
{
    pi->n_in = b->n_in;
    pi->n_imm = b->n_imm;
    memcpy(pi->in, b->in, sizeof b->in);
    memcpy(pi->imm, b->imm, sizeof b->imm);
    memcpy(pi->imm_t, b->imm_t, sizeof b->imm_t);
    if (b->n_steps + n_steps > max_steps(b->engine) ||
        (b->n_steps && live_results(b) + 1 > TF_FUSED_MAX_OUTPUTS))
        return PLAN_FULL;
    double value[TF_FUSED_MAX_INPUTS];
    bool constant[TF_FUSED_MAX_INPUTS], reads_memory = b->n_in > 0;
    for (size_t i = 0; i < n; i++) {
        struct tf_batch *pb = atomic_load_explicit(&xs[i]->storage->pending, memory_order_acquire);
        constant[i] = !pb && known_constant(b, xs[i], &value[i]);
        reads_memory = reads_memory || !constant[i];
    }
    for (size_t i = 0; i < n; i++) {
        struct tf_batch *pb = atomic_load_explicit(&xs[i]->storage->pending, memory_order_acquire);
        if (tf__lazy_is_mark(pb)) {
            *mark = pb;
            return PLAN_MARKED;
        }
        if (pb == b) {
            ref[i] = tf__lazy_find_step(b, xs[i]);
            if (ref[i] == TF_FX_NONE) /* a view of a result, not the result itself */
                return PLAN_FULL;
            continue;
        }
        /* a program of constants only: the first is read from memory (FUSED has inputs) */
        if (constant[i] && (reads_memory || i > 0) &&
            (ref[i] = immediate_ref(pi, value[i], xs[i])) != TF_FX_NONE)
            continue;
        uint32_t j = 0;
        while (j < pi->n_in && !tf__same_view(pi->in[j], xs[i]))
            j++;
        if (j == pi->n_in) {
            if (j == TF_FUSED_MAX_INPUTS)
                return PLAN_FULL;
            pi->in[pi->n_in++] = xs[i];
        }
        ref[i] = TF_FX_IN | j;
    }
    return PLAN_OK;
}

bool tf__lazy_defers(const tf_lazy *z, const tf_tensor *out)
{
    if (z->mode == TF_DEFER_OFF || out->numel == 0 || !tf_dtype_is_float(out->dtype))
        return false;
    uint32_t caps = z->engine->caps;
    return z->mode == TF_DEFER_ALWAYS ||
           ((caps & TF_ENGINE_CAP_DEFER_CHAINS) &&
            (!(caps & TF_ENGINE_CAP_HOST_MEMORY) ||
             out->numel * tf_dtype_size(out->dtype) >= TF_DEFER_HOST_MIN_BYTES));
}

/* Whether a program of resolved steps over in[] into out may join a batch at
   all (before any lock is taken). */
static bool deferrable(const tf_lazy *z, const tf_fused_step *steps, uint32_t n_steps, uint32_t n,
                       tf_tensor *const *in, const tf_tensor *out)
{
    /* (session ops never run inside a batch's run: no t_running check) */
    if (!tf__lazy_defers(z, out) || !tf__engine_fuses(z->engine, out->dtype, 1, 1))
        return false;
    for (uint32_t i = 0; i < n; i++) {
        const tf_storage *st = in[i]->storage;
        if (st->kind != TF_STORAGE_ENGINE || st->engine != z->engine || in[i]->dtype != out->dtype)
            return false;
    }
    for (uint32_t k = 0; k < n_steps; k++) {
        bool unary = steps[k].kind == TF_FUSED_UNARY;
        if (!tf__engine_supports_uniform(z->engine, unary ? TF_PRIM_UNARY : TF_PRIM_BINARY,
                                         steps[k].op, unary ? 2 : 3, out->dtype))
            return false;
    }
    return true;
}

static bool same_shape(const struct tf_batch *b, const tf_tensor *t)
{
    return b->rank == t->rank && memcmp(b->shape, t->shape, t->rank * sizeof t->shape[0]) == 0;
}

/* Opens b for out's dtype and shape; the lock is held. */
static void open_batch(struct tf_batch *b, const tf_tensor *out)
{
    b->thread = pthread_self();
    b->dtype = out->dtype;
    b->rank = out->rank;
    memcpy(b->shape, out->shape, out->rank * sizeof out->shape[0]);
    tf__lazy_link_batch(b);
}

/*
 * Appends a program to b (it fits: plan said so), ref[] mapping its inputs;
 * the lock is held. Only its last step has a result of its own (out).
 */
/* t joins a batch's operands: retained, its storage counting the batch as a reader. */
static tf_tensor *reader(tf_tensor *t)
{
    tf_tensor_retain(t);
    atomic_fetch_add_explicit(&t->storage->readers, 1, memory_order_relaxed);
    return t;
}

static void append(struct tf_batch *b, const tf_fused_step *steps, uint32_t n_steps,
                   uint32_t n_prog_in, const uint32_t *ref, const plan_ins *pi, tf_tensor *out)
{
    if (!b->open)
        open_batch(b, out);
    for (uint32_t i = b->n_in; i < pi->n_in; i++)
        b->in[i] = reader(pi->in[i]);
    b->n_in = pi->n_in;
    for (uint32_t j = b->n_imm; j < pi->n_imm; j++) {
        b->imm[j] = pi->imm[j];
        b->imm_t[j] = reader(pi->imm_t[j]);
    }
    b->n_imm = pi->n_imm;
    uint32_t base = b->n_steps;
    for (uint32_t k = 0; k < n_steps; k++) {
        const tf_fused_step *st = &steps[k];
        uint32_t a = st->a < n_prog_in ? ref[st->a] : base + st->a - n_prog_in;
        uint32_t c = st->b < n_prog_in ? ref[st->b] : base + st->b - n_prog_in;
        bool unary = st->kind == TF_FUSED_UNARY;
        b->steps[base + k] = (tf_fused_step){st->kind, st->op, a, unary ? 0 : c};
        b->out[base + k] = NULL;
        b->owner[base + k] = NULL;
    }
    b->n_steps = base + n_steps;
    tf_tensor_retain(out);
    b->out[b->n_steps - 1] = out;
    b->stats.ops_deferred += n_steps;
    atomic_store_explicit(&out->storage->pending, b, memory_order_release);
}

/* Whether a REDUCE of `in` into `out` may become the tail of s's batch (before the lock). */
static bool tail_fits(const tf_lazy *z, const void *params, size_t n, tf_tensor *const *in,
                      tf_tensor *out)
{
    if (z->mode == TF_DEFER_OFF || n != 1 || out->numel == 0 || out->dtype != in[0]->dtype ||
        !tf__lazy_in_batch(z, in[0]))
        return false;
    /* every check the op would meet if it ran now, so that it cannot fail later for them */
    if (tf__prim_check(TF_PRIM_REDUCE, params, 1, in, 1, &out) != TF_OK)
        return false; /* run now: the same check fails again and says why */
    return tf__engine_supports_uniform(z->engine, TF_PRIM_REDUCE,
                                       ((const tf_reduce_params *)params)->op, 2, out->dtype);
}

/* An op that does not join a batch: run on the engine now. */
static tf_status exec_now(tf_lazy *z, tf_prim prim, const void *params, size_t n,
                          tf_tensor *const *in, tf_tensor *out)
{
    return tf_engine_execute(z->engine, prim, params, n, in, 1, &out);
}

/* A REDUCE of a batch result: the batch's tail if it fits, else run now. */
static tf_status defer_reduce(tf_lazy *z, const void *params, size_t n, tf_tensor *const *in,
                              tf_tensor *out)
{
    if (!tail_fits(z, params, n, in, out))
        return exec_now(z, TF_PRIM_REDUCE, params, n, in, out);
    struct tf_batch *b = z->batch;
    bool taken = tf__engine_lock_slow(z->engine);
    /* another thread may have run the batch meanwhile (a read) */
    bool joined = b->open && !b->tail_out &&
                  atomic_load_explicit(&in[0]->storage->pending, memory_order_acquire) == b &&
                  tf__lazy_find_step(b, in[0]) != TF_FX_NONE;
    if (joined) {
        memcpy(&b->tail, params, sizeof b->tail);
        tf_tensor_retain(in[0]);
        tf_tensor_retain(out);
        b->tail_in = in[0];
        b->tail_out = out;
        b->stats.ops_deferred++;
        atomic_store_explicit(&out->storage->pending, b, memory_order_release);
    }
    tf__engine_unlock(z->engine, taken);
    return joined ? TF_OK : exec_now(z, TF_PRIM_REDUCE, params, n, in, out);
}

/* A program that does not join a batch: run on the engine now. */
static tf_status program_now(tf_lazy *z, const tf_fused_step *steps, uint32_t n_steps, uint32_t n,
                             tf_tensor *const *in, tf_tensor *out)
{
    if (n_steps == 1) /* the primitive itself */
        return tf__lazy_run_step(z->engine, &steps[0], in, NULL, out);
    if (tf__engine_fuses(z->engine, out->dtype, n, 1)) {
        uint32_t last = n_steps - 1;
        tf_fused_params p = {sizeof p, n_steps, steps, 1, &last, 0, NULL, 0, 0};
        return tf__engine_execute_fused(z->engine, &p, n, in, 1, &out, -1);
    }
    tf_tensor *dst[TF_FUSED_MAX_STEPS] = {NULL};
    dst[n_steps - 1] = out;
    tf_status st = tf__lazy_run_steps(z->engine, steps, n_steps, n, in, NULL, out->dtype,
                                      out->rank, out->shape, dst);
    for (uint32_t k = 0; k + 1 < n_steps; k++)
        tf_tensor_release(dst[k]);
    return st;
}

/* z's batch, made on first use (NULL when out of memory: then nothing defers). */
static struct tf_batch *batch_of(tf_lazy *z)
{
    if (!z->batch && (z->batch = tf__calloc(1, sizeof *z->batch))) {
        z->batch->engine = z->engine;
        z->batch->wanted = z->wanted;
        z->batch->mode = z->mode;
        tf__pending_hooks_set(&tf__lazy_hooks); /* before anything is marked pending */
    }
    return z->batch;
}

tf_status tf__lazy_program(tf_lazy *z, const tf_fused_step *steps, uint32_t n_steps, uint32_t n,
                           tf_tensor *const *in, tf_tensor *out)
{
    if (n_steps == 0 || n_steps > max_steps(z->engine) || n > TF_FUSED_MAX_INPUTS ||
        !deferrable(z, steps, n_steps, n, in, out))
        return program_now(z, steps, n_steps, n, in, out);
    tf_status st;
    /* inputs another batch computes: that batch runs now (it takes the lock itself) */
    for (uint32_t i = 0; i < n; i++) {
        struct tf_batch *pb = atomic_load_explicit(&in[i]->storage->pending, memory_order_acquire);
        if (pb && pb != z->batch && (st = tf__ready(in[i])))
            return st;
    }
    struct tf_batch *b = batch_of(z);
    if (!b)
        return program_now(z, steps, n_steps, n, in, out);
    bool taken = tf__engine_lock_slow(z->engine);
    /* the batch runs first if the program does not fit it; its failure is the program's */
    st = TF_OK;
    if (b->open && (b->dtype != out->dtype || !same_shape(b, out)))
        st = tf__lazy_run_batch(b, false);
    uint32_t ref[TF_FUSED_MAX_INPUTS];
    plan_ins pi;
    const struct tf_batch *mark = NULL;
    plan_result pr = st ? PLAN_FULL : plan(b, n_steps, n, in, ref, &pi, &mark);
    if (!st && pr == PLAN_FULL && !(st = tf__lazy_run_batch(b, false)))
        pr = plan(b, n_steps, n, in, ref, &pi, &mark); /* an empty batch takes it */
    if (!st && pr == PLAN_OK)
        append(b, steps, n_steps, n, ref, &pi, out);
    tf__engine_unlock(z->engine, taken);
    if (st)
        return st;
    const char *what = n_steps > 1 ? "fused"
                                   : tf_prim_name(steps[0].kind == TF_FUSED_UNARY ? TF_PRIM_UNARY
                                                                                  : TF_PRIM_BINARY);
    return pr == PLAN_OK ? TF_OK : tf__lazy_mark_error(mark, what);
}

tf_status tf__lazy_exec(tf_lazy *z, tf_prim prim, const void *params, size_t n,
                        tf_tensor *const *in, tf_tensor *out)
{
    if (prim == TF_PRIM_REDUCE)
        return defer_reduce(z, params, n, in, out);
    /* the common case of small arrays (and deferral off) goes straight to the
       engine, without a program of one step to build and take apart */
    /* FUSED is f32/f64 only: an op with a complex operand (abs, real, imag and
       angle give a real result) never joins a batch */
    bool real_in = true;
    for (size_t i = 0; i < n && i < 2; i++)
        real_in = real_in && !tf_dtype_is_complex(in[i]->dtype);
    if ((prim != TF_PRIM_UNARY && prim != TF_PRIM_BINARY) || n < 1 || n > 2 || !real_in ||
        !tf__lazy_defers(z, out))
        return exec_now(z, prim, params, n, in, out);
    /* one elementwise op: a program of one step */
    bool unary = prim == TF_PRIM_UNARY;
    uint32_t op =
        unary ? ((const tf_unary_params *)params)->op : ((const tf_binary_params *)params)->op;
    tf_fused_step step = {unary ? TF_FUSED_UNARY : TF_FUSED_BINARY, op, 0, unary ? 0 : 1};
    return tf__lazy_program(z, &step, 1, (uint32_t)n, in, out);
}

bool tf__lazy_in_batch(const tf_lazy *z, const tf_tensor *t)
{
    const struct tf_batch *b = z->batch;
    return b && b->open && atomic_load_explicit(&t->storage->pending, memory_order_acquire) == b;
}

/* Whether pb is a batch rather than NULL or one of the marks. */
static bool real_batch(const struct tf_batch *pb)
{
    return pb && !tf__lazy_is_mark(pb);
}

/* If t is the result of a step of an open batch whose owner is `from`, makes
   it `to` (under the engine lock). */
static void swap_owner(tf_tensor *t, const void *from, const void *to)
{
    tf_storage *s = t->storage;
    if (!real_batch(atomic_load_explicit(&s->pending, memory_order_acquire)))
        return;
    bool taken = tf__engine_lock_slow(s->engine);
    struct tf_batch *b = atomic_load_explicit(&s->pending, memory_order_acquire);
    uint32_t k = real_batch(b) ? tf__lazy_find_step(b, t) : TF_FX_NONE;
    if (k != TF_FX_NONE && b->owner[k] == from)
        b->owner[k] = to;
    if (k != TF_FX_NONE && !to && b->residual) /* the tape let go of it */
        tf__lazy_residual_collect(b, t);
    tf__engine_unlock(s->engine, taken);
}

void tf__lazy_adopt_slow(tf_tensor *t, const void *owner)
{
    swap_owner(t, NULL, owner);
}

void tf__lazy_disown_slow(tf_tensor *t, const void *owner)
{
    swap_owner(t, owner, NULL);
}

bool tf__lazy_share(tf_lazy *z, const tf_tensor *t)
{
    const tf_storage *s = t->storage;
    if (z->batch || z->mode == TF_DEFER_OFF || s->kind != TF_STORAGE_ENGINE ||
        s->engine != z->engine ||
        !real_batch(atomic_load_explicit(&s->pending, memory_order_acquire)))
        return false;
    bool taken = tf__engine_lock_slow(z->engine);
    /* another thread may have run it meanwhile (a read); then it may be any batch's */
    struct tf_batch *b = atomic_load_explicit(&s->pending, memory_order_acquire);
    bool ok = real_batch(b) && b->open && !b->residual && b->engine == z->engine &&
              pthread_equal(b->thread, pthread_self());
    if (ok) {
        z->batch = b;
        z->shared = true;
        z->mode = b->mode; /* it defers as the session it joins */
    }
    tf__engine_unlock(z->engine, taken);
    return ok;
}

tf_status tf__lazy_end(tf_lazy *z)
{
    struct tf_batch *b = z->batch;
    if (!b)
        return TF_OK;
    bool taken = tf__engine_lock_slow(z->engine);
    tf_status st = tf__lazy_run_batch(b, true); /* what only the tape holds may wait */
    tf__engine_unlock(z->engine, taken);
    if (!z->shared)
        tf__free(b);
    z->batch = NULL;
    z->shared = false;
    return st;
}

tf_status tf__lazy_set_mode(tf_lazy *z, uint8_t mode)
{
    tf_status st = TF_OK;
    if (mode == TF_DEFER_OFF && z->batch) {
        bool taken = tf__engine_lock_slow(z->engine);
        st = tf__lazy_run_batch(z->batch, false);
        tf__engine_unlock(z->engine, taken);
    }
    z->mode = mode;
    if (z->batch && !z->shared)
        z->batch->mode = mode;
    return st;
}

void tf__lazy_stats(tf_lazy *z, tf_defer_stats *out)
{
    *out = (tf_defer_stats){0};
    if (z->batch) {
        bool taken = tf__engine_lock_slow(z->engine);
        *out = z->batch->stats;
        tf__engine_unlock(z->engine, taken);
    }
}
