/*
 * example_engine.c - a minimal, complete tenferro engine plugin.
 *
 * The starting point for an engine of your own: copy this folder, rename
 * "example" everywhere, then replace the kernels. It is a plain host-memory
 * engine (the host reads and writes its memory directly) with one device and
 * no threads, and it implements a subset of the primitives of engine_abi.h
 * for f32 and f64:
 *
 *   FILL, IOTA, UNARY (every float op), BINARY (every float op), CONVERT
 *   (f32 <-> f64, unchecked and checked), COPY, REDUCE (sum, prod, max, min
 *   over any axes) and DOT_GENERAL (any contracting and batch axes),
 *
 * and, built against engine ABI 1.4 or later, two for c64 and c128 as an
 * example of complex dtypes (engine_abi.h, "Complex dtypes"): UNARY NEG and
 * CONJ, and DOT_GENERAL with its conjugation flags,
 *
 * each for every layout the ABI allows (any strides, including 0 and
 * negative ones, and an element offset). Everything else is answered "no" by
 * supports(): the host then never calls execute for it, and an application
 * asking for it gets TF_ERR_UNSUPPORTED naming the op, dtype and engine.
 *
 * The rules this file follows (docs/plugin-authors.md explains each):
 * - include only <tenferro/engine_abi.h>; never link libtenferro: everything
 *   from the host (allocation, errors, logging) arrives in tf_host_api;
 * - export one symbol, tf_engine_plugin_v1 (TF_ENGINE_EXPORT), and build with
 *   hidden visibility so that nothing else leaks;
 * - keep no global mutable state: init() makes a context, create() an
 *   instance, and both are freed through the host's allocator;
 * - read a field of a size-prefixed struct from the host only when
 *   TF_ABI_HAS_FIELD says the host's version has it;
 * - report every failure with host->report_error (on the calling thread),
 *   naming the op and the values, then return the status.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <tenferro/engine_abi.h>

#define ENGINE_NAME "example"
#define ENGINE_VERSION "0.1.0"
#define DEVICE_NAME "Example host device"

/* The plugin context made by init(): only the host table, no globals. */
typedef struct example_plugin {
    const tf_host_api *host;
} example_plugin;

/* One engine instance. The host serialises calls on an instance, except
   buffer_alloc/buffer_free, which here touch nothing but the host allocator
   (thread-safe), so the instance needs no lock. */
struct tf_engine_state {
    const tf_host_api *host;
};

/* A buffer of host memory. The host gets `data` as the buffer's host
   address and passes it back in tf_operand.data. */
struct tf_engine_buffer {
    void *data;
    size_t nbytes;
};

/* ---- errors ----------------------------------------------------------------- */

static tf_status fail(const tf_host_api *host, tf_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records the detail for the calling thread, then hands back the status. */
static tf_status fail(const tf_host_api *host, tf_status status, const char *fmt, ...)
{
    char message[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    host->report_error(host->ctx, status, message);
    return status;
}

/* ---- plugin-level functions (any thread, concurrently) ---------------------- */

static tf_status ex_init(const tf_host_api *host, void **plugin_ctx)
{
    example_plugin *pl = host->alloc(host->ctx, sizeof *pl, 0);
    if (pl == NULL)
        return fail(host, TF_ERR_OUT_OF_MEMORY, ENGINE_NAME ": init: out of memory");
    pl->host = host;
    *plugin_ctx = pl;
    return TF_OK;
}

static void ex_shutdown(void *plugin_ctx)
{
    example_plugin *pl = plugin_ctx;
    pl->host->free(pl->host->ctx, pl);
}

static uint32_t ex_device_count(void *plugin_ctx)
{
    return 1;
}

static tf_status ex_device_info(void *plugin_ctx, uint32_t index, tf_device_info *info)
{
    const example_plugin *pl = plugin_ctx;
    if (index != 0)
        return fail(pl->host, TF_ERR_VALIDATION, ENGINE_NAME ": no device %u (there is 1)", index);
    /* The host set info->struct_size to its own sizeof: fill a struct of our
       version and copy only the part both versions know. */
    tf_device_info mine;
    memset(&mine, 0, sizeof mine);
    mine.type = TF_DEVICE_CPU;
    mine.flags = TF_DEVICE_FLAG_F64 | TF_DEVICE_FLAG_HOST_MEMORY | TF_DEVICE_FLAG_SOFTWARE;
    snprintf(mine.name, sizeof mine.name, "%s", DEVICE_NAME);
    snprintf(mine.driver, sizeof mine.driver, "%s %s", ENGINE_NAME, ENGINE_VERSION);
    uint32_t host_size = info->struct_size;
    size_t n = host_size < sizeof mine ? host_size : sizeof mine;
    memcpy(info, &mine, n);
    info->struct_size = host_size;
    return TF_OK;
}

/* Options: one device (index 0), no threads of its own (any `threads` value
   is fine: it means "up to N"), and no extra keys. Unknown keys are refused so
   that a typo in a configuration file is reported, not ignored. */
static tf_status check_options(const tf_host_api *host, const tf_engine_options *o)
{
    if (o == NULL)
        return TF_OK;
    if (TF_ABI_HAS_FIELD(o, tf_engine_options, device_index) && o->device_index != 0)
        return fail(host, TF_ERR_VALIDATION,
                    ENGINE_NAME ": create: device_index %u does not exist (there is 1 device)",
                    o->device_index);
    if (TF_ABI_HAS_FIELD(o, tf_engine_options, threads) && o->threads < 0)
        return fail(host, TF_ERR_VALIDATION,
                    ENGINE_NAME ": create: option threads = %d is negative", (int)o->threads);
    if (TF_ABI_HAS_FIELD(o, tf_engine_options, device_name) && o->device_name != NULL &&
        strstr(DEVICE_NAME, o->device_name) == NULL)
        return fail(host, TF_ERR_VALIDATION,
                    ENGINE_NAME ": create: device_name \"%s\" matches no device (the device is "
                                "\"" DEVICE_NAME "\")",
                    o->device_name);
    if (TF_ABI_HAS_FIELD(o, tf_engine_options, extra_values) && o->n_extra > 0)
        return fail(host, TF_ERR_VALIDATION,
                    ENGINE_NAME ": create: unknown option \"%s\" (this engine takes none)",
                    o->extra_keys != NULL && o->extra_keys[0] != NULL ? o->extra_keys[0] : "?");
    return TF_OK;
}

static tf_status ex_create(void *plugin_ctx, const tf_engine_options *options,
                           tf_engine_state **out)
{
    const example_plugin *pl = plugin_ctx;
    tf_status st = check_options(pl->host, options);
    if (st != TF_OK)
        return st;
    tf_engine_state *e = pl->host->alloc(pl->host->ctx, sizeof *e, 0);
    if (e == NULL)
        return fail(pl->host, TF_ERR_OUT_OF_MEMORY, ENGINE_NAME ": create: out of memory");
    e->host = pl->host;
    *out = e;
    return TF_OK;
}

static void ex_destroy(tf_engine_state *e)
{
    e->host->free(e->host->ctx, e);
}

/* ---- memory ----------------------------------------------------------------- */

static tf_status ex_buffer_alloc(tf_engine_state *e, size_t nbytes, tf_engine_buffer **out,
                                 void **host_ptr)
{
    tf_engine_buffer *b = e->host->alloc(e->host->ctx, sizeof *b, 0);
    void *data = b != NULL ? e->host->alloc(e->host->ctx, nbytes, 64) : NULL;
    if (data == NULL) {
        e->host->free(e->host->ctx, b); /* NULL is a no-op */
        return fail(e->host, TF_ERR_OUT_OF_MEMORY,
                    ENGINE_NAME ": buffer_alloc: cannot allocate %zu bytes", nbytes);
    }
    b->data = data;
    b->nbytes = nbytes;
    *out = b;
    *host_ptr = data;
    return TF_OK;
}

static void ex_buffer_free(tf_engine_state *e, tf_engine_buffer *b)
{
    e->host->free(e->host->ctx, b->data);
    e->host->free(e->host->ctx, b);
}

/* The host checks offsets against the buffer sizes; the engine checks again
   because a failed check here costs nothing and a wrong copy corrupts memory. */
static int range_ok(const tf_engine_buffer *b, size_t offset, size_t nbytes)
{
    return offset <= b->nbytes && nbytes <= b->nbytes - offset;
}

static tf_status ex_upload(tf_engine_state *e, tf_engine_buffer *b, size_t offset, const void *src,
                           size_t nbytes)
{
    if (!range_ok(b, offset, nbytes))
        return fail(e->host, TF_ERR_VALIDATION,
                    ENGINE_NAME ": upload of %zu bytes at %zu overruns a buffer of %zu", nbytes,
                    offset, b->nbytes);
    memcpy((unsigned char *)b->data + offset, src, nbytes);
    return TF_OK;
}

static tf_status ex_download(tf_engine_state *e, const tf_engine_buffer *b, size_t offset,
                             void *dst, size_t nbytes)
{
    if (!range_ok(b, offset, nbytes))
        return fail(e->host, TF_ERR_VALIDATION,
                    ENGINE_NAME ": download of %zu bytes at %zu overruns a buffer of %zu", nbytes,
                    offset, b->nbytes);
    memcpy(dst, (const unsigned char *)b->data + offset, nbytes);
    return TF_OK;
}

static tf_status ex_buffer_copy(tf_engine_state *e, const tf_engine_buffer *src, size_t src_offset,
                                tf_engine_buffer *dst, size_t dst_offset, size_t nbytes)
{
    if (!range_ok(src, src_offset, nbytes) || !range_ok(dst, dst_offset, nbytes))
        return fail(e->host, TF_ERR_VALIDATION,
                    ENGINE_NAME ": buffer_copy of %zu bytes overruns a buffer", nbytes);
    /* memmove: source and destination may be the same buffer. */
    memmove((unsigned char *)dst->data + dst_offset, (const unsigned char *)src->data + src_offset,
            nbytes);
    return TF_OK;
}

static tf_status ex_synchronize(tf_engine_state *e)
{
    return TF_OK; /* every execute finishes before it returns */
}

/* ---- supports --------------------------------------------------------------- */

static int is_float(uint32_t dtype)
{
    return dtype == TF_F32 || dtype == TF_F64;
}

/* Complex dtypes exist from ABI 1.4 on: built against an older header, the
   engine has none (and the host never asks it about them). */
#if TF_ENGINE_ABI_MINOR >= 4
static int is_complex(uint32_t dtype)
{
    return dtype == TF_C64 || dtype == TF_C128;
}

/* The UNARY ops done for complex operands: NEG and CONJ. */
static int complex_unary_op(uint32_t op)
{
    return op == TF_UNARY_NEG || op == TF_UNARY_CONJ;
}

/* Part k (0: real, 1: imaginary) of the complex element at element offset pos
   (data is the operand's element 0, as for every operand of this engine). */
static double read_part(const tf_operand *o, int64_t pos, int k)
{
    return o->dtype == TF_C128 ? ((const double *)o->data)[2 * pos + k]
                               : (double)((const float *)o->data)[2 * pos + k];
}

static void write_complex(const tf_operand *o, int64_t pos, double re, double im)
{
    if (o->dtype == TF_C128) {
        ((double *)o->data)[2 * pos] = re;
        ((double *)o->data)[2 * pos + 1] = im;
    } else {
        ((float *)o->data)[2 * pos] = (float)re;
        ((float *)o->data)[2 * pos + 1] = (float)im;
    }
}

/* DOT_GENERAL's conjugation flags (a host of ABI 1.3 or older sends none). */
static uint32_t dot_conjugate(const tf_dot_general_params *p)
{
    return TF_ABI_HAS_FIELD(p, tf_dot_general_params, conjugate) ? p->conjugate : 0;
}
#define EXAMPLE_CONJ_LHS TF_DOT_CONJ_LHS
#define EXAMPLE_CONJ_RHS TF_DOT_CONJ_RHS
#else
static int is_complex(uint32_t dtype)
{
    (void)dtype;
    return 0;
}

static int complex_unary_op(uint32_t op)
{
    (void)op;
    return 0;
}

/* Never called: no operand is complex under an older header. */
static double read_part(const tf_operand *o, int64_t pos, int k)
{
    (void)o, (void)pos, (void)k;
    return 0;
}

static void write_complex(const tf_operand *o, int64_t pos, double re, double im)
{
    (void)o, (void)pos, (void)re, (void)im;
}

static uint32_t dot_conjugate(const tf_dot_general_params *p)
{
    (void)p;
    return 0;
}
#define EXAMPLE_CONJ_LHS 1u
#define EXAMPLE_CONJ_RHS 2u
#endif

/*
 * Exactly what execute() implements, and nothing more: the host trusts the
 * answer (and remembers it), and a conformance check tests every combination
 * answered with 1. Unknown primitives, including ones newer than this header,
 * get 0.
 */
static int ex_supports(tf_engine_state *e, uint32_t prim, uint32_t op, const uint32_t *dt,
                       uint32_t n)
{
    switch (prim) {
    case TF_PRIM_FILL:
    case TF_PRIM_IOTA: return n == 1 && is_float(dt[0]);
    case TF_PRIM_UNARY:
        /* the ops after CEIL are for complex dtypes (ABI 1.4): of those only CONJ here,
           and of the float ops only NEG for complex operands */
        if (n == 2 && is_complex(dt[0]) && dt[1] == dt[0])
            return complex_unary_op(op);
        return n == 2 && is_float(dt[0]) && dt[1] == dt[0] && op <= TF_UNARY_CEIL &&
               op != TF_UNARY_LOGICAL_NOT;
    case TF_PRIM_BINARY:
        /* AND, OR and XOR are for integers and bool only. */
        return n == 3 && is_float(dt[0]) && dt[1] == dt[0] && dt[2] == dt[0] && op <= TF_BINARY_REM;
    case TF_PRIM_CONVERT: return n == 2 && is_float(dt[0]) && is_float(dt[1]);
    case TF_PRIM_COPY: return n == 2 && is_float(dt[0]) && dt[1] == dt[0];
    case TF_PRIM_REDUCE:
        return n == 2 && is_float(dt[0]) && dt[1] == dt[0] && op < TF_REDUCE_COUNT_;
    case TF_PRIM_DOT_GENERAL:
        return n == 3 && (is_float(dt[0]) || is_complex(dt[0])) && dt[1] == dt[0] &&
               dt[2] == dt[0];
    default: return 0;
    }
}

/* ---- walking strided operands ----------------------------------------------- */

#define MAX_OPERANDS 3

/*
 * Visits every element of a shape in column-major order, keeping the element
 * offset of each operand (offset + sum index[k] * strides[k]). Strides may be
 * anything the ABI allows: 0 (broadcast), negative (reversed), or not dense.
 */
typedef struct walker {
    uint32_t rank, n;
    const int64_t *shape;
    const int64_t *strides[MAX_OPERANDS];
    int64_t index[TF_MAX_RANK];
    int64_t pos[MAX_OPERANDS];
} walker;

/* Returns the number of elements (0 when an extent is 0). */
static int64_t walker_init(walker *w, const tf_operand *shape_of, uint32_t n,
                           const tf_operand *const *ops)
{
    int64_t count = 1;
    w->rank = shape_of->rank;
    w->n = n;
    w->shape = shape_of->shape;
    for (uint32_t k = 0; k < w->rank; k++) {
        w->index[k] = 0;
        count *= w->shape[k];
    }
    for (uint32_t i = 0; i < n; i++) {
        w->strides[i] = ops[i]->strides;
        w->pos[i] = ops[i]->offset;
    }
    return count;
}

static void walker_next(walker *w)
{
    for (uint32_t k = 0; k < w->rank; k++) {
        for (uint32_t i = 0; i < w->n; i++)
            w->pos[i] += w->strides[i][k];
        if (++w->index[k] < w->shape[k])
            return;
        /* Carry: back to the start of axis k, on to axis k + 1. */
        for (uint32_t i = 0; i < w->n; i++)
            w->pos[i] -= w->shape[k] * w->strides[i][k];
        w->index[k] = 0;
    }
}

/* Element `pos` of an operand of dtype T (data is element 0 of the memory). */
#define AT(T, operand, pos) (((T *)(operand)->data)[(pos)])

/* ---- scalar functions ------------------------------------------------------- */

/* One body per dtype: float kernels use the float functions of libm (expf,
   ...), double kernels the double ones, as the CPU reference engine does. */
#define DEFINE_SCALAR_FUNCTIONS(T, SUF, F)                                                     \
    static T sigmoid_##SUF(T a)                                                                \
    {                                                                                          \
        /* Only exp of a non-positive number: no overflow for large |a|. */                    \
        if (a >= 0)                                                                            \
            return (T)1 / ((T)1 + exp##F(-a));                                                 \
        T z = exp##F(a);                                                                       \
        return z / ((T)1 + z);                                                                 \
    }                                                                                          \
    static T unary_##SUF(uint32_t op, T a)                                                     \
    {                                                                                          \
        switch (op) {                                                                          \
        case TF_UNARY_NEG: return -a;                                                          \
        case TF_UNARY_ABS: return fabs##F(a);                                                  \
        case TF_UNARY_SIGN: return a > 0 ? (T)1 : a < 0 ? (T)-1 : a == 0 ? (T)0 : a; /* NaN */ \
        case TF_UNARY_EXP: return exp##F(a);                                                   \
        case TF_UNARY_LOG: return log##F(a);                                                   \
        case TF_UNARY_EXPM1: return expm1##F(a);                                               \
        case TF_UNARY_LOG1P: return log1p##F(a);                                               \
        case TF_UNARY_SIN: return sin##F(a);                                                   \
        case TF_UNARY_COS: return cos##F(a);                                                   \
        case TF_UNARY_TANH: return tanh##F(a);                                                 \
        case TF_UNARY_SQRT: return sqrt##F(a);                                                 \
        case TF_UNARY_RSQRT: return (T)1 / sqrt##F(a);                                         \
        case TF_UNARY_ERF: return erf##F(a);                                                   \
        case TF_UNARY_SIGMOID: return sigmoid_##SUF(a);                                        \
        case TF_UNARY_RECIPROCAL: return (T)1 / a;                                             \
        case TF_UNARY_SQUARE: return a * a;                                                    \
        case TF_UNARY_FLOOR: return floor##F(a);                                               \
        case TF_UNARY_CEIL: return ceil##F(a);                                                 \
        }                                                                                      \
        return a; /* not reached: supports() admits only the ops above */                      \
    }                                                                                          \
    static T binary_##SUF(uint32_t op, T a, T b)                                               \
    {                                                                                          \
        switch (op) {                                                                          \
        case TF_BINARY_ADD: return a + b;                                                      \
        case TF_BINARY_SUB: return a - b;                                                      \
        case TF_BINARY_MUL: return a * b;                                                      \
        case TF_BINARY_DIV: return a / b;                                                      \
        case TF_BINARY_POW: return pow##F(a, b);                                               \
        /* MAX and MIN are IEEE 754-2019 maximum and minimum: NaN propagates (fmax would     \
           drop it; a + b is NaN then) and -0 < +0, so max(+0, -0) = +0 either way round. */   \
        case TF_BINARY_MAX:                                                                    \
            return a != a || b != b ? a + b : a > b || (a == b && !signbit(a)) ? a : b;        \
        case TF_BINARY_MIN:                                                                    \
            return a != a || b != b ? a + b : a < b || (a == b && signbit(a)) ? a : b;         \
        case TF_BINARY_REM: return fmod##F(a, b);                                              \
        }                                                                                      \
        return a; /* not reached */                                                            \
    }

DEFINE_SCALAR_FUNCTIONS(float, f32, f)
DEFINE_SCALAR_FUNCTIONS(double, f64, )

/* ---- kernels ---------------------------------------------------------------- */

/* FILL: out may be strided, even with repeated addresses (stride 0). */
static tf_status exec_fill(const tf_exec *x)
{
    const tf_fill_params *p = x->params;
    const tf_operand *out = x->outputs[0];
    walker w;
    int64_t count = walker_init(&w, out, 1, &out);
    for (int64_t i = 0; i < count; i++, walker_next(&w)) {
        if (out->dtype == TF_F32)
            AT(float, out, w.pos[0]) = (float)p->value.f;
        else
            AT(double, out, w.pos[0]) = p->value.f;
    }
    return TF_OK;
}

/* IOTA: each element is its own index along params.axis. */
static tf_status exec_iota(const tf_exec *x)
{
    const tf_iota_params *p = x->params;
    const tf_operand *out = x->outputs[0];
    walker w;
    int64_t count = walker_init(&w, out, 1, &out);
    for (int64_t i = 0; i < count; i++, walker_next(&w)) {
        int64_t v = w.index[p->axis];
        if (out->dtype == TF_F32)
            AT(float, out, w.pos[0]) = (float)v;
        else
            AT(double, out, w.pos[0]) = (double)v;
    }
    return TF_OK;
}

/* A real engine moves the switch on the op out of the loop (one loop per op,
   which the compiler vectorises); here clarity wins. */
static tf_status exec_unary(const tf_exec *x)
{
    const tf_unary_params *p = x->params;
    const tf_operand *ops[2] = {x->outputs[0], x->inputs[0]};
    walker w;
    int64_t count = walker_init(&w, ops[0], 2, ops);
    for (int64_t i = 0; i < count; i++, walker_next(&w)) {
        if (is_complex(ops[0]->dtype)) { /* NEG negates both parts, CONJ the imaginary one */
            double re = read_part(ops[1], w.pos[1], 0), im = read_part(ops[1], w.pos[1], 1);
            write_complex(ops[0], w.pos[0], p->op == TF_UNARY_NEG ? -re : re, -im);
        } else if (ops[0]->dtype == TF_F32)
            AT(float, ops[0], w.pos[0]) = unary_f32(p->op, AT(const float, ops[1], w.pos[1]));
        else
            AT(double, ops[0], w.pos[0]) = unary_f64(p->op, AT(const double, ops[1], w.pos[1]));
    }
    return TF_OK;
}

static tf_status exec_binary(const tf_exec *x)
{
    const tf_binary_params *p = x->params;
    const tf_operand *ops[3] = {x->outputs[0], x->inputs[0], x->inputs[1]};
    walker w;
    int64_t count = walker_init(&w, ops[0], 3, ops);
    for (int64_t i = 0; i < count; i++, walker_next(&w)) {
        if (ops[0]->dtype == TF_F32)
            AT(float, ops[0], w.pos[0]) = binary_f32(p->op, AT(const float, ops[1], w.pos[1]),
                                                     AT(const float, ops[2], w.pos[2]));
        else
            AT(double, ops[0], w.pos[0]) = binary_f64(p->op, AT(const double, ops[1], w.pos[1]),
                                                      AT(const double, ops[2], w.pos[2]));
    }
    return TF_OK;
}

/* Reads element `pos` of a float operand as a double (exact for both dtypes). */
static double read_float(const tf_operand *o, int64_t pos)
{
    return o->dtype == TF_F32 ? (double)AT(const float, o, pos) : AT(const double, o, pos);
}

/*
 * CONVERT between f32 and f64. f64 -> f32 rounds to nearest (overflow gives
 * inf). Checked: a finite f64 that overflows f32 is TF_ERR_OUT_OF_RANGE;
 * the whole input is checked before anything is written, so a failed call
 * leaves the output untouched.
 */
static tf_status exec_convert(const tf_engine_state *e, const tf_exec *x)
{
    const tf_convert_params *p = x->params;
    const tf_operand *ops[2] = {x->outputs[0], x->inputs[0]};
    walker w;
    int64_t count;
    if (p->checked && ops[1]->dtype == TF_F64 && ops[0]->dtype == TF_F32) {
        count = walker_init(&w, ops[0], 2, ops);
        for (int64_t i = 0; i < count; i++, walker_next(&w)) {
            double v = AT(const double, ops[1], w.pos[1]);
            if (isfinite(v) && isinf((float)v))
                return fail(e->host, TF_ERR_OUT_OF_RANGE,
                            ENGINE_NAME ": CONVERT f64 -> f32 (checked): value %.17g is not "
                                        "representable",
                            v);
        }
    }
    count = walker_init(&w, ops[0], 2, ops);
    for (int64_t i = 0; i < count; i++, walker_next(&w)) {
        double v = read_float(ops[1], w.pos[1]);
        if (ops[0]->dtype == TF_F32)
            AT(float, ops[0], w.pos[0]) = (float)v;
        else
            AT(double, ops[0], w.pos[0]) = v;
    }
    return TF_OK;
}

/* COPY: both sides strided (transposes, broadcasts, slices, strided writes). */
static tf_status exec_copy(const tf_exec *x)
{
    const tf_operand *ops[2] = {x->outputs[0], x->inputs[0]};
    size_t size = ops[0]->dtype == TF_F32 ? sizeof(float) : sizeof(double);
    walker w;
    int64_t count = walker_init(&w, ops[0], 2, ops);
    for (int64_t i = 0; i < count; i++, walker_next(&w))
        memcpy((char *)ops[0]->data + w.pos[0] * (int64_t)size,
               (const char *)ops[1]->data + w.pos[1] * (int64_t)size, size);
    return TF_OK;
}

/*
 * REDUCE over the axes of params.axes_mask: out has in's rank, extent 1 on
 * each reduced axis. Viewing out with stride 0 on those axes gives every
 * input element the address of its group's result; each group starts at the
 * identity (SUM 0, PROD 1, MAX -inf, MIN +inf: what an empty group gives)
 * and folds its elements in with the binary op of the same name.
 */
static tf_status exec_reduce(const tf_exec *x)
{
    static const uint32_t fold[] = {TF_BINARY_ADD, TF_BINARY_MUL, TF_BINARY_MAX, TF_BINARY_MIN};
    static const double identity[] = {0.0, 1.0, -INFINITY, INFINITY};
    const tf_reduce_params *p = x->params;
    const tf_operand *in = x->inputs[0], *out = x->outputs[0];
    walker w;
    int64_t count = walker_init(&w, out, 1, &out);
    for (int64_t i = 0; i < count; i++, walker_next(&w)) {
        if (out->dtype == TF_F32)
            AT(float, out, w.pos[0]) = (float)identity[p->op];
        else
            AT(double, out, w.pos[0]) = identity[p->op];
    }
    tf_operand grouped = *out; /* the same memory, one address per group */
    int64_t strides[TF_MAX_RANK];
    for (uint32_t k = 0; k < out->rank; k++)
        strides[k] = (p->axes_mask >> k) & 1u ? 0 : out->strides[k];
    grouped.strides = strides;
    const tf_operand *ops[2] = {&grouped, in};
    count = walker_init(&w, in, 2, ops);
    for (int64_t i = 0; i < count; i++, walker_next(&w)) {
        if (out->dtype == TF_F32)
            AT(float, out, w.pos[0]) =
                binary_f32(fold[p->op], AT(float, out, w.pos[0]), AT(const float, in, w.pos[1]));
        else
            AT(double, out, w.pos[0]) = binary_f64(fold[p->op], AT(double, out, w.pos[0]),
                                                   AT(const double, in, w.pos[1]));
    }
    return TF_OK;
}

/*
 * DOT_GENERAL: out's axes are lhs's free axes (in neither list, ascending),
 * then rhs's, then the batch pairs in params' order; each element sums
 * lhs * rhs over every index of the contracting axes, in double. For an
 * output element the free and batch indices fix where lhs and rhs start;
 * the contracting indices then run like a counter.
 */
static int is_listed(uint32_t axis, const uint32_t *list, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (list[i] == axis)
            return 1;
    return 0;
}

/* Element offset in `o` of the free axes (taking indices from idx in turn) and the batch
   axes (from batch_idx), as for output index idx. */
static int64_t dot_start(const tf_operand *o, const tf_dot_general_params *p, int lhs,
                         const int64_t *idx, const int64_t *batch_idx)
{
    const uint32_t *contracting = lhs ? p->lhs_contracting : p->rhs_contracting;
    const uint32_t *batch = lhs ? p->lhs_batch : p->rhs_batch;
    int64_t at = o->offset;
    uint32_t used = 0;
    for (uint32_t k = 0; k < o->rank; k++)
        if (!is_listed(k, contracting, p->n_contracting) && !is_listed(k, batch, p->n_batch))
            at += idx[used++] * o->strides[k];
    for (uint32_t i = 0; i < p->n_batch; i++)
        at += batch_idx[i] * o->strides[batch[i]];
    return at;
}

/* The sum over the contraction of a * b into *re (and, complex, *im), a complex
   operand conjugated where `conj` says (EXAMPLE_CONJ_LHS, EXAMPLE_CONJ_RHS). */
static void dot_element(const tf_operand *a, const tf_operand *b, const tf_dot_general_params *p,
                        int64_t at_a, int64_t at_b, uint32_t conj, double *re, double *im)
{
    int64_t c[TF_MAX_RANK] = {0};
    *re = *im = 0;
    for (uint32_t i = 0; i < p->n_contracting; i++)
        if (a->shape[p->lhs_contracting[i]] == 0)
            return; /* an empty contraction */
    for (;;) {
        if (is_complex(a->dtype)) {
            double ar = read_part(a, at_a, 0), ai = read_part(a, at_a, 1);
            double br = read_part(b, at_b, 0), bi = read_part(b, at_b, 1);
            ai = conj & EXAMPLE_CONJ_LHS ? -ai : ai;
            bi = conj & EXAMPLE_CONJ_RHS ? -bi : bi;
            *re += ar * br - ai * bi;
            *im += ar * bi + ai * br;
        } else {
            *re += read_float(a, at_a) * read_float(b, at_b);
        }
        uint32_t i = 0;
        for (; i < p->n_contracting; i++) { /* the next contracting index */
            at_a += a->strides[p->lhs_contracting[i]];
            at_b += b->strides[p->rhs_contracting[i]];
            if (++c[i] < a->shape[p->lhs_contracting[i]])
                break;
            at_a -= c[i] * a->strides[p->lhs_contracting[i]];
            at_b -= c[i] * b->strides[p->rhs_contracting[i]];
            c[i] = 0;
        }
        if (i == p->n_contracting)
            return;
    }
}

static tf_status exec_dot(const tf_exec *x)
{
    const tf_dot_general_params *p = x->params;
    const tf_operand *a = x->inputs[0], *b = x->inputs[1], *out = x->outputs[0];
    uint32_t a_free = a->rank - p->n_contracting - p->n_batch;
    uint32_t b_free = b->rank - p->n_contracting - p->n_batch;
    walker w;
    int64_t count = walker_init(&w, out, 1, &out);
    for (int64_t i = 0; i < count; i++, walker_next(&w)) {
        const int64_t *batch_idx = w.index + a_free + b_free;
        double v, im;
        dot_element(a, b, p, dot_start(a, p, 1, w.index, batch_idx),
                    dot_start(b, p, 0, w.index + a_free, batch_idx), dot_conjugate(p), &v, &im);
        if (is_complex(out->dtype))
            write_complex(out, w.pos[0], v, im);
        else if (out->dtype == TF_F32)
            AT(float, out, w.pos[0]) = (float)v;
        else
            AT(double, out, w.pos[0]) = v;
    }
    return TF_OK;
}

/* The operand counts and params each primitive needs: libtenferro validates
   every call before it gets here, but another host might not, and a wrong
   count here would read out of bounds. */
static int exec_shape_ok(const tf_exec *x, uint32_t n_in, int needs_params)
{
    return x->n_inputs == n_in && x->n_outputs == 1 && (!needs_params || x->params != NULL);
}

static tf_status ex_execute(tf_engine_state *e, const tf_exec *x)
{
    switch (x->prim) {
    case TF_PRIM_FILL:
        if (exec_shape_ok(x, 0, 1))
            return exec_fill(x);
        break;
    case TF_PRIM_IOTA:
        if (exec_shape_ok(x, 0, 1) &&
            ((const tf_iota_params *)x->params)->axis < x->outputs[0]->rank)
            return exec_iota(x);
        break;
    case TF_PRIM_UNARY:
        if (exec_shape_ok(x, 1, 1))
            return exec_unary(x);
        break;
    case TF_PRIM_BINARY:
        if (exec_shape_ok(x, 2, 1))
            return exec_binary(x);
        break;
    case TF_PRIM_CONVERT:
        if (exec_shape_ok(x, 1, 1))
            return exec_convert(e, x);
        break;
    case TF_PRIM_COPY:
        if (exec_shape_ok(x, 1, 0))
            return exec_copy(x);
        break;
    case TF_PRIM_REDUCE:
        if (exec_shape_ok(x, 1, 1) && ((const tf_reduce_params *)x->params)->op < TF_REDUCE_COUNT_)
            return exec_reduce(x);
        break;
    case TF_PRIM_DOT_GENERAL:
        if (exec_shape_ok(x, 2, 1))
            return exec_dot(x);
        break;
    default:
        /* supports() answered 0 for it, so only a host breaking the ABI gets here */
        return fail(e->host, TF_ERR_UNSUPPORTED,
                    ENGINE_NAME ": primitive %u is not one this engine supports", x->prim);
    }
    return fail(e->host, TF_ERR_VALIDATION,
                ENGINE_NAME ": primitive %u called with %u inputs, %u outputs%s", x->prim,
                x->n_inputs, x->n_outputs, x->params == NULL ? " and no params" : "");
}

/* ---- the descriptor and the entry symbol ------------------------------------ */

static const tf_engine_plugin example_plugin_desc = {
    .struct_size = sizeof(tf_engine_plugin),
    .abi_major = TF_ENGINE_ABI_MAJOR,
    .abi_minor = TF_ENGINE_ABI_MINOR,
    .capabilities = TF_ENGINE_CAP_HOST_MEMORY,
    .name = ENGINE_NAME,
    .version = ENGINE_VERSION,
    .description = "Example engine from the tenferro SDK template (host memory, f32/f64; "
                   "c64/c128 neg, conj and dot_general)",
    .init = ex_init,
    .shutdown = ex_shutdown,
    .device_count = ex_device_count,
    .device_info = ex_device_info,
    .create = ex_create,
    .destroy = ex_destroy,
    .supports = ex_supports,
    .buffer_alloc = ex_buffer_alloc,
    .buffer_free = ex_buffer_free,
    .upload = ex_upload,
    .download = ex_download,
    .buffer_copy = ex_buffer_copy,
    .execute = ex_execute,
    .synchronize = ex_synchronize,
};

/* The one exported symbol. No side effects: it only decides whether it can
   serve this host (same ABI major, a host table with every 1.0 field). */
TF_ENGINE_EXPORT const tf_engine_plugin *tf_engine_plugin_v1(const tf_host_api *host);

TF_ENGINE_EXPORT const tf_engine_plugin *tf_engine_plugin_v1(const tf_host_api *host)
{
    if (host == NULL || host->abi_major != TF_ENGINE_ABI_MAJOR ||
        !TF_ABI_HAS_FIELD(host, tf_host_api, log))
        return NULL;
    return &example_plugin_desc;
}
