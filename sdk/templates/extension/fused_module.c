/*
 * fused_module.c - a minimal, complete tenferro extension module.
 *
 * The starting point for a module of your own: copy this folder, rename
 * "example" everywhere, then replace the ops. The module "example.fused"
 * (file tenferro-ext-example.so) adds two elementwise ops on f32 and f64
 * tensors of any shape:
 *
 *   example.fused.swish(x) -> y     y = x * sigmoid(x), in one pass over x
 *                                   (the built-in tf_session_silu composes
 *                                   it from several primitives)
 *   example.fused.sigmoid(x) -> s   s = 1 / (1 + exp(-x)); swish's AD rules
 *                                   call it by name
 *
 * Each op has a shape/dtype inference function, one host-memory kernel
 * (registered for the "cpu" engine, which every module must serve, and for
 * the SDK's "example" engine: any engine with TF_ENGINE_CAP_HOST_MEMORY can
 * run a host kernel), and reverse (vjp) and forward (jvp) AD rules:
 *
 *   swish'(x)   = s + x s (1 - s) = s (1 + x (1 - s)),  s = sigmoid(x)
 *   sigmoid'(x) = s (1 - s)
 *
 * The rules are written only with ops of the host's ops table (ctx->ops),
 * never with loops over data: what they compute is recorded on the tape, so
 * second derivatives work, and they run on whatever engine the caller uses.
 *
 * The rules this file follows (docs/plugin-authors.md explains each):
 * include only <tenferro/extension_abi.h>, never link libtenferro, export
 * only tf_extension_module_v1, keep every descriptor in static storage and no
 * mutable globals (infer, kernels and rules run on many threads at once),
 * release every tensor handle an ops-table function returns.
 */
#include <math.h>
#include <stdio.h>

#include <tenferro/extension_abi.h>

#define MODULE_ID "example.fused"
#define MODULE_VERSION "0.1.0"

/* ---- shape and dtype inference ------------------------------------------------ */

/* Both ops: one f32 or f64 tensor in, the same dtype and shape out. */
static tf_status infer_elementwise(const tf_ext_rule_ctx *ctx, const tf_ext_meta *tensors,
                                   uint32_t n_tensors, const tf_ext_scalar *scalars,
                                   uint32_t n_scalars, tf_ext_meta *outputs)
{
    if (tensors[0].dtype != TF_F32 && tensors[0].dtype != TF_F64) {
        char message[160];
        snprintf(message, sizeof message, "%s: argument 'x' must be f32 or f64, got %s",
                 ctx->op_name, tf_dtype_name((tf_dtype)tensors[0].dtype));
        ctx->host->report_error(ctx->host->ctx, TF_ERR_DTYPE_MISMATCH, message);
        return TF_ERR_DTYPE_MISMATCH;
    }
    outputs[0] = tensors[0];
    return TF_OK;
}

/* ---- kernels ------------------------------------------------------------------ */

/* Numerically safe for large |x|: exp is only taken of a non-positive number. */
static double sigmoid_f64(double a)
{
    if (a >= 0)
        return 1.0 / (1.0 + exp(-a));
    double z = exp(a);
    return z / (1.0 + z);
}

static float sigmoid_f32(float a)
{
    if (a >= 0)
        return 1.0f / (1.0f + expf(-a));
    float z = expf(a);
    return z / (1.0f + z);
}

/*
 * y = x * sigmoid(x) (swish != 0) or y = sigmoid(x), element by element. x
 * may have any strides and an offset; y is dense column-major (possibly at
 * an offset), so it is written in order. `data` is element 0 of the memory.
 */
static void elementwise_loop(const tf_operand *x, const tf_operand *y, int swish)
{
    int64_t count = 1, index[TF_MAX_RANK] = {0};
    for (uint32_t k = 0; k < x->rank; k++)
        count *= x->shape[k];
    int64_t at = x->offset; /* element offset of x at `index` */
    for (int64_t e = 0; e < count; e++) {
        if (x->dtype == TF_F64) {
            double a = ((const double *)x->data)[at];
            ((double *)y->data)[y->offset + e] = swish ? a * sigmoid_f64(a) : sigmoid_f64(a);
        } else {
            float a = ((const float *)x->data)[at];
            ((float *)y->data)[y->offset + e] = swish ? a * sigmoid_f32(a) : sigmoid_f32(a);
        }
        /* Next index in column-major order, moving `at` along. */
        for (uint32_t k = 0; k < x->rank; k++) {
            at += x->strides[k];
            if (++index[k] < x->shape[k])
                break;
            at -= x->shape[k] * x->strides[k];
            index[k] = 0;
        }
    }
}

/* Host kernels need host-addressable operands; an engine that passes buffer
   handles instead (data NULL) would need a kernel of its own. */
static tf_status host_memory_check(const tf_ext_kernel_ctx *ctx, const tf_operand *x,
                                   const tf_operand *y)
{
    if (x->data != NULL && y->data != NULL)
        return TF_OK;
    char message[160];
    snprintf(message, sizeof message, "%s: the host kernel cannot run on engine '%s'", ctx->op_name,
             ctx->engine_name);
    ctx->host->report_error(ctx->host->ctx, TF_ERR_UNSUPPORTED, message);
    return TF_ERR_UNSUPPORTED;
}

/* Kernel signatures follow the op's: ctx, then x (a tensor argument), then
   the output. The host calls them through libffi. */
static tf_status swish_host(const tf_ext_kernel_ctx *ctx, const tf_operand *x, const tf_operand *y)
{
    tf_status st = host_memory_check(ctx, x, y);
    if (st == TF_OK)
        elementwise_loop(x, y, 1);
    return st;
}

static tf_status sigmoid_host(const tf_ext_kernel_ctx *ctx, const tf_operand *x,
                              const tf_operand *s)
{
    tf_status st = host_memory_check(ctx, x, s);
    if (st == TF_OK)
        elementwise_loop(x, s, 0);
    return st;
}

/* ---- AD rules ------------------------------------------------------------------ */

/* *out = s * (1 - s). Every handle the ops table returns is released here
   except the result, which goes to the caller. On failure the host has
   recorded the error; the status goes back unchanged. */
static tf_status sigmoid_slope(const tf_ext_rule_ctx *c, tf_ext_tensor *s, tf_ext_tensor **out)
{
    const tf_ext_ops *ops = c->ops;
    tf_ext_tensor *one = NULL, *one_minus_s = NULL;
    tf_status st = ops->scalar(c->session, s, 1.0, &one);
    if (st == TF_OK)
        st = ops->sub(c->session, one, s, &one_minus_s);
    if (st == TF_OK)
        st = ops->mul(c->session, s, one_minus_s, out);
    ops->release(one);
    ops->release(one_minus_s);
    return st;
}

/* *out = s * (1 + x * (1 - s)) with s = example.fused.sigmoid(x), called by
   name so that it is recorded (and differentiable) like any op. */
static tf_status swish_slope(const tf_ext_rule_ctx *c, tf_ext_tensor *x, tf_ext_tensor **out)
{
    const tf_ext_ops *ops = c->ops;
    tf_ext_tensor *s = NULL, *one = NULL, *t1 = NULL, *t2 = NULL, *t3 = NULL;
    tf_status st = ops->call(c->session, MODULE_ID ".sigmoid", &x, 1, NULL, 0, &s, 1);
    if (st == TF_OK)
        st = ops->scalar(c->session, x, 1.0, &one);
    if (st == TF_OK)
        st = ops->sub(c->session, one, s, &t1); /* 1 - s */
    if (st == TF_OK)
        st = ops->mul(c->session, x, t1, &t2); /* x (1 - s) */
    if (st == TF_OK)
        st = ops->add(c->session, one, t2, &t3); /* 1 + x (1 - s) */
    if (st == TF_OK)
        st = ops->mul(c->session, s, t3, out);
    ops->release(s);
    ops->release(one);
    ops->release(t1);
    ops->release(t2);
    ops->release(t3);
    return st;
}

/* *out = v * slope, consuming nothing: v is borrowed, slope released. */
static tf_status times_slope(const tf_ext_rule_ctx *c, tf_ext_tensor *v, tf_ext_tensor *slope,
                             tf_ext_tensor **out)
{
    tf_status st = c->ops->mul(c->session, v, slope, out);
    c->ops->release(slope);
    return st;
}

/* Reverse mode: the cotangent of x is cot * swish'(x). A NULL cotangent means
   zero: leaving the result NULL says "zero" back. */
static tf_status swish_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                           const int *need, tf_ext_tensor **cot_in)
{
    if (!need[0] || cot == NULL)
        return TF_OK;
    tf_ext_tensor *slope = NULL;
    tf_status st = swish_slope(c, call->tensors[0], &slope);
    return st == TF_OK ? times_slope(c, cot, slope, &cot_in[0]) : st;
}

/* Forward mode: the tangent of y is tan * swish'(x) (NULL tangent: zero). */
static tf_status swish_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                           tf_ext_tensor *const *tangents, tf_ext_tensor **tangent_out)
{
    if (tangents[0] == NULL)
        return TF_OK;
    tf_ext_tensor *slope = NULL;
    tf_status st = swish_slope(c, call->tensors[0], &slope);
    return st == TF_OK ? times_slope(c, tangents[0], slope, tangent_out) : st;
}

/* sigmoid's rules reuse the recorded output s (call->output) instead of
   recomputing it. */
static tf_status sigmoid_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                             const int *need, tf_ext_tensor **cot_in)
{
    if (!need[0] || cot == NULL)
        return TF_OK;
    tf_ext_tensor *slope = NULL;
    tf_status st = sigmoid_slope(c, call->output, &slope);
    return st == TF_OK ? times_slope(c, cot, slope, &cot_in[0]) : st;
}

static tf_status sigmoid_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                             tf_ext_tensor *const *tangents, tf_ext_tensor **tangent_out)
{
    if (tangents[0] == NULL)
        return TF_OK;
    tf_ext_tensor *slope = NULL;
    tf_status st = sigmoid_slope(c, call->output, &slope);
    return st == TF_OK ? times_slope(c, tangents[0], slope, tangent_out) : st;
}

/* ---- op descriptors (static storage: the host keeps pointers to them) ---------- */

static const uint32_t x_kinds[] = {TF_EXT_ARG_TENSOR};
static const char *const x_names[] = {"x"};

/* The kernel for each engine this module serves, by the engine's plugin name. */
static const tf_ext_kernel swish_kernels[] = {
    {"cpu", TF_EXT_KERNEL_FN(swish_host)},
    {"example", TF_EXT_KERNEL_FN(swish_host)},
};
static const tf_ext_kernel sigmoid_kernels[] = {
    {"cpu", TF_EXT_KERNEL_FN(sigmoid_host)},
    {"example", TF_EXT_KERNEL_FN(sigmoid_host)},
};

static const tf_ext_op swish_op = {
    .struct_size = sizeof(tf_ext_op),
    .n_args = 1,
    .n_outputs = 1,
    .n_kernels = sizeof swish_kernels / sizeof swish_kernels[0],
    .name = "swish",
    .arg_kinds = x_kinds,
    .arg_names = x_names,
    .infer = infer_elementwise,
    .kernels = swish_kernels,
    .vjp = swish_vjp,
    .jvp = swish_jvp,
    .doc = "x * sigmoid(x), fused",
};

static const tf_ext_op sigmoid_op = {
    .struct_size = sizeof(tf_ext_op),
    .n_args = 1,
    .n_outputs = 1,
    .n_kernels = sizeof sigmoid_kernels / sizeof sigmoid_kernels[0],
    .name = "sigmoid",
    .arg_kinds = x_kinds,
    .arg_names = x_names,
    .infer = infer_elementwise,
    .kernels = sigmoid_kernels,
    .vjp = sigmoid_vjp,
    .jvp = sigmoid_jvp,
    .doc = "1 / (1 + exp(-x))",
};

/* ---- install hook, descriptor, entry symbol --------------------------------------- */

/* Called once per runtime the module is installed into, possibly on several
   threads at once: it only declares ops. If add_op fails the host discards
   the whole install, so the first error can simply be returned. */
static tf_status install(const tf_host_api *host, const tf_ext_registrar *registrar)
{
    tf_status st = registrar->add_op(registrar->candidate, &sigmoid_op);
    if (st == TF_OK)
        st = registrar->add_op(registrar->candidate, &swish_op);
    return st;
}

static const tf_extension_module_desc module_desc = {
    .struct_size = sizeof(tf_extension_module_desc),
    .abi_major = TF_EXTENSION_ABI_MAJOR,
    .abi_minor = TF_EXTENSION_ABI_MINOR,
    .id = MODULE_ID,
    .version = MODULE_VERSION,
    .description = "Example module from the tenferro SDK template: fused swish with AD rules",
    .install = install,
};

/* The one exported symbol. No side effects: refuse a host of another major. */
TF_EXTENSION_EXPORT const tf_extension_module_desc *
tf_extension_module_v1(const tf_host_api *host, uint32_t abi_major, uint32_t abi_minor);

TF_EXTENSION_EXPORT const tf_extension_module_desc *
tf_extension_module_v1(const tf_host_api *host, uint32_t abi_major, uint32_t abi_minor)
{
    return abi_major == TF_EXTENSION_ABI_MAJOR ? &module_desc : NULL;
}
