/*
 * extension_compose.c - composite extension ops (extension ABI 1.2) and the
 * values modules keep in their extension caches.
 *
 * A composite op has no kernel: its compose() issues built-in ops (and other
 * installed ops) through the ops table, and only those are recorded, so the
 * op runs on every engine and differentiates through its parts. This file
 * checks a call against the op's signature, including the string and
 * tensor-list arguments only composites take, hands compose() the host's
 * rule context, and checks what it returns. Nothing is recorded for the
 * composite itself, so a failure leaves nothing behind but the parts'
 * results it has released.
 *
 * Module cache entries share the per-module tf_cache with the host's
 * inferred-call entries (extension_call.c). Each starts with a NULL pointer
 * where an inferred entry holds its (never NULL) op record, then a magic
 * number, and is at least TF_EXT_CACHE_MIN_VALUE bytes: a 64-bit key
 * collision between the two kinds then reads in bounds and matches neither.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "extensions_internal.h"

/* ---- calling a composite ---- */

/* The checked arguments of one call; `tensors` points at `fixed` or the heap. */
typedef struct composite_args {
    tf_eager *fixed[TF_EXT_MAX_ARGS];
    tf_eager **tensors;
    uint32_t n_tensors;
    tf_ext_scalar scalars[TF_EXT_MAX_ARGS];
    const char *strings[TF_EXT_MAX_ARGS];
} composite_args;

static const char *kind_name(uint32_t k)
{
    static const char *const names[] = {"tensor", "f64", "i64", "string", "tensor list"};
    return k < sizeof names / sizeof names[0] ? names[k] : "?";
}

static tf_status check_tensor(tf_session *s, const tf_ext_oprec *r, const char *arg, tf_eager *x)
{
    const char *names[1] = {arg};
    tf_eager *dummy;
    return tf__check_inputs(r->name, s, &x, 1, names, &dummy);
}

/* A TF_EXT_ARG_TENSORS argument: its count, pointer and every element. */
static tf_status check_list(tf_session *s, const tf_ext_oprec *r, const char *arg,
                            const tf_call_arg *a)
{
    if (a->i < 0 || a->i > TF_EXT_MAX_LIST || (a->i > 0 && !a->tensors))
        return tf__error(TF_ERR_VALIDATION, r->name, arg,
                         "%s: argument '%s' must be a list of 0 to %d tensors, got %lld%s", r->name,
                         arg, TF_EXT_MAX_LIST, (long long)a->i,
                         a->i > 0 && !a->tensors ? " and a NULL array" : "");
    for (int64_t k = 0; k < a->i; k++) {
        if (!a->tensors[k])
            return tf__error(TF_ERR_VALIDATION, r->name, arg,
                             "%s: argument '%s': tensor %lld of the list is NULL", r->name, arg,
                             (long long)k);
        tf_status st = check_tensor(s, r, arg, a->tensors[k]);
        if (st)
            return st;
    }
    return TF_OK;
}

static tf_status check_one(tf_session *s, const tf_ext_oprec *r, uint32_t i, const tf_call_arg *a)
{
    const char *arg = r->desc->arg_names[i];
    uint32_t want = r->desc->arg_kinds[i];
    if (a->kind != want)
        return tf__error(TF_ERR_VALIDATION, r->name, arg,
                         "%s: argument %u ('%s') must be %s, got %s", r->name, i, arg,
                         kind_name(want), kind_name(a->kind));
    if (want == TF_EXT_ARG_TENSOR)
        return check_tensor(s, r, arg, a->tensor);
    if (want == TF_EXT_ARG_TENSORS)
        return check_list(s, r, arg, a);
    if (want == TF_EXT_ARG_STRING &&
        (!a->str || strnlen(a->str, TF_EXT_MAX_STRING + 1) > TF_EXT_MAX_STRING))
        return tf__error(TF_ERR_VALIDATION, r->name, arg,
                         "%s: argument '%s' must be a string of at most %d bytes, got %s", r->name,
                         arg, TF_EXT_MAX_STRING, a->str ? "a longer one" : "NULL");
    return TF_OK;
}

/* Gathers the checked arguments in the order compose() gets them. */
static tf_status gather_args(const tf_ext_oprec *r, const tf_call_arg *args, composite_args *ca)
{
    const tf_call_arg *list = r->has_list ? &args[r->desc->n_args - 1] : NULL;
    size_t n = r->n_tensors + (list ? (size_t)list->i : 0);
    ca->tensors = ca->fixed;
    if (n > TF_EXT_MAX_ARGS && !(ca->tensors = tf__alloc(n * sizeof *ca->tensors)))
        return tf__error(TF_ERR_OUT_OF_MEMORY, r->name, NULL, "%s: out of memory", r->name);
    uint32_t nt = 0, ns = 0, nstr = 0;
    for (uint32_t i = 0; i < r->desc->n_args; i++) {
        const tf_call_arg *a = &args[i];
        switch (r->desc->arg_kinds[i]) {
        case TF_EXT_ARG_TENSOR: ca->tensors[nt++] = a->tensor; break;
        case TF_EXT_ARG_STRING: ca->strings[nstr++] = a->str; break;
        case TF_EXT_ARG_TENSORS:
            for (int64_t k = 0; k < a->i; k++)
                ca->tensors[nt++] = a->tensors[k];
            break;
        default: ca->scalars[ns].f = a->f; ca->scalars[ns++].i = a->i;
        }
    }
    ca->n_tensors = nt;
    return TF_OK;
}

/* A failure of compose(): an ops-table op's error stands as recorded, the
   module's own report becomes the message (and names the argument). */
static tf_status compose_failed(tf_status st, const tf_ext_oprec *r)
{
    const char *report = tf__plugin_report_text();
    if (report[0]) {
        char text[768];
        snprintf(text, sizeof text, "%s", report);
        return tf__error_from_plugin(st, r->name, "%s: %s", r->name, text);
    }
    if (tf_error_status() == st)
        return st;
    return tf__error_from_plugin(st, r->name, "%s: the op failed", r->name);
}

/* Every output set and of the session's runtime, else nothing is kept. */
static tf_status check_outputs(tf_session *s, const tf_ext_oprec *r, tf_eager **outs)
{
    for (uint32_t j = 0; j < r->desc->n_outputs; j++)
        if (!outs[j] || outs[j]->rt != s->rt)
            return tf__error(TF_ERR_RUNTIME_STATE, r->name, NULL,
                             "%s: compose() returned TF_OK with output %u %s", r->name, j,
                             outs[j] ? "from another runtime" : "not set");
    return TF_OK;
}

static tf_status run_compose(tf_session *s, const tf_ext_oprec *r, const composite_args *ca,
                             tf_eager **outputs)
{
    tf_ext_call call;
    memset(&call, 0, sizeof call);
    call.struct_size = sizeof call;
    call.n_tensors = ca->n_tensors;
    call.n_scalars = r->n_scalars;
    call.tensors = (tf_ext_tensor *const *)ca->tensors;
    call.scalars = ca->scalars;
    call.n_strings = r->n_strings;
    call.strings = ca->strings;
    tf_ext_host_rule_ctx ctx;
    tf__ext_rule_ctx_init(&ctx, s, r);
    tf_eager *outs[TF_EXT_MAX_OUTPUTS] = {NULL};
    tf__plugin_report_clear();
    tf_status st = r->desc->compose(&ctx.pub, &call, (tf_ext_tensor **)outs);
    if (st)
        st = compose_failed(st, r);
    else
        st = check_outputs(s, r, outs);
    for (uint32_t j = 0; j < r->desc->n_outputs; j++) {
        if (st)
            tf_eager_release(outs[j]);
        else
            outputs[j] = outs[j];
    }
    return st;
}

tf_status tf__ext_call_composite(tf_session *s, const tf_ext_oprec *r, const tf_call_arg *args,
                                 size_t n_args, tf_eager **outputs, size_t n_outputs)
{
    const tf_ext_op *d = r->desc;
    if (n_args != d->n_args || (n_args && !args))
        return tf__error(TF_ERR_VALIDATION, r->name, "args", "%s: expects %u arguments, got %zu",
                         r->name, d->n_args, n_args);
    for (uint32_t i = 0; i < d->n_args; i++) {
        tf_status st = check_one(s, r, i, &args[i]);
        if (st)
            return st;
    }
    if (n_outputs != d->n_outputs)
        return tf__error(TF_ERR_VALIDATION, r->name, "outputs",
                         "%s: has %u outputs, got room for %zu", r->name, d->n_outputs, n_outputs);
    composite_args ca;
    tf_status st = gather_args(r, args, &ca);
    if (st)
        return st;
    st = run_compose(s, r, &ca, outputs);
    if (ca.tensors != ca.fixed)
        tf__free(ca.tensors);
    return st;
}

tf_status tf__ext_compose_fixed(tf_session *s, const tf_ext_oprec *r, tf_eager *const *tensors,
                                const tf_ext_scalar *scalars, tf_eager **outputs)
{
    composite_args ca;
    memset(&ca, 0, sizeof ca);
    ca.tensors = ca.fixed;
    ca.n_tensors = r->n_tensors;
    for (uint32_t i = 0; i < r->n_tensors; i++)
        ca.fixed[i] = tensors[i];
    for (uint32_t i = 0; i < r->n_scalars; i++)
        ca.scalars[i] = scalars[i];
    return run_compose(s, r, &ca, outputs);
}

tf_status tf__xo_call_args(tf_ext_session *es, const char *name, const tf_ext_arg *args,
                           uint32_t n_args, tf_ext_tensor **outputs, uint32_t n_outputs)
{
    if (n_args > TF_EXT_MAX_ARGS || (n_args && !args))
        return tf__error(TF_ERR_VALIDATION, "call_args", "args",
                         "call_args: %u arguments%s, at most %d", n_args,
                         n_args && !args ? " in a NULL array" : "", TF_EXT_MAX_ARGS);
    tf_call_arg a[TF_EXT_MAX_ARGS];
    for (uint32_t i = 0; i < n_args; i++) {
        a[i].kind = args[i].kind;
        a[i].tensor = (tf_eager *)args[i].tensor;
        a[i].f = args[i].f;
        a[i].i = args[i].i;
        a[i].str = args[i].str;
        a[i].tensors = (tf_eager *const *)args[i].tensors;
    }
    return tf_session_call((tf_session *)es, name, a, n_args, (tf_eager **)outputs, n_outputs);
}

/* ---- module cache entries ---- */

#define BLOB_MAGIC 0x74666d6f64636163ull /* "tfmodcac" */
#define BLOB_MAX ((size_t)1 << 30)

typedef struct blob {
    const void *null_tag; /* where an inferred entry has its op record: always NULL here */
    uint64_t magic;
    tf_epoch epoch;
    size_t key_size, value_size;
    unsigned char bytes[]; /* the key, then the value at value_at(key_size) */
} blob;

_Static_assert(offsetof(blob, bytes) == 40, "value_at assumes bytes[] at offset 40");

/* The value's offset in bytes[]: 16-byte aligned (bytes[] starts 8-aligned at 40). */
static size_t value_at(size_t key_size)
{
    return (key_size + 8 + 15) / 16 * 16 - 8;
}

typedef struct blob_query {
    tf_epoch epoch;
    const void *key;
    size_t key_size;
    void (*use)(const void *value, size_t value_size, void *user);
    void *user;
    bool used;
} blob_query;

static uint64_t blob_hash(tf_epoch epoch, const void *key, size_t n)
{
    return tf__hash_bytes(tf__hash_word(TF_HASH_SEED ^ BLOB_MAGIC, epoch), key, n);
}

static void use_blob(const void *value, void *user)
{
    const blob *b = value;
    blob_query *q = user;
    if (b->null_tag || b->magic != BLOB_MAGIC || b->epoch != q->epoch ||
        b->key_size != q->key_size || memcmp(b->bytes, q->key, q->key_size) != 0)
        return; /* a colliding key: a miss */
    q->use(b->bytes + value_at(b->key_size), b->value_size, q->user);
    q->used = true;
}

/* The module's cache in the session's runtime; NULL if the module is no
   longer installed there (a rule of a replaced module's recorded op). */
static tf_cache *module_cache(const tf_ext_rule_ctx *ctx, tf_epoch *epoch)
{
    const tf_ext_oprec *r = ((const tf_ext_host_rule_ctx *)ctx)->rec;
    tf_session *s = (tf_session *)ctx->session;
    tf_ext_snapshot *snap = tf__snapshot_pin(s->rt);
    tf_cache *c = snap ? tf__snapshot_cache(snap, r->module) : NULL;
    *epoch = snap ? snap->epoch : 0;
    tf__snapshot_unpin(snap);
    return c; /* caches live as long as the runtime */
}

int tf__ext_cache_get(const tf_ext_rule_ctx *ctx, const void *key, size_t key_size,
                      void (*use)(const void *value, size_t value_size, void *user), void *user)
{
    if (!ctx || !key || !key_size || key_size > BLOB_MAX || !use)
        return 0;
    blob_query q = {0, key, key_size, use, user, false};
    tf_cache *c = module_cache(ctx, &q.epoch);
    if (!c)
        return 0;
    tf__cache_get(c, blob_hash(q.epoch, key, key_size), use_blob, &q);
    return q.used;
}

tf_status tf__ext_cache_put(const tf_ext_rule_ctx *ctx, const void *key, size_t key_size,
                            const void *value, size_t value_size)
{
    if (!ctx || !key || !value || !key_size || key_size > BLOB_MAX || value_size > BLOB_MAX)
        return tf__error(TF_ERR_VALIDATION, "cache_put", !key || !key_size ? "key" : "value",
                         "cache_put: expected a non-empty key and a value of at most 1 GiB each");
    tf_epoch epoch;
    tf_cache *c = module_cache(ctx, &epoch);
    if (!c)
        return TF_OK;
    size_t size = sizeof(blob) + value_at(key_size) + value_size;
    if (size < TF_EXT_CACHE_MIN_VALUE)
        size = TF_EXT_CACHE_MIN_VALUE;
    blob *b = tf__alloc_aligned(size, 16); /* the value's alignment */
    if (b)
        memset(b, 0, size);
    if (!b)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "cache_put", NULL, "cache_put: out of memory");
    b->magic = BLOB_MAGIC;
    b->epoch = epoch;
    b->key_size = key_size;
    b->value_size = value_size;
    memcpy(b->bytes, key, key_size);
    memcpy(b->bytes + value_at(key_size), value, value_size);
    tf__cache_put(c, blob_hash(epoch, key, key_size), b, size, tf__free);
    return TF_OK;
}
