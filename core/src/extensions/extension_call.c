/*
 * extension_call.c - calling installed extension ops by name: the run-time
 * signature check, shape inference (through the extension cache), the
 * kernel call through libffi with the op's typed C signature, recording on
 * the tape, and the AD rule of recorded extension ops, which hands the
 * module's own rules the ops table below.
 *
 * A recorded extension op is one node per output with op TF_OP_extension;
 * attrs.i[0] holds its (immortal) op record, attrs.i[1] the output index,
 * attrs.v[0] the scalar arguments (f64 values stored by their bits), and,
 * for ops that ask for it (ABI 1.3, TF_EXT_OP_RULES_READ_OUTPUTS),
 * attrs.aux one reference to the call's output values, shared by the nodes
 * of all its outputs (extension_outputs.c).
 */
#include <stdio.h>
#include <string.h>

#include "extensions_internal.h"

typedef struct call_args {
    tf_eager *tensors[TF_EXT_MAX_ARGS];
    tf_ext_scalar scalars[TF_EXT_MAX_ARGS];
} call_args;

/* ---- the contexts the module gets, and their ABI 1.1 report functions ---- */

/* The public contexts come first, so the host's functions find the op record
   from the pointer the module hands back. */
typedef struct kernel_ctx {
    tf_ext_kernel_ctx pub;
    const tf_ext_oprec *rec;
} kernel_ctx;

typedef tf_ext_host_rule_ctx rule_ctx; /* extension_internal.h: compose() gets one too */

static tf_status report_kind(const tf_ext_kernel_ctx *ctx, const char *kind, int64_t index,
                             const char *detail)
{
    const tf_ext_oprec *r = ((const kernel_ctx *)ctx)->rec;
    const tf_ext_error_kind *k = tf__extension_find_kind(r->module, kind);
    if (!k) {
        char msg[512];
        snprintf(msg, sizeof msg,
                 "%s: reported the error kind '%.64s', which module '%s' does not "
                 "declare; its detail: %.256s",
                 r->name, kind ? kind : "(null)", r->module->desc->id, detail ? detail : "");
        tf__plugin_report(TF_ERR_BACKEND, msg);
        return TF_ERR_BACKEND;
    }
    tf__plugin_report_kind(r->module->desc->id, k->name, k->message, index, detail ? detail : "");
    return TF_ERR_EXTENSION;
}

static tf_status report_argument(const tf_ext_rule_ctx *ctx, tf_status status, uint32_t arg,
                                 const char *message)
{
    const tf_ext_oprec *r = ((const rule_ctx *)ctx)->rec;
    const char *name = arg < r->desc->n_args ? r->desc->arg_names[arg] : NULL;
    tf__plugin_report_argument(status, name, message ? message : "");
    return status;
}

void tf__ext_rule_ctx_init(rule_ctx *c, tf_session *s, const tf_ext_oprec *r)
{
    memset(c, 0, sizeof *c);
    c->pub.struct_size = sizeof c->pub;
    c->pub.host = tf__host_api();
    c->pub.ops = &tf__ext_ops;
    c->pub.session = (tf_ext_session *)s;
    c->pub.op_name = r->name;
    c->pub.report_argument = report_argument;
    c->pub.cache_get = tf__ext_cache_get; /* ABI 1.2 */
    c->pub.cache_put = tf__ext_cache_put;
    c->rec = r;
}

/* ---- checking a call against the signature ---- */

static const char *kind_name(uint32_t k)
{
    return k == TF_EXT_ARG_TENSOR ? "tensor"
           : k == TF_EXT_ARG_F64  ? "f64"
           : k == TF_EXT_ARG_I64  ? "i64"
                                  : "?";
}

static tf_status check_args(tf_session *s, const tf_ext_oprec *r, const tf_call_arg *args,
                            size_t n_args, call_args *ca)
{
    const tf_ext_op *d = r->desc;
    if (n_args != d->n_args || (n_args && !args))
        return tf__error(TF_ERR_VALIDATION, r->name, "args", "%s: expects %u arguments, got %zu",
                         r->name, d->n_args, n_args);
    uint32_t nt = 0, ns = 0;
    for (uint32_t i = 0; i < d->n_args; i++) {
        const char *arg = d->arg_names[i];
        if (args[i].kind != d->arg_kinds[i])
            return tf__error(TF_ERR_VALIDATION, r->name, arg,
                             "%s: argument %u ('%s') must be %s, got %s", r->name, i, arg,
                             kind_name(d->arg_kinds[i]), kind_name(args[i].kind));
        if (d->arg_kinds[i] != TF_EXT_ARG_TENSOR) {
            ca->scalars[ns].f = args[i].f;
            ca->scalars[ns++].i = args[i].i;
            continue;
        }
        tf_eager *x = args[i].tensor;
        const char *names[1] = {arg};
        tf_eager *dummy;
        tf_status st = tf__check_inputs(r->name, s, &x, 1, names, &dummy);
        if (st)
            return st;
        ca->tensors[nt++] = x;
    }
    return TF_OK;
}

/* ---- inference through the module's extension cache ---- */

typedef struct inferred {
    const tf_ext_oprec *rec;
    tf_epoch epoch;
    uint32_t n_in;
    tf_ext_meta in[TF_EXT_MAX_ARGS];
    tf_ext_scalar scalars[TF_EXT_MAX_ARGS];
    tf_ext_meta out[TF_EXT_MAX_OUTPUTS];
} inferred;

/* A module's own entries in the same cache are never smaller (extension_compose.c). */
_Static_assert(sizeof(inferred) <= TF_EXT_CACHE_MIN_VALUE, "module cache entries too small");

static void copy_inferred(const void *value, void *user)
{
    memcpy(user, value, sizeof(inferred));
}

static bool same_call(const inferred *a, const inferred *b)
{
    return a->rec == b->rec && a->epoch == b->epoch && a->n_in == b->n_in &&
           memcmp(a->in, b->in, a->n_in * sizeof a->in[0]) == 0 &&
           memcmp(a->scalars, b->scalars, a->rec->n_scalars * sizeof a->scalars[0]) == 0;
}

static tf_status check_inferred(const tf_ext_oprec *r, const tf_ext_meta *out)
{
    for (uint32_t j = 0; j < r->desc->n_outputs; j++) {
        bool ok = out[j].dtype < TF_DTYPE_COUNT && out[j].rank <= TF_MAX_RANK;
        for (uint32_t k = 0; ok && k < out[j].rank; k++)
            ok = out[j].shape[k] >= 0;
        if (!ok)
            return tf__error(TF_ERR_RUNTIME_STATE, r->name, NULL,
                             "%s: infer() produced an invalid dtype or shape for output %u",
                             r->name, j);
    }
    return TF_OK;
}

static tf_status infer(tf_session *s, const tf_ext_oprec *r, tf_cache *cache, const call_args *ca,
                       inferred *inf)
{
    memset(inf, 0, sizeof *inf);
    inf->rec = r;
    inf->epoch = tf_runtime_epoch(s->rt);
    inf->n_in = r->n_tensors;
    for (uint32_t i = 0; i < r->n_tensors; i++) {
        const tf_tensor *v = ca->tensors[i]->value;
        inf->in[i].struct_size = sizeof inf->in[i];
        inf->in[i].dtype = (uint32_t)v->dtype;
        inf->in[i].rank = v->rank;
        memcpy(inf->in[i].shape, v->shape, v->rank * sizeof v->shape[0]);
    }
    memcpy(inf->scalars, ca->scalars, r->n_scalars * sizeof ca->scalars[0]);
    uint64_t key =
        tf__hash_bytes(tf__hash_bytes(TF_HASH_SEED, &inf->rec, sizeof inf->rec), &inf->epoch,
                       sizeof inf->epoch);
    key = tf__hash_bytes(tf__hash_bytes(key, inf->in, sizeof inf->in), inf->scalars,
                         sizeof inf->scalars);
    inferred hit;
    if (tf__cache_get(cache, key, copy_inferred, &hit) && same_call(&hit, inf)) {
        memcpy(inf->out, hit.out, sizeof inf->out);
        return TF_OK;
    }
    for (uint32_t j = 0; j < r->desc->n_outputs; j++)
        inf->out[j].struct_size = sizeof inf->out[j];
    rule_ctx ctx;
    tf__ext_rule_ctx_init(&ctx, s, r);
    tf__plugin_report_clear();
    tf_status st =
        r->desc->infer(&ctx.pub, inf->in, r->n_tensors, inf->scalars, r->n_scalars, inf->out);
    if (st) { /* the reason in the message itself, not only in the cause */
        const char *why = tf__plugin_report_text();
        return tf__error_from_plugin(st, r->name, "%s: the arguments were refused%s%s", r->name,
                                     why[0] ? ": " : " (its infer reported no reason)", why);
    }
    if ((st = check_inferred(r, inf->out)))
        return st;
    inferred *keep = tf__alloc(sizeof *keep);
    if (keep) {
        *keep = *inf;
        tf__cache_put(cache, key, keep, sizeof *keep, tf__free);
    }
    return TF_OK;
}

/* ---- the kernel call ---- */

static tf_ext_generic_fn find_kernel(const tf_ext_oprec *r, const char *engine)
{
    for (uint32_t i = 0; i < r->desc->n_kernels; i++)
        if (strcmp(r->desc->kernels[i].engine, engine) == 0)
            return r->desc->kernels[i].fn;
    return NULL;
}

static tf_status placement_error(tf_session *s, const tf_ext_oprec *r, uint32_t arg)
{
    const char *name = r->desc->arg_names[r->tensor_arg[arg]];
    return tf__error(TF_ERR_PLACEMENT, r->name, name,
                     "%s: argument '%s' is in memory engine '%s' cannot read; move it there "
                     "first (tf_engine_download / tf_engine_upload)",
                     r->name, name, tf_engine_name(s->engine));
}

/*
 * The operand of a kernel for tensor t. `host`: the kernel is the op's cpu
 * kernel run for an engine without one (run_staged), and t is host memory.
 */
static tf_status make_operand(tf_session *s, const tf_ext_oprec *r, uint32_t arg,
                              const tf_tensor *t, bool host, tf_operand *o)
{
    const tf_storage *st = t->storage;
    bool host_engine = host || tf_engine_uses_host_memory(s->engine) != 0;
    tf_status ready = tf__ready(t); /* the kernel reads it now */
    if (ready)
        return ready;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->dtype = (uint32_t)t->dtype;
    o->rank = t->rank;
    o->shape = t->shape;
    o->strides = t->strides;
    o->offset = t->offset;
    if (!host && st->kind == TF_STORAGE_ENGINE && st->engine == s->engine) {
        o->buffer = st->buffer;
        o->data = host_engine ? st->host : NULL;
        return TF_OK;
    }
    if (host_engine && st->host) {
        o->data = st->host;
        return TF_OK;
    }
    return placement_error(s, r, arg);
}

/* Calls kernel fn with the tensor arguments ins[] (in order) and outputs outs[]. */
static tf_status run_kernel(tf_session *s, const tf_ext_oprec *r, const call_args *ca,
                            tf_ext_generic_fn fn, tf_tensor *const *ins, tf_tensor *const *outs,
                            bool host)
{
    uint32_t n_out = r->desc->n_outputs;
    tf_operand ops[TF_EXT_MAX_ARGS + TF_EXT_MAX_OUTPUTS];
    const tf_operand *ptrs[TF_EXT_MAX_ARGS + TF_EXT_MAX_OUTPUTS];
    void *values[1 + TF_EXT_MAX_ARGS + TF_EXT_MAX_OUTPUTS];
    kernel_ctx kctx = {{sizeof kctx.pub, 0, tf__host_api(), r->name,
                        host ? "cpu" : tf_engine_name(s->engine), host ? NULL : s->engine->state,
                        report_kind},
                       r};
    const tf_ext_kernel_ctx *kp = &kctx.pub;
    uint32_t nv = 0, nt = 0, ns = 0;
    values[nv++] = &kp;
    for (uint32_t i = 0; i < r->desc->n_args; i++) {
        if (r->desc->arg_kinds[i] == TF_EXT_ARG_TENSOR) {
            tf_status st = make_operand(s, r, nt, ins[nt], host, &ops[nt]);
            if (st)
                return st;
            ptrs[nt] = &ops[nt];
            values[nv++] = &ptrs[nt++];
        } else {
            const tf_ext_scalar *sc = &ca->scalars[ns++];
            values[nv++] =
                r->desc->arg_kinds[i] == TF_EXT_ARG_F64 ? (void *)&sc->f : (void *)&sc->i;
        }
    }
    for (uint32_t j = 0; j < n_out; j++) {
        tf_status st = tf__ready_write(outs[j]);
        if (!st)
            st = make_operand(s, r, 0, outs[j], host, &ops[nt + j]);
        if (st)
            return st;
        ptrs[nt + j] = &ops[nt + j];
        values[nv++] = &ptrs[nt + j];
    }
    ffi_arg rv = 0;
    bool taken = host ? false : tf__engine_lock(s->engine);
    tf__plugin_report_clear();
    ffi_call((ffi_cif *)&r->cif, fn, &rv, values);
    tf__engine_unlock(s->engine, taken);
    tf_status st = (tf_status)(int)rv;
    if (st)
        return tf__error_from_plugin(st, r->name, "%s: the kernel for engine '%s' failed", r->name,
                                     host ? "cpu" : tf_engine_name(s->engine));
    return TF_OK;
}

/*
 * An op without a kernel for an engine whose memory is a device's runs its
 * cpu kernel on host copies (docs/extensions.md, "Kernels"): the tensor
 * arguments are downloaded, the kernel writes host outputs, and those are
 * uploaded into vals[] (new tensors of the engine). Two transfers per
 * operand; a module that wants none ships a kernel for the engine.
 */
static tf_status run_staged(tf_session *s, const tf_ext_oprec *r, const call_args *ca,
                            tf_ext_generic_fn cpu_fn, const inferred *inf, tf_tensor **vals)
{
    uint32_t n_out = r->desc->n_outputs;
    tf_tensor *ins[TF_EXT_MAX_ARGS] = {NULL}, *outs[TF_EXT_MAX_OUTPUTS] = {NULL};
    tf_status st = TF_OK;
    for (uint32_t k = 0; k < r->n_tensors && !st; k++) {
        tf_tensor *t = ca->tensors[k]->value;
        /* the engine's own memory only, as its kernel would take it */
        bool own = t->storage->kind == TF_STORAGE_ENGINE && t->storage->engine == s->engine;
        st = own ? tf_engine_download(s->engine, t, &ins[k]) : placement_error(s, r, k);
    }
    for (uint32_t j = 0; j < n_out && !st; j++)
        st = tf__tensor_host_empty((tf_dtype)inf->out[j].dtype, inf->out[j].rank,
                                   inf->out[j].shape, &outs[j]);
    if (!st)
        st = run_kernel(s, r, ca, cpu_fn, ins, outs, true);
    for (uint32_t j = 0; j < n_out && !st; j++)
        st = tf_engine_upload(s->engine, outs[j], &vals[j]);
    for (uint32_t k = 0; k < r->n_tensors; k++)
        tf_tensor_release(ins[k]);
    for (uint32_t j = 0; j < n_out; j++)
        tf_tensor_release(outs[j]);
    return st;
}

/* ---- running and recording ---- */

static void set_attrs(const tf_ext_oprec *r, const call_args *ca, uint32_t out, tf_attrs *a)
{
    memset(a, 0, sizeof *a);
    a->i[0] = (int64_t)(intptr_t)r;
    a->i[1] = out;
    a->n[0] = r->n_scalars;
    for (uint32_t k = 0; k < r->n_scalars; k++) {
        if (r->desc->arg_kinds[r->scalar_arg[k]] == TF_EXT_ARG_F64)
            memcpy(&a->v[0][k], &ca->scalars[k].f, sizeof(double));
        else
            a->v[0][k] = ca->scalars[k].i;
    }
}

static tf_status execute(tf_session *s, const tf_ext_oprec *r, tf_cache *cache, const call_args *ca,
                         tf_eager **outputs)
{
    inferred inf;
    tf_status st = infer(s, r, cache, ca, &inf);
    if (st)
        return st;
    /* an engine without a kernel of its own gets the cpu kernel: on its memory
       when that is the host's, on host copies when it is a device's */
    tf_ext_generic_fn fn = find_kernel(r, tf_engine_name(s->engine)), cpu_fn = NULL;
    bool host_engine = tf_engine_uses_host_memory(s->engine) != 0;
    if (!fn && host_engine)
        fn = find_kernel(r, "cpu");
    else if (!fn)
        cpu_fn = find_kernel(r, "cpu"); /* every op has one: the install checks it */
    if (!fn && !cpu_fn)
        return tf__error(TF_ERR_UNSUPPORTED, r->name, NULL,
                         "%s: the op has no kernel for engine '%s'", r->name,
                         tf_engine_name(s->engine));
    uint32_t n_out = r->desc->n_outputs;
    tf_tensor *vals[TF_EXT_MAX_OUTPUTS] = {NULL}, *ins[TF_EXT_MAX_ARGS];
    for (uint32_t k = 0; k < r->n_tensors; k++)
        ins[k] = ca->tensors[k]->value;
    if (cpu_fn)
        st = run_staged(s, r, ca, cpu_fn, &inf, vals);
    for (uint32_t j = 0; j < n_out && !st && !cpu_fn; j++)
        st = tf__empty(s, (tf_dtype)inf.out[j].dtype, inf.out[j].rank, inf.out[j].shape, &vals[j]);
    if (!st && !cpu_fn)
        st = run_kernel(s, r, ca, fn, ins, vals, false);
    tf_eager *res[TF_EXT_MAX_OUTPUTS] = {NULL};
    tf_ext_kept *kept = st ? NULL : tf__ext_kept_new(s, r, ca->tensors, vals);
    for (uint32_t j = 0; j < n_out; j++) {
        if (st) {
            tf_tensor_release(vals[j]);
            continue;
        }
        tf_attrs a;
        set_attrs(r, ca, j, &a);
        if (kept) {
            a.aux = kept;
            a.aux_release = tf__ext_kept_release;
        }
        st = tf__record(s, TF_OP_extension, &a, ca->tensors, r->n_tensors, vals[j], &res[j]);
    }
    for (uint32_t j = 0; kept && j < n_out; j++)
        if (!res[j] || !res[j]->node)
            tf__ext_kept_release(kept); /* the reference no node took */
    for (uint32_t j = 0; j < n_out; j++) {
        if (st)
            tf_eager_release(res[j]);
        else
            outputs[j] = res[j];
    }
    return st;
}

/* The op record and its module's cache; both outlive the snapshot (op
   records live for the process, caches for the runtime). */
static const tf_ext_oprec *lookup(tf_session *s, const char *name, tf_cache **cache)
{
    tf_ext_snapshot *snap = tf__snapshot_pin(s->rt);
    const tf_ext_oprec *r = tf__snapshot_find(snap, name);
    tf_epoch epoch = snap ? snap->epoch : 0;
    if (r)
        *cache = tf__snapshot_cache(snap, r->module);
    tf__snapshot_unpin(snap);
    if (!r)
        tf__error(TF_ERR_VALIDATION, "session_call", "name",
                  "session_call: no op named '%s' is installed in runtime %llu (epoch %llu)", name,
                  (unsigned long long)s->rt->id, (unsigned long long)epoch);
    return r;
}

TF_API tf_status tf_session_call(tf_session *s, const char *name, const tf_call_arg *args,
                                 size_t n_args, tf_eager **outputs, size_t n_outputs)
{
    if (!s || !name || !outputs)
        return tf__error(TF_ERR_VALIDATION, "session_call",
                         !s      ? "session"
                         : !name ? "name"
                                 : "outputs",
                         "session_call: NULL argument");
    tf_cache *cache = NULL;
    const tf_ext_oprec *r = lookup(s, name, &cache);
    if (!r)
        return TF_ERR_VALIDATION;
    if (r->composite) /* ABI 1.2: no kernel, its parts are recorded */
        return tf__ext_call_composite(s, r, args, n_args, outputs, n_outputs);
    call_args ca;
    tf_status st = check_args(s, r, args, n_args, &ca);
    if (st)
        return st;
    if (n_outputs != r->desc->n_outputs)
        return tf__error(TF_ERR_VALIDATION, r->name, "outputs",
                         "%s: has %u outputs, got room for %zu", r->name, r->desc->n_outputs,
                         n_outputs);
    return execute(s, r, cache, &ca, outputs);
}

/* ---- the AD rule of every extension op ---- */

static const tf_ext_oprec *node_rec(const tf_node *nd, tf_ext_call *call, tf_ext_scalar *sc,
                                    tf_eager *out)
{
    const tf_ext_oprec *r = (const tf_ext_oprec *)(intptr_t)nd->attrs->i[0];
    for (uint32_t k = 0; k < r->n_scalars; k++) {
        sc[k].i = nd->attrs->v[0][k];
        sc[k].f = 0.0;
        if (r->desc->arg_kinds[r->scalar_arg[k]] == TF_EXT_ARG_F64)
            memcpy(&sc[k].f, &nd->attrs->v[0][k], sizeof(double));
    }
    memset(call, 0, sizeof *call);
    call->struct_size = sizeof *call;
    call->n_tensors = nd->n_inputs;
    call->n_scalars = r->n_scalars;
    call->out_index = (uint32_t)nd->attrs->i[1];
    call->tensors = (tf_ext_tensor *const *)nd->inputs;
    call->scalars = sc;
    call->output = (tf_ext_tensor *)out;
    return r;
}

/* A rule's failure: an ops-table op already recorded it (same status), or
   the module reported it itself (host->report_error). */
static tf_status rule_failed(tf_status st, const tf_ext_oprec *r, const char *mode)
{
    if (tf_error_status() == st)
        return st;
    return tf__error_from_plugin(st, r->name, "%s: the %s rule failed", r->name, mode);
}

/* "f64[2,3]": a result's dtype and shape, for the messages below. */
static void describe(const tf_tensor *t, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "%s[", tf_dtype_name(t->dtype));
    for (uint32_t k = 0; k < t->rank && n < cap; k++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", k ? "," : "", (long long)t->shape[k]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

/*
 * One result of a module's rule against what the rule must produce: a
 * cotangent has its input's dtype and shape, a tangent its output's, and
 * both belong to the session's runtime. A result that does not fit would
 * otherwise land in a grad slot or flow into the next rule as it is.
 * `what` names the result, `of` what it belongs to (for the message), `arg`
 * the argument the error names.
 */
static tf_status check_result(tf_session *s, const tf_ext_oprec *r, const char *mode,
                              const char *what, const char *of, const char *arg,
                              const tf_eager *got, const tf_tensor *want)
{
    const tf_tensor *v = got->value;
    bool same_shape =
        v->rank == want->rank && memcmp(v->shape, want->shape, v->rank * sizeof v->shape[0]) == 0;
    tf_status st = got->rt != s->rt           ? TF_ERR_CONTEXT_MISMATCH
                   : v->dtype != want->dtype ? TF_ERR_DTYPE_MISMATCH
                   : !same_shape              ? TF_ERR_SHAPE_MISMATCH
                                              : TF_OK;
    if (!st)
        return TF_OK;
    char gs[160], ws[160];
    describe(v, gs, sizeof gs);
    describe(want, ws, sizeof ws);
    return tf__error(st, r->name, arg,
                     "extension module '%s', op '%s': the %s rule returned a %s %s%s for %s, "
                     "which is %s",
                     r->module->desc->id, r->name, mode, what, gs,
                     st == TF_ERR_CONTEXT_MISMATCH ? " of another runtime" : "", of, ws);
}

/* The cotangents a reverse rule set, each against its input (check_result). */
static tf_status check_cotangents(tf_session *s, const tf_ext_oprec *r, const tf_node *nd,
                                  const bool *need, tf_eager *const *cot_in)
{
    for (uint32_t i = 0; i < nd->n_inputs; i++) {
        if (!need[i] || !cot_in[i])
            continue;
        const char *arg = r->desc->arg_names[r->tensor_arg[i]];
        char of[96];
        snprintf(of, sizeof of, "input '%s'", arg);
        tf_status st =
            check_result(s, r, "reverse", "cotangent", of, arg, cot_in[i], nd->inputs[i]->value);
        if (st)
            return st;
    }
    return TF_OK;
}

static tf_status ext_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                         const bool *need, tf_eager **cot_in)
{
    tf_ext_call call;
    tf_ext_scalar sc[TF_EXT_MAX_ARGS];
    const tf_ext_oprec *r = node_rec(nd, &call, sc, out);
    if (!r->desc->vjp)
        return tf__error(TF_ERR_UNSUPPORTED_AD_RULE, r->name, NULL,
                         "vjp: the extension op '%s' has no reverse rule", r->name);
    int needs[TF_EXT_MAX_ARGS];
    for (uint32_t i = 0; i < nd->n_inputs; i++)
        needs[i] = need[i];
    tf_eager *outs[TF_EXT_MAX_OUTPUTS];
    tf_status st = tf__ext_rule_outputs_begin(s, nd, &call, outs);
    if (st)
        return tf__error(st, r->name, NULL, "%s: out of memory for the reverse rule", r->name);
    rule_ctx ctx;
    tf__ext_rule_ctx_init(&ctx, s, r);
    tf__plugin_report_clear();
    st = r->desc->vjp(&ctx.pub, &call, (tf_ext_tensor *)cot, needs, (tf_ext_tensor **)cot_in);
    tf__ext_rule_outputs_end(&call);
    if (st)
        return rule_failed(st, r, "reverse");
    return check_cotangents(s, r, nd, need, cot_in); /* on failure the caller releases them */
}

static tf_status ext_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tan_in,
                         tf_eager **tan_out)
{
    tf_ext_call call;
    tf_ext_scalar sc[TF_EXT_MAX_ARGS];
    const tf_ext_oprec *r = node_rec(nd, &call, sc, out);
    if (!r->desc->jvp)
        return tf__error(TF_ERR_UNSUPPORTED_AD_RULE, r->name, NULL,
                         "jvp: the extension op '%s' has no forward rule", r->name);
    tf_eager *outs[TF_EXT_MAX_OUTPUTS];
    tf_status st = tf__ext_rule_outputs_begin(s, nd, &call, outs);
    if (st)
        return tf__error(st, r->name, NULL, "%s: out of memory for the forward rule", r->name);
    rule_ctx ctx;
    tf__ext_rule_ctx_init(&ctx, s, r);
    tf__plugin_report_clear();
    st = r->desc->jvp(&ctx.pub, &call, (tf_ext_tensor *const *)tan_in, (tf_ext_tensor **)tan_out);
    tf__ext_rule_outputs_end(&call);
    if (st)
        return rule_failed(st, r, "forward");
    char of[32];
    snprintf(of, sizeof of, "output %u", call.out_index);
    if (*tan_out &&
        (st = check_result(s, r, "forward", "tangent", of, "tangent", *tan_out, out->value))) {
        tf_eager_release(*tan_out);
        *tan_out = NULL;
    }
    return st;
}

const tf_op_rule tf__rule_extension = {.name = "extension", .vjp = ext_vjp, .jvp = ext_jvp};

/* ---- the ops table ---- */

#define S_(x) ((tf_session *)(x))
#define E_(x) ((tf_eager *)(x))
#define EO_(x) ((tf_eager **)(x))

static void o_retain(tf_ext_tensor *x)
{
    tf_eager_retain(E_(x));
}
static void o_release(tf_ext_tensor *x)
{
    tf_eager_release(E_(x));
}
static uint32_t o_dtype(const tf_ext_tensor *x)
{
    return (uint32_t)((const tf_eager *)x)->value->dtype;
}
static uint32_t o_rank(const tf_ext_tensor *x)
{
    return ((const tf_eager *)x)->value->rank;
}

static int64_t o_extent(const tf_ext_tensor *x, uint32_t axis)
{
    const tf_tensor *v = ((const tf_eager *)x)->value;
    return axis < v->rank ? v->shape[axis] : -1;
}

#define O_BINARY_(name)                                                              \
    static tf_status o_##name(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor *y, \
                              tf_ext_tensor **out)                                   \
    {                                                                                \
        return tf_session_##name(S_(s), E_(x), E_(y), EO_(out));                     \
    }
O_BINARY_(add)
O_BINARY_(sub)
O_BINARY_(mul)
O_BINARY_(div)
#define O_UNARY_(name)                                                                  \
    static tf_status o_##name(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out) \
    {                                                                                   \
        return tf_session_##name(S_(s), E_(x), EO_(out));                               \
    }
O_UNARY_(neg)
O_UNARY_(abs)
O_UNARY_(log)
O_UNARY_(diagonal)
O_UNARY_(diag_embed)

static tf_status o_transpose(tf_ext_session *s, tf_ext_tensor *x, const int *perm,
                             tf_ext_tensor **out)
{
    return tf_session_transpose(S_(s), E_(x), perm, EO_(out));
}

static tf_status o_transpose_last2(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out)
{
    uint32_t r = o_rank(x);
    if (r < 2)
        return tf__error(TF_ERR_VALIDATION, "transpose_last2", "x",
                         "transpose_last2: rank %u, expected at least 2", r);
    int perm[TF_MAX_RANK];
    for (uint32_t i = 0; i < r; i++)
        perm[i] = (int)i;
    perm[r - 2] = (int)r - 1;
    perm[r - 1] = (int)r - 2;
    return tf_session_transpose(S_(s), E_(x), perm, EO_(out));
}

/* Batched matmul: dot_general with the leading axes as batch, then the
   batch axes moved back in front. */
static tf_status o_matmul(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor *y,
                          tf_ext_tensor **out)
{
    uint32_t r = o_rank(x);
    if (r < 2 || o_rank(y) != r)
        return tf__error(TF_ERR_SHAPE_MISMATCH, "matmul", "y",
                         "matmul: expected two tensors of the same rank >= 2, got ranks %u, %u", r,
                         o_rank(y));
    if (r == 2)
        return tf_session_matmul(S_(s), E_(x), E_(y), EO_(out));
    tf_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_contracting = 1;
    d.lhs_contracting[0] = (int)r - 1;
    d.rhs_contracting[0] = (int)r - 2;
    d.n_batch = r - 2;
    for (uint32_t i = 0; i + 2 < r; i++)
        d.lhs_batch[i] = d.rhs_batch[i] = (int)i;
    tf_eager *t;
    tf_status st = tf_session_dot_general(S_(s), E_(x), E_(y), &d, &t);
    if (st)
        return st;
    int perm[TF_MAX_RANK];
    for (uint32_t i = 0; i + 2 < r; i++)
        perm[i] = (int)i + 2;
    perm[r - 2] = 0;
    perm[r - 1] = 1;
    st = tf_session_transpose(S_(s), t, perm, EO_(out));
    tf_eager_release(t);
    return st;
}

static tf_status o_reshape(tf_ext_session *s, tf_ext_tensor *x, uint32_t rank, const int64_t *shape,
                           tf_ext_tensor **out)
{
    return tf_session_reshape(S_(s), E_(x), rank, shape, EO_(out));
}

static tf_status o_reduce_sum(tf_ext_session *s, tf_ext_tensor *x, const int *axes, size_t n,
                              tf_ext_tensor **out)
{
    return tf_session_reduce_sum(S_(s), E_(x), axes, n, EO_(out));
}

static tf_status o_tril(tf_ext_session *s, tf_ext_tensor *x, int64_t k, tf_ext_tensor **out)
{
    return tf_session_tril(S_(s), E_(x), k, EO_(out));
}

static tf_status o_triu(tf_ext_session *s, tf_ext_tensor *x, int64_t k, tf_ext_tensor **out)
{
    return tf_session_triu(S_(s), E_(x), k, EO_(out));
}

static tf_status o_scalar(tf_ext_session *s, const tf_ext_tensor *like, double v,
                          tf_ext_tensor **out)
{
    return tf__scalar_like(S_(s), (const tf_eager *)like, v, EO_(out));
}

static tf_status o_full(tf_ext_session *s, const tf_ext_tensor *like, uint32_t rank,
                        const int64_t *shape, double v, tf_ext_tensor **out)
{
    return tf_session_full(S_(s), ((const tf_eager *)like)->value->dtype, rank, shape, v, EO_(out));
}

static tf_status o_call(tf_ext_session *es, const char *name, tf_ext_tensor *const *tensors,
                        uint32_t n_tensors, const tf_ext_scalar *scalars, uint32_t n_scalars,
                        tf_ext_tensor **outputs, uint32_t n_outputs)
{
    tf_session *s = S_(es);
    tf_cache *cache = NULL;
    const tf_ext_oprec *r = name ? lookup(s, name, &cache) : NULL;
    if (!r)
        return name ? TF_ERR_VALIDATION
                    : tf__error(TF_ERR_VALIDATION, "call", "name", "call: name is NULL");
    if (r->n_strings || r->has_list)
        return tf__error(TF_ERR_VALIDATION, r->name, "args",
                         "%s: has string or tensor-list arguments; call it with call_args", r->name);
    if (n_tensors != r->n_tensors || n_scalars != r->n_scalars || n_outputs != r->desc->n_outputs)
        return tf__error(TF_ERR_VALIDATION, r->name, "args",
                         "%s: expects %u tensors, %u scalars and %u outputs, got %u, %u, %u",
                         r->name, r->n_tensors, r->n_scalars, r->desc->n_outputs, n_tensors,
                         n_scalars, n_outputs);
    call_args ca;
    for (uint32_t i = 0; i < n_tensors; i++) {
        const char *names[1] = {r->desc->arg_names[r->tensor_arg[i]]};
        tf_eager *x = E_(tensors[i]), *dummy;
        tf_status st = tf__check_inputs(r->name, s, &x, 1, names, &dummy);
        if (st)
            return st;
        ca.tensors[i] = x;
    }
    for (uint32_t i = 0; i < n_scalars; i++)
        ca.scalars[i] = scalars[i];
    if (r->composite)
        return tf__ext_compose_fixed(s, r, ca.tensors, ca.scalars, EO_(outputs));
    return execute(s, r, cache, &ca, EO_(outputs));
}

const tf_ext_ops tf__ext_ops = {
    .struct_size = sizeof(tf_ext_ops),
    .retain = o_retain,
    .release = o_release,
    .dtype = o_dtype,
    .rank = o_rank,
    .extent = o_extent,
    .add = o_add,
    .sub = o_sub,
    .mul = o_mul,
    .div = o_div,
    .neg = o_neg,
    .abs = o_abs,
    .log = o_log,
    .matmul = o_matmul,
    .transpose_last2 = o_transpose_last2,
    .transpose = o_transpose,
    .reshape = o_reshape,
    .reduce_sum = o_reduce_sum,
    .tril = o_tril,
    .triu = o_triu,
    .diagonal = o_diagonal,
    .diag_embed = o_diag_embed,
    .scalar = o_scalar,
    .full = o_full,
    .call = o_call,
    TF_EXT_OPS_1_2_ENTRIES,
};
