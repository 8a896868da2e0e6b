/*
 * engine.c - engine instances, engine tensors, transfers, and the checked
 * path from tf_engine_execute across the plugin boundary.
 *
 * The core computes nothing here: it validates, builds the size-prefixed
 * operand structs of engine_abi.h, and calls the plugin.
 */
#include <stdio.h>
#include <string.h>

#include "engine_internal.h"

/* The most operands one tf_engine_execute call may pass. */
#define MAX_OPERANDS 64

/* ---- the engine lock ---- */

static _Thread_local tf_engine *t_locked; /* the engine whose lock this thread holds */

bool tf__engine_lock_slow(tf_engine *e)
{
    if (t_locked == e)
        return false;
    pthread_mutex_lock(&e->defer_lock);
    t_locked = e;
    return true;
}

void tf__engine_unlock_slow(tf_engine *e)
{
    t_locked = NULL;
    pthread_mutex_unlock(&e->defer_lock);
}

/* ---- lifecycle ---- */

void tf__engine_retain(tf_engine *e)
{
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
}

void tf__engine_release(tf_engine *e)
{
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) != 1)
        return;
    e->desc->destroy(e->state);
    pthread_mutex_destroy(&e->defer_lock);
    tf__free(e);
}

TF_API tf_status tf_engine_create(tf_plugin *plugin, const tf_engine_options *options,
                                  tf_engine **out)
{
    if (!plugin || !out)
        return tf__error(TF_ERR_VALIDATION, "engine_create", plugin ? "out" : "plugin",
                         "engine_create: NULL argument");
    tf_engine_options opts = {0};
    if (options) {
        size_t n = options->struct_size < sizeof opts ? options->struct_size : sizeof opts;
        memcpy(&opts, options, n);
    }
    opts.struct_size = sizeof opts;
    tf_engine *e = tf__calloc(1, sizeof *e);
    if (!e)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "engine_create", NULL, "out of memory");
    if (pthread_mutex_init(&e->defer_lock, NULL) != 0) {
        tf__free(e);
        return tf__error(TF_ERR_OUT_OF_MEMORY, "engine_create", NULL, "cannot create a lock");
    }
    tf__plugin_report_clear();
    tf_status st = plugin->desc->create(plugin->ctx, &opts, &e->state);
    if (st != TF_OK) {
        pthread_mutex_destroy(&e->defer_lock);
        tf__free(e);
        return tf__error_from_plugin(st, "engine_create", "engine '%s': create failed (%s)",
                                     plugin->desc->name, tf_status_name(st));
    }
    atomic_init(&e->refs, 1);
    e->plugin = plugin;
    e->desc = plugin->desc;
    e->caps = plugin->desc->capabilities;
    if (plugin->desc->abi_minor < 3) /* a bit that older minors did not define means nothing */
        e->caps &= ~TF_ENGINE_CAP_DEFER_CHAINS;
    *out = e;
    return TF_OK;
}

TF_API tf_status tf_engine_open(const char *name_or_path, int threads, tf_engine **out)
{
    tf_plugin *p;
    tf_status st = tf_plugin_load(name_or_path, &p);
    if (st)
        return st;
    tf_engine_options opts = {.struct_size = sizeof opts, .threads = threads};
    return tf_engine_create(p, &opts, out);
}

TF_API void tf_engine_destroy(tf_engine *e)
{
    if (e)
        tf__engine_release(e);
}

TF_API const char *tf_engine_name(const tf_engine *e)
{
    return e->desc->name;
}
TF_API tf_plugin *tf_engine_get_plugin(const tf_engine *e)
{
    return e->plugin;
}

TF_API int tf_engine_uses_host_memory(const tf_engine *e)
{
    return (e->caps & TF_ENGINE_CAP_HOST_MEMORY) != 0;
}

TF_API int tf_engine_supports(tf_engine *e, tf_prim prim, uint32_t op, const tf_dtype *dtypes,
                              size_t n_dtypes)
{
    uint32_t d[MAX_OPERANDS];
    if (!e || n_dtypes > sizeof d / sizeof d[0] || (n_dtypes && !dtypes))
        return 0;
    /* An engine of a newer minor may rightly claim work this host does not
       know, and never gets it: the answer is what execute would do. (One of
       this or an older minor that claims it is wrong, and the conformance
       kit, which asks through here, must see its answer to say so.) */
    bool newer = e->desc->abi_minor > TF_ENGINE_ABI_MINOR;
    if (newer && !tf__prim_known(prim, op))
        return 0;
    for (size_t i = 0; i < n_dtypes; i++) {
        if (newer && (uint32_t)dtypes[i] >= TF_DTYPE_COUNT)
            return 0;
        d[i] = (uint32_t)dtypes[i];
    }
    if (tf__engine_question_unknown(e, prim, op, d, n_dtypes))
        return 0;
    /* a batch may be running on another thread: the plugin is asked under
       the lock that serialises its calls, as execute does */
    bool taken = tf__engine_lock(e);
    int yes = e->desc->supports(e->state, (uint32_t)prim, op, d, (uint32_t)n_dtypes) != 0;
    tf__engine_unlock(e, taken);
    return yes;
}

TF_API tf_status tf_engine_synchronize(tf_engine *e)
{
    if (!e)
        return tf__error(TF_ERR_VALIDATION, "engine_synchronize", "engine", "engine is NULL");
    tf_status st = TF_OK; /* queued work includes open batches */
    if (atomic_load_explicit(&e->n_open, memory_order_acquire))
        st = tf__pending_hooks()->flush_engine(e);
    if (st)
        return st;
    bool taken = tf__engine_lock(e);
    tf__plugin_report_clear();
    st = e->desc->synchronize(e->state);
    tf__engine_unlock(e, taken);
    if (st)
        return tf__error_from_plugin(st, "engine_synchronize", "engine '%s': synchronize failed",
                                     e->desc->name);
    return TF_OK;
}

/* ---- engine tensors ---- */

/* How an engine storage's memory goes back (tf_storage.free.engine). */
static void free_engine_memory(tf_storage *s)
{
    s->engine->desc->buffer_free(s->engine->state, s->buffer);
    tf__engine_release(s->engine);
}

static tf_status new_engine_tensor(const char *op, tf_engine *e, tf_dtype dtype, size_t rank,
                                   const int64_t *shape, tf_tensor **out)
{
    size_t numel, nbytes;
    tf_status st = tf__shape_check(op, dtype, rank, shape, &numel, &nbytes);
    if (st)
        return st;
    /* every buffer holds at least one element (engine_abi.h) */
    size_t alloc = nbytes ? nbytes : tf_dtype_size(dtype);
    tf_tensor *t = tf__tensor_block_new(dtype, rank, shape, numel);
    if (!t)
        return tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "%s: out of memory", op);
    tf_storage *s = t->storage;
    tf__plugin_report_clear();
    st = e->desc->buffer_alloc(e->state, alloc, &s->buffer, &s->host);
    if (st != TF_OK) {
        tf__tensor_block_discard(t);
        return tf__error_from_plugin(st, op, "engine '%s': allocating %zu bytes failed",
                                     e->desc->name, alloc);
    }
    if (!(e->caps & TF_ENGINE_CAP_HOST_MEMORY))
        s->host = NULL;
    s->host_accessible = s->host != NULL;
    s->nbytes = alloc;
    s->engine = e;
    s->free.engine = free_engine_memory;
    tf__engine_retain(e);
    *out = t;
    return TF_OK;
}

TF_API tf_status tf_tensor_empty(tf_engine *e, tf_dtype dtype, size_t rank, const int64_t *shape,
                                 tf_tensor **out)
{
    if (!e || !out)
        return tf__error(TF_ERR_VALIDATION, "tensor_empty", e ? "out" : "engine",
                         "tensor_empty: NULL argument");
    return new_engine_tensor("tensor_empty", e, dtype, rank, shape, out);
}

static bool same_engine_memory(const tf_engine *e, const tf_tensor *t)
{
    return t->storage->kind == TF_STORAGE_ENGINE && t->storage->engine == e;
}

TF_API tf_status tf_engine_upload(tf_engine *e, const tf_tensor *src, tf_tensor **out)
{
    const char *op = "engine_upload";
    if (!e || !src || !out)
        return tf__error(TF_ERR_VALIDATION, op,
                         !e     ? "engine"
                         : !src ? "src"
                                : "out",
                         "%s: NULL argument", op);
    if (!src->storage->host_accessible) /* host itself only once current */
        return tf__error(TF_ERR_PLACEMENT, op, "src",
                         "%s: the source is in the device memory of engine '%s'; download it "
                         "to the host first (tf_engine_download)",
                         op, tf_engine_name(src->storage->engine));
    tf_status st = tf__ready(src);
    if (st)
        return st;
    tf_tensor *t;
    if ((st = new_engine_tensor(op, e, src->dtype, src->rank, src->shape, &t)))
        return st;
    size_t esize = tf_dtype_size(src->dtype), nbytes = src->numel * esize;
    const void *bytes = NULL;
    void *tmp = NULL;
    if (nbytes == 0) {
        /* nothing to read: an empty view's offset may be anything (no element
           checks it), so no address is formed from it (tests/fuzz/fuzz_shapes) */
    } else if (tf__strides_dense(src->rank, src->shape, src->strides)) {
        bytes = (const char *)src->storage->host + src->offset * (int64_t)esize;
    } else {
        tmp = tf__alloc(nbytes);
        if (!tmp) {
            tf_tensor_release(t);
            return tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "%s: out of memory", op);
        }
        tf_tensor_copy_to_host(src, src->dtype, tmp, src->numel);
        bytes = tmp;
    }
    if (nbytes) {
        bool taken = tf__engine_lock(e);
        tf__plugin_report_clear();
        st = e->desc->upload(e->state, t->storage->buffer, 0, bytes, nbytes);
        tf__engine_unlock(e, taken);
    }
    tf__free(tmp);
    if (st) {
        tf_tensor_release(t);
        return tf__error_from_plugin(st, op, "engine '%s': upload of %zu bytes failed",
                                     e->desc->name, nbytes);
    }
    *out = t;
    return TF_OK;
}

/* A dense copy of a strided engine tensor, made by the engine itself. */
static tf_status densify(tf_engine *e, const tf_tensor *src, tf_tensor **out)
{
    tf_tensor *t;
    tf_status st = new_engine_tensor("engine_download", e, src->dtype, src->rank, src->shape, &t);
    if (st)
        return st;
    tf_tensor *in = (tf_tensor *)src;
    st = tf_engine_execute(e, TF_PRIM_COPY, NULL, 1, &in, 1, &t);
    if (st) {
        tf_tensor_release(t);
        return st;
    }
    *out = t;
    return TF_OK;
}

TF_API tf_status tf_engine_download(tf_engine *e, const tf_tensor *src, tf_tensor **out)
{
    const char *op = "engine_download";
    if (!e || !src || !out)
        return tf__error(TF_ERR_VALIDATION, op,
                         !e     ? "engine"
                         : !src ? "src"
                                : "out",
                         "%s: NULL argument", op);
    if (!same_engine_memory(e, src))
        return tf__error(
            TF_ERR_PLACEMENT, op, "src",
            "%s: the tensor is not in the memory of engine '%s' (it is in %s)", op, e->desc->name,
            src->storage->kind == TF_STORAGE_ENGINE ? "another engine's memory"
                                                    : "host memory already; use it directly");
    const tf_tensor *dense = src;
    tf_tensor *tmp = NULL;
    tf_status st = tf__ready(src);
    if (st)
        return st;
    if (!tf__strides_dense(src->rank, src->shape, src->strides)) {
        if ((st = densify(e, src, &tmp)))
            return st;
        dense = tmp;
    }
    size_t esize = tf_dtype_size(src->dtype), nbytes = src->numel * esize;
    void *host = tf__alloc(nbytes ? nbytes : 1);
    if (!host) {
        tf_tensor_release(tmp);
        return tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "%s: out of memory", op);
    }
    st = TF_OK;
    if (nbytes) {
        bool taken = tf__engine_lock(e);
        tf__plugin_report_clear();
        st = e->desc->download(e->state, dense->storage->buffer, (size_t)dense->offset * esize,
                               host, nbytes);
        tf__engine_unlock(e, taken);
    }
    tf_tensor_release(tmp);
    if (st) {
        tf__free(host);
        return tf__error_from_plugin(st, op, "engine '%s': download of %zu bytes failed",
                                     e->desc->name, nbytes);
    }
    st = tf_tensor_from_host(src->dtype, src->rank, src->shape, host, src->numel, out);
    tf__free(host);
    return st;
}

/* ---- execute ---- */

static tf_status placement_error(const tf_engine *e, const char *kind, size_t index,
                                 const tf_storage *s)
{
    char arg[32];
    snprintf(arg, sizeof arg, "%s[%zu]", kind, index);
    if (s->host)
        return tf__error(TF_ERR_PLACEMENT, "engine_execute", kind,
                         "%s is in host memory, which engine '%s' cannot read: upload it "
                         "with tf_engine_upload",
                         arg, e->desc->name);
    return tf__error(TF_ERR_PLACEMENT, "engine_execute", kind,
                     "%s is in the device memory of engine '%s', not of engine '%s': download "
                     "it with tf_engine_download, then upload it with tf_engine_upload",
                     arg, s->engine->desc->name, e->desc->name);
}

/* Fills the operand for tensor `t`, argument kind[index]. */
static inline tf_status make_operand(tf_engine *e, const char *kind, size_t index,
                                     const tf_tensor *t, tf_operand *o)
{
    const tf_storage *s = t->storage;
    bool host_engine = (e->caps & TF_ENGINE_CAP_HOST_MEMORY) != 0;
    /* one store of every field (reserved0 zero) rather than a memset and then each field */
    *o = (tf_operand){.struct_size = sizeof *o,
                      .dtype = (uint32_t)t->dtype,
                      .rank = t->rank,
                      .shape = t->shape,
                      .strides = t->strides,
                      .offset = t->offset};
    if (s->kind == TF_STORAGE_ENGINE && s->engine == e) {
        o->buffer = s->buffer;
        o->data = host_engine ? s->host : NULL;
        return TF_OK;
    }
    if (host_engine && s->host) {
        o->data = s->host;
        return TF_OK;
    }
    return placement_error(e, kind, index, s);
}

/*
 * Outputs dense (unless the primitive takes strided ones) and sharing no
 * memory with another operand; `alias` >= 0 allows exactly one exception,
 * out[0] being the very view in[alias] (TF_ENGINE_CAP_IN_PLACE).
 */
static tf_status check_outputs(tf_prim prim, size_t n_in, tf_tensor *const *in, size_t n_out,
                               tf_tensor *const *out, int alias)
{
    for (size_t i = 0; i < n_out; i++) {
        const tf_tensor *t = out[i];
        if (!tf__prim_strided_output(prim) && !tf__strides_dense(t->rank, t->shape, t->strides))
            return tf__error(TF_ERR_VALIDATION, "engine_execute", "outputs",
                             "%s: outputs[%zu] must be dense column-major", tf_prim_name(prim), i);
        for (size_t j = 0; j < n_in; j++)
            if (in[j]->storage == t->storage &&
                !(i == 0 && (int)j == alias && tf__same_view(t, in[j])))
                return tf__error(TF_ERR_VALIDATION, "engine_execute", "outputs",
                                 "%s: outputs[%zu] shares memory with inputs[%zu]",
                                 tf_prim_name(prim), i, j);
        for (size_t j = 0; j < i; j++)
            if (out[j]->storage == t->storage)
                return tf__error(TF_ERR_VALIDATION, "engine_execute", "outputs",
                                 "%s: outputs[%zu] shares memory with outputs[%zu]",
                                 tf_prim_name(prim), i, j);
    }
    return TF_OK;
}

/*
 * The memo key of a supports() question about these operands, or 0 when it
 * does not fit one: 8 bits of primitive, 8 of sub-operation, 3 of operand
 * count and 4 per dtype for up to 6 operands (45 bits in all, never 0 since
 * n >= 1). Built straight from the tensors: eager ops ask on every call.
 */
static inline uint64_t key_head(tf_prim prim, uint32_t op, size_t n)
{
    if ((uint32_t)prim > 0xff || op > 0xff || n == 0 || n > 6)
        return 0;
    return (uint64_t)prim | (uint64_t)op << 8 | (uint64_t)n << 16;
}

/* key with operand i's dtype added; 0 stays 0, and a dtype that does not fit gives 0 */
static inline uint64_t key_dtype(uint64_t key, size_t i, uint32_t dt)
{
    return key && dt <= 0xf ? key | (uint64_t)dt << (19 + 4 * i) : 0;
}

/*
 * The memo key of a FUSED question. Its operands all have one dtype and op is
 * the output count less one, so the input count and that dtype complete the
 * key, which then holds up to 5 inputs and 8 outputs (more operands than
 * key_head takes one by one).
 */
static inline uint64_t fused_key(uint32_t op, size_t n_in, tf_dtype dt)
{
    /* 1.6: a reduced-output question TF_FUSED_REDUCE_QUERY(r, m) as 0x80 | r << 3 | m, in
       the byte key_head takes, apart from the m - 1 of the others */
    if (op >= TF_FUSED_REDUCE_QUERY(0, 0))
        op = 0x80u | TF_FUSED_QUERY_REDUCE_OP(op) << 3 | (TF_FUSED_QUERY_OUTPUTS(op) & 0x7u);
    return key_dtype(key_head(TF_PRIM_FUSED, op, n_in), 0, (uint32_t)dt);
}

/* (after tf__prim_check, which for FUSED made every operand's dtype out[0]'s) */
static uint64_t supports_key(tf_prim prim, uint32_t op, size_t n_in, tf_tensor *const *in,
                             size_t n_out, tf_tensor *const *out)
{
    if (prim == TF_PRIM_FUSED)
        return fused_key(op, n_in, out[0]->dtype);
    size_t n = n_in + n_out;
    uint64_t key = key_head(prim, op, n);
    for (size_t i = 0; i < n && key; i++)
        key = key_dtype(key, i, (uint32_t)(i < n_in ? in[i] : out[i - n_in])->dtype);
    return key;
}

/* The memo slot of a key (engine.c's supports() memo, see internal.h). */
static _Atomic uint64_t *memo_slot(tf_engine *e, uint64_t key)
{
    return &e->supports_memo[tf__hash_word(TF_HASH_SEED, key) & (TF_SUPPORTS_MEMO - 1)];
}

/* The engine's answer for dtypes dt[0..n), through the memo when key is not 0. */
static bool ask_supports(tf_engine *e, uint64_t key, tf_prim prim, uint32_t op, const uint32_t *dt,
                         size_t n)
{
    uint64_t seen = key ? atomic_load_explicit(memo_slot(e, key), memory_order_relaxed) : 0;
    if (key && seen >> 2 == key)
        return (seen & 1) != 0;
    bool yes = false;
    if (!tf__engine_question_unknown(e, prim, op, dt, n)) {
        bool taken = tf__engine_lock(e); /* a no-op when this thread holds it */
        yes = e->desc->supports(e->state, (uint32_t)prim, op, dt, (uint32_t)n) != 0;
        tf__engine_unlock(e, taken);
    }
    if (key)
        atomic_store_explicit(memo_slot(e, key), key << 2 | 2 | (uint64_t)yes,
                              memory_order_relaxed);
    return yes;
}

/* The memo key of a question about n operands all of dtype dt (see supports_key). */
static uint64_t uniform_key(tf_prim prim, uint32_t op, size_t n, tf_dtype dt)
{
    uint64_t key = key_head(prim, op, n);
    for (size_t i = 0; i < n && key; i++)
        key = key_dtype(key, i, (uint32_t)dt);
    return key;
}

/* The engine's answer about n (<= MAX_OPERANDS) operands all of dtype dt, through the memo. */
static bool ask_uniform(tf_engine *e, uint64_t key, tf_prim prim, uint32_t op, size_t n,
                        tf_dtype dt)
{
    uint32_t d[MAX_OPERANDS];
    for (size_t i = 0; i < n; i++)
        d[i] = (uint32_t)dt;
    return ask_supports(e, key, prim, op, d, n);
}

/* Each step of a FUSED program, asked as the UNARY/BINARY call it stands for. */
static tf_status check_fused_steps(tf_engine *e, const tf_fused_params *p, tf_dtype dt)
{
    for (uint32_t k = 0; k < p->n_steps; k++) {
        const tf_fused_step *st = &p->steps[k];
        tf_prim prim = st->kind == TF_FUSED_UNARY ? TF_PRIM_UNARY : TF_PRIM_BINARY;
        size_t n = prim == TF_PRIM_UNARY ? 2 : 3;
        if (!ask_uniform(e, uniform_key(prim, st->op, n, dt), prim, st->op, n, dt))
            return tf__error(TF_ERR_UNSUPPORTED, "engine_execute", NULL,
                             "engine '%s' does not support FUSED step %u (%s %s) for %s",
                             e->desc->name, k, tf_prim_name(prim), tf_prim_op_name(prim, st->op),
                             tf_dtype_name(dt));
    }
    return TF_OK;
}

/* supports(), asked of the engine once per distinct question. */
static tf_status check_supported(tf_engine *e, tf_prim prim, uint32_t op, size_t n_in,
                                 tf_tensor *const *in, size_t n_out, tf_tensor *const *out)
{
    uint64_t key = supports_key(prim, op, n_in, in, n_out, out);
    uint64_t seen = key ? atomic_load_explicit(memo_slot(e, key), memory_order_relaxed) : 0;
    if (key && seen >> 2 == key && (seen & 1))
        return TF_OK;          /* the common case: asked and answered yes before */
    uint32_t dt[MAX_OPERANDS]; /* n_in + n_out <= MAX_OPERANDS, checked by the caller */
    size_t n = 0;
    for (size_t i = 0; i < n_in; i++)
        dt[n++] = (uint32_t)in[i]->dtype;
    for (size_t i = 0; i < n_out; i++)
        dt[n++] = (uint32_t)out[i]->dtype;
    if (ask_supports(e, key, prim, op, dt, n))
        return TF_OK;
    char types[128] = "";
    size_t used = 0;
    for (size_t i = 0; i < n && used < sizeof types; i++)
        used += (size_t)snprintf(types + used, sizeof types - used, "%s%s",
                                 i == 0 ? "" : (i == n_in ? " -> " : ", "),
                                 tf_dtype_name((tf_dtype)dt[i]));
    const char *opname = tf_prim_op_name(prim, op);
    return tf__error(TF_ERR_UNSUPPORTED, "engine_execute", NULL,
                     "engine '%s' does not support %s%s%s for %s%s", e->desc->name,
                     tf_prim_name(prim), opname[0] ? " " : "", opname, types,
                     tf__engine_unknown_why(e, prim, op, dt, n));
}

/* The part of execute after the checks of the operands, which runs under the
   engine's defer lock when it has open batches. */
static TF_ALWAYS_INLINE tf_status call_engine(tf_engine *e, tf_prim prim, const void *params,
                                              size_t n_inputs, tf_tensor *const *inputs,
                                              size_t n_outputs, tf_tensor *const *outputs)
{
    tf_status st;
    uint32_t op = tf__prim_op(prim, params);
    if ((st = check_supported(e, prim, op, n_inputs, inputs, n_outputs, outputs)))
        return st;
    tf_fused_params old_fused;
    if (prim == TF_PRIM_FUSED && ((st = check_fused_steps(e, params, outputs[0]->dtype)) ||
                                  (st = tf__engine_fused_for(e, params, &old_fused, &params))))
        return st;
    tf_operand ops[MAX_OPERANDS];
    const tf_operand *in_ptrs[MAX_OPERANDS], *out_ptrs[MAX_OPERANDS];
    for (size_t i = 0; i < n_inputs; i++) {
        if ((st = make_operand(e, "inputs", i, inputs[i], &ops[i])))
            return st;
        in_ptrs[i] = &ops[i];
    }
    for (size_t i = 0; i < n_outputs; i++) {
        if ((st = make_operand(e, "outputs", i, outputs[i], &ops[n_inputs + i])))
            return st;
        out_ptrs[i] = &ops[n_inputs + i];
    }
    tf_exec x = {
        .struct_size = sizeof x,
        .prim = (uint32_t)prim,
        .params = params,
        .n_inputs = (uint32_t)n_inputs,
        .n_outputs = (uint32_t)n_outputs,
        .inputs = in_ptrs,
        .outputs = out_ptrs,
        .flags = TF_EXEC_VALIDATED, /* tf__prim_check, check_outputs and check_supported */
    };
    tf__plugin_report_clear();
    st = e->desc->execute(e->state, &x);
    if (st) { /* "binary add failed", "convert failed": a primitive without sub-ops has no name */
        const char *opname = tf_prim_op_name(prim, op);
        return tf__error_from_plugin(st, "engine_execute", "engine '%s': %s%s%s failed (%s)",
                                     e->desc->name, tf_prim_name(prim), opname[0] ? " " : "",
                                     opname, tf_status_name(st));
    }
    return TF_OK;
}

/* The outputs of a call are about to be written: what was known of their contents is not
   any more (tensor_internal.h, fill_n). */
static void forget_fills(size_t n, tf_tensor *const *outputs)
{
    for (size_t i = 0; i < n; i++)
        if (atomic_load_explicit(&outputs[i]->storage->fill_n, memory_order_relaxed))
            atomic_store_explicit(&outputs[i]->storage->fill_n, 0, memory_order_relaxed);
}

/* A FILL of t has succeeded: its value is known where t is dense from element 0. */
static void note_fill(const tf_fill_params *p, const tf_tensor *t)
{
    if ((t->dtype != TF_F32 && t->dtype != TF_F64) || t->offset != 0 || t->numel == 0 ||
        !tf__strides_dense(t->rank, t->shape, t->strides))
        return;
    tf_storage *s = t->storage;
    s->fill_value = t->dtype == TF_F32 ? (double)(float)p->value.f : p->value.f;
    s->fill_dtype = t->dtype;
    atomic_store_explicit(&s->fill_n, (int64_t)t->numel, memory_order_release);
}

/* tf_engine_execute, with `alias` as in check_outputs. */
static tf_status execute(tf_engine *e, tf_prim prim, const void *params, size_t n_inputs,
                         tf_tensor *const *inputs, size_t n_outputs, tf_tensor *const *outputs,
                         int alias)
{
    if (!e)
        return tf__error(TF_ERR_VALIDATION, "engine_execute", "engine", "engine is NULL");
    if (n_inputs + n_outputs > MAX_OPERANDS)
        return tf__error(TF_ERR_VALIDATION, "engine_execute", "n_inputs",
                         "engine_execute: more than %d operands", MAX_OPERANDS);
    tf_status st = tf__prim_check(prim, params, n_inputs, inputs, n_outputs, outputs);
    if (st)
        return st;
    if ((st = check_outputs(prim, n_inputs, inputs, n_outputs, outputs, alias)))
        return st;
    /* deferred results read or written here become current (defer.c) */
    for (size_t i = 0; i < n_inputs; i++)
        if ((st = tf__ready(inputs[i])))
            return st;
    for (size_t i = 0; i < n_outputs; i++)
        if ((st = tf__ready_write(outputs[i])))
            return st;
    forget_fills(n_outputs, outputs);
    bool taken = tf__engine_lock(e);
    st = call_engine(e, prim, params, n_inputs, inputs, n_outputs, outputs);
    tf__engine_unlock(e, taken);
    if (!st && prim == TF_PRIM_FILL)
        note_fill(params, outputs[0]);
    return st;
}

TF_API tf_status tf_engine_execute(tf_engine *e, tf_prim prim, const void *params, size_t n_inputs,
                                   tf_tensor *const *inputs, size_t n_outputs,
                                   tf_tensor *const *outputs)
{
    return execute(e, prim, params, n_inputs, inputs, n_outputs, outputs, -1);
}

bool tf__engine_in_place(const tf_engine *e)
{
    return (e->caps & TF_ENGINE_CAP_IN_PLACE) != 0;
}

tf_status tf__engine_execute_in_place(tf_engine *e, tf_prim prim, const void *params,
                                      size_t n_inputs, tf_tensor *const *inputs)
{
    if (prim != TF_PRIM_BINARY || !tf__engine_in_place(e))
        return tf__error(TF_ERR_UNSUPPORTED, "engine_execute", NULL,
                         "engine '%s': %s cannot run in place", e->desc->name, tf_prim_name(prim));
    return execute(e, prim, params, n_inputs, inputs, 1, inputs, 0);
}

bool tf__engine_fuses(tf_engine *e, tf_dtype dtype, size_t n_inputs, size_t n_outputs)
{
    if (!tf_dtype_is_float(dtype) || n_inputs == 0 || n_inputs > TF_FUSED_MAX_INPUTS ||
        n_outputs == 0 || n_outputs > TF_FUSED_MAX_OUTPUTS)
        return false;
    uint32_t op = (uint32_t)n_outputs - 1;
    return ask_uniform(e, fused_key(op, n_inputs, dtype), TF_PRIM_FUSED, op, n_inputs + n_outputs,
                       dtype);
}

bool tf__engine_fuses_reduce(tf_engine *e, tf_dtype dtype, size_t n_inputs, size_t n_outputs,
                             tf_reduce_op op)
{
    if (!tf_dtype_is_float(dtype) || n_inputs == 0 || n_inputs > TF_FUSED_MAX_INPUTS ||
        n_outputs >= TF_FUSED_MAX_OUTPUTS || (unsigned)op >= TF_REDUCE_COUNT_ ||
        !tf__engine_reduced_output(e))
        return false;
    uint32_t q = TF_FUSED_REDUCE_QUERY(op, n_outputs);
    return ask_uniform(e, fused_key(q, n_inputs, dtype), TF_PRIM_FUSED, q,
                       n_inputs + n_outputs + 1, dtype);
}

tf_status tf__engine_execute_fused(tf_engine *e, const tf_fused_params *params, size_t n_inputs,
                                   tf_tensor *const *inputs, size_t n_outputs,
                                   tf_tensor *const *outputs, int alias)
{
    if (alias >= 0 && (n_outputs != 1 || !tf__engine_in_place(e)))
        return tf__error(TF_ERR_UNSUPPORTED, "engine_execute", NULL,
                         "engine '%s': FUSED cannot run in place%s", e->desc->name,
                         n_outputs != 1 ? " with several outputs" : "");
    return execute(e, TF_PRIM_FUSED, params, n_inputs, inputs, n_outputs, outputs, alias);
}

bool tf__engine_supports_uniform(tf_engine *e, tf_prim prim, uint32_t op, size_t n, tf_dtype dt)
{
    return n > 0 && n <= MAX_OPERANDS &&
           ask_uniform(e, uniform_key(prim, op, n, dt), prim, op, n, dt);
}
