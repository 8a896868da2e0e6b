/*
 * tenferro/extension_abi.h - the extension module ABI, version 1.
 *
 * This header is written for people who ship semantic extension modules for
 * tenferro as shared objects: new ops, their kernels and their AD rules (for
 * example the bundled tenferro.linalg). Like engine_abi.h, which it includes
 * and whose conventions it shares, it is self-contained: a module includes it
 * and nothing else of tenferro, and never links against libtenferro.
 * Everything the module needs from the host arrives in tables of function
 * pointers (tf_host_api, tf_ext_registrar, tf_ext_ops).
 *
 * ------------------------------------------------------------------------
 * Loading and negotiation
 * ------------------------------------------------------------------------
 * 1. The host dlopen()s the module (file tenferro-ext-<name>.so on the
 *    plugin search path, see extension.h) with RTLD_NOW | RTLD_LOCAL and
 *    resolves exactly one symbol, TF_EXTENSION_ENTRY_SYMBOL
 *    ("tf_extension_module_v1"). The ABI major is part of the name, so a
 *    module of another major cannot even resolve. Build with
 *    -fvisibility=hidden and export only the entry (TF_EXTENSION_EXPORT).
 *    Do not rely on static constructors.
 * 2. The host calls the entry with its host-services table (the same
 *    tf_host_api engines get; host->abi_major/minor are the ENGINE ABI's,
 *    the extension ABI version is the `abi_major`/`abi_minor` argument). The
 *    entry has no side effects and returns a descriptor with static storage
 *    duration, or NULL to refuse the host (e.g. another major).
 * 3. The host checks the descriptor: struct_size at least
 *    TF_EXTENSION_MODULE_MIN_SIZE, abi_major equal to its own, a valid id
 *    (see "Module ids"), a version string and an install hook. Any minor is
 *    accepted: fields a module does not know are absent (struct_size says
 *    so), fields the host does not know are ignored. A descriptor stating a
 *    minor the host knows but a struct_size larger than that minor's struct
 *    is refused (TF_ERR_PLUGIN_STRUCT_SIZE): the host would read past it.
 * 4. Loading does not install anything. An application installs the loaded
 *    module into a runtime (tf_runtime_install_extension_module); the host
 *    then calls `install` once per install, against a candidate snapshot of
 *    that runtime's registry, through a registrar table. The hook declares
 *    ops (tf_ext_registrar.add_op) and returns TF_OK, or returns an error
 *    (after host->report_error): the whole install is then discarded.
 *    `install` may be called from any thread, for several runtimes at once:
 *    it must only describe ops (no global state).
 * 5. A loaded module is never unloaded while the host is alive. Everything
 *    the host keeps a pointer to (the descriptor, op descriptors, their
 *    strings and kernel tables) must have static storage duration.
 *
 * ------------------------------------------------------------------------
 * Module ids and op names
 * ------------------------------------------------------------------------
 * A module id is a namespaced name: two or more segments separated by '.',
 * each segment one or more of [a-z0-9_] starting with a letter, at most
 * TF_EXT_MAX_NAME bytes in all, e.g. "tenferro.linalg". An op name is one
 * such segment ("solve"); its full name is "<module id>.<op name>"
 * ("tenferro.linalg.solve"), the name applications call it by.
 *
 * ------------------------------------------------------------------------
 * Ops: signature, inference, kernels
 * ------------------------------------------------------------------------
 * An op has n_args arguments, each a tensor or a scalar (f64 or i64; see
 * tf_ext_arg_kind), in a fixed order, and n_outputs tensor outputs. A call
 * goes:
 *   1. The host checks the call against the signature (argument count and
 *      kinds, tensors of the session's runtime) and reports mismatches as
 *      TF_ERR_VALIDATION naming the argument.
 *   2. infer() gets the tensors' metadata and the scalar values and writes
 *      the outputs' dtype and shape, or refuses (TF_ERR_DTYPE_MISMATCH,
 *      TF_ERR_SHAPE_MISMATCH, TF_ERR_VALIDATION ... after
 *      ctx->report_argument (ABI 1.1; host->report_error before), naming
 *      the op and argument). It runs before anything is computed.
 *   3. The host picks the kernel whose engine name equals the session's
 *      engine's plugin name (tf_ext_kernel.engine: "cpu", "vulkan", ...). A
 *      "cpu" kernel is required, and serves every engine without a kernel of
 *      its own: on its memory when that is host memory, and otherwise on host
 *      copies (the host downloads the tensor arguments, which must be in the
 *      engine's memory, calls the cpu kernel with host operands and
 *      ctx->engine NULL, and uploads the outputs). A module that wants no
 *      such round trip ships a kernel for the engine.
 *   4. The host allocates dense outputs in the engine's memory and calls the
 *      kernel through libffi with a typed C signature built from the op's
 *      signature: first `const tf_ext_kernel_ctx *ctx`, then one argument per
 *      op argument in order (`const tf_operand *` for a tensor, `double` for
 *      TF_EXT_ARG_F64, `int64_t` for TF_EXT_ARG_I64), then one
 *      `const tf_operand *` per output; it returns tf_status. For example
 *        tf_status solve(const tf_ext_kernel_ctx *ctx, const tf_operand *a,
 *                        const tf_operand *b, const tf_operand *x);
 *      Operands follow engine_abi.h: for engines with
 *      TF_ENGINE_CAP_HOST_MEMORY `data` points at element 0 of the memory
 *      (apply `offset` and `strides`), and the kernel finishes before it
 *      returns; for other engines `buffer` is the engine's buffer handle and
 *      the kernel (written for that engine) knows how to use it. Inputs may
 *      have any strides; outputs are dense column-major and never alias
 *      inputs. A kernel reports data-dependent failures (singular matrix,
 *      no convergence...) as typed errors (ctx->report_kind, see "Typed
 *      errors"), other failures with host->report_error and a status; the
 *      message names the op.
 *   5. The host records the op on the tape (one node per output) when an
 *      input is tracked, so that its AD rules can run later.
 *
 * ------------------------------------------------------------------------
 * AD rules
 * ------------------------------------------------------------------------
 * Rules are written with ops issued through the host's ops table
 * (tf_ext_ops: add, mul, matmul, transpose, the module's own ops by name,
 * ...), never with raw loops, so that derivatives are recorded and
 * differentiable again (grad of grad) and run on whatever engine the caller
 * uses. Tensors cross the boundary as opaque handles (tf_ext_tensor): every
 * handle a rule receives is borrowed; every handle an ops-table function
 * returns is a new reference the rule must release (ops->release) unless it
 * hands it to the host as a result. A NULL tangent or cotangent means zero;
 * a rule may leave a result NULL for zero.
 *   vjp: given the cotangent of output `out_index` (the host calls the rule
 *        once per recorded output with a cotangent), sets cot_in[i] for each
 *        tensor argument i (numbered among the tensor arguments only) with
 *        need[i] non-zero.
 *   jvp: given the tangents of the tensor arguments (NULL = zero), sets the
 *        tangent of output `out_index`.
 * The call record gives the op's tensor arguments and scalars, and its
 * output `out_index`; rules needing other outputs recompute them through
 * ops->call, or (ABI 1.3, see there) read them from the call. An op without a vjp (jvp) rule can be called but not
 * differentiated in reverse (forward) mode: TF_ERR_UNSUPPORTED_AD_RULE.
 * The host checks every result a rule returns: a cotangent must have its
 * input's dtype and shape, a tangent its output's, both of the session's
 * runtime; anything else fails the derivative with TF_ERR_DTYPE_MISMATCH,
 * TF_ERR_SHAPE_MISMATCH or TF_ERR_CONTEXT_MISMATCH naming the module, the op
 * and the input (grad slots stay as they were).
 *
 * ------------------------------------------------------------------------
 * Typed errors (ABI 1.1)
 * ------------------------------------------------------------------------
 * Data-dependent failures an application may want to handle (a singular
 * matrix, no convergence...) are error kinds the module declares in its
 * descriptor (error_kinds: {name, message} pairs, names unique within the
 * module). The host checks them when the module is installed: a NULL table
 * with a non-zero count, more than TF_EXT_MAX_ERROR_KINDS, a name that is
 * not one segment of [a-z0-9_] starting with a letter (at most
 * TF_EXT_MAX_KIND_NAME bytes), a duplicate name or a missing message refuse
 * the install with TF_ERR_VALIDATION (argument "error_kinds") and leave the
 * registry unchanged.
 *
 * A kernel reports one with ctx->report_kind(ctx, "singular", batch_index,
 * detail) and returns what that returns (TF_ERR_EXTENSION). The application
 * gets status TF_ERR_EXTENSION, tf_error_op() the op's full name, the
 * message "<op>: <the kind's message> (<module id>/<kind>, batch element
 * i)", the detail as tf_error_cause(), and tf_error_extension_kind()
 * (extension.h) gives module id, kind and index, so that it can branch on
 * "tenferro.linalg" + "singular" without reading messages. A kernel that
 * returns TF_ERR_EXTENSION without a declared kind, or reports an
 * undeclared kind, gives the application TF_ERR_BACKEND instead.
 *
 * report_kind (and infer()'s report_argument) live in the contexts, not in
 * tf_host_api: that table is the engines' too and versioned with the engine
 * ABI, and a context knows which op of which module is reporting.
 *
 * Compatibility: a 1.0 module knows neither and keeps working (it never
 * calls report_kind; the host reads error_kinds only from a descriptor that
 * states minor >= 1 and whose struct_size covers the fields). A 1.1 module
 * on a 1.0 host finds report_kind absent (TF_ABI_HAS_FIELD on the context is false)
 * and falls back to host->report_error with an ordinary status, e.g.
 * TF_ERR_BACKEND; a 1.0 host ignores the descriptor's kinds.
 *
 * ------------------------------------------------------------------------
 * ABI 1.2: every built-in op, composite ops, module caches, interfaces
 * ------------------------------------------------------------------------
 * Every built-in session op is in the ops table: the 1.0 entries, then
 * (1.2) unary/binary/compare by their engine-ABI op codes (tf_unary_op,
 * tf_binary_op, tf_compare_op: exp, sqrt, tanh, sigmoid, sign, pow,
 * maximum, ...), select, clamp, convert, cast, every reduction
 * (tf_ext_reduce_op), dot_general with batch axes, broadcast_in_dim,
 * reverse, the indexing ops, the composites (softmax ... rms_norm) and
 * constants of any dtype. A code that is not a session op (e.g.
 * TF_UNARY_FLOOR) is TF_ERR_VALIDATION (argument "op"). New elementwise
 * ops arrive as new codes, so the table need not grow for them. Check
 * TF_ABI_HAS_FIELD(ctx->ops, tf_ext_ops, unary) (or the entry you use)
 * before using a 1.2 entry: a 1.1 host's table ends at `call`.
 *
 * A composite op (tf_ext_op.compose set) has no kernels: the host calls
 * compose() with a rule context, and compose issues ops through the table
 * like a rule does. Only those ops are recorded, so the composite runs on
 * every engine and is differentiable to any order through its parts; it
 * has no vjp/jvp and no infer of its own (the host ignores them). Its
 * signature may use two argument kinds kernels cannot take:
 * TF_EXT_ARG_STRING (a NUL-terminated string, borrowed for the call) and,
 * as the last argument only, TF_EXT_ARG_TENSORS (any number of tensors,
 * possibly none). compose() gets the tensors of TF_EXT_ARG_TENSORS after
 * the op's other tensor arguments in tf_ext_call.tensors (n_tensors counts
 * them all) and the strings in tf_ext_call.strings. It writes n_outputs new
 * references (tensors of the session's runtime) and returns TF_OK, or
 * returns a status: an ops-table failure unchanged, or its own report
 * (ctx->report_argument naming the argument, host->report_error). On
 * failure the host releases any output it did set. An op declaring a
 * string or list argument without compose, or a list that is not its last
 * argument, is malformed: the install is refused (TF_ERR_RUNTIME_STATE, the
 * reason as the cause) and the registry stays as it was.
 *
 * Module caches: ctx->cache_get / cache_put keep values of the module's
 * choosing (e.g. a contraction plan) in the runtime's extension cache of
 * the module (extension.h), under a key of bytes the module builds; the
 * host adds the registry epoch to the key. They count in
 * tf_runtime_cache_stats and go with tf_runtime_clear_caches.
 *
 * Interfaces: a module may answer get_interface(name) in its descriptor
 * with a table of typed functions of its own (a versioned name such as
 * "tenferro.einsum.planner.v1"), which applications get through
 * tf_extension_interface() (extension.h) and call directly, without a
 * session; the module's public header describes the table. Interfaces are
 * for work that needs no tensors (planning, queries): anything that
 * computes goes through ops, so that it is recorded.
 *
 * ------------------------------------------------------------------------
 * ABI 1.3: the forward's other outputs for first-order rules
 * ------------------------------------------------------------------------
 * A multi-output op whose rules need its other outputs (svd's U, S and V,
 * eigh's w and V) would otherwise run its forward kernel again inside every
 * rule. An op that sets TF_EXT_OP_RULES_READ_OUTPUTS in tf_ext_op.flags
 * (from a module stating minor >= 3) has the values of all its outputs
 * kept with its recorded call, and its vjp/jvp get them in
 * tf_ext_call.outputs[0 .. n_outputs-1], in output order: constants of the
 * rule's session (not recorded, borrowed for the rule), the values the
 * forward kernel wrote. They are given only when all of these hold:
 *   - the op has more than one output (otherwise `output` is all there is);
 *   - the derivative being computed is not itself recorded (backward, or
 *     a grad/vjp/jvp issued while recording is off): where it is recorded
 *     (grad of grad, a trace capture), the rule must recompute the outputs
 *     through ops->call so that they stay differentiable functions of the
 *     inputs, and the host passes NULL.
 * Otherwise `outputs` is NULL and n_outputs 0, and the rule recomputes as
 * before. A rule must therefore always keep its recomputing path. The
 * values live as long as any of the call's output tensors' tape nodes (the
 * application may release its outputs before backward); ops without the
 * flag keep nothing extra. Check TF_ABI_HAS_FIELD(call, tf_ext_call,
 * outputs) before reading the fields: a 1.2 host's call record ends at
 * `strings`. A 1.2 module's ops are unaffected: the host reads flags only
 * from a module stating minor >= 3.
 *
 * ------------------------------------------------------------------------
 * Memory and threads
 * ------------------------------------------------------------------------
 * Memory is freed on the side that allocated it: the module uses host->alloc
 * and host->free for scratch; tensors made by ops-table functions are
 * released with ops->release. infer, kernels and rules may be called from
 * any number of threads at once (for different sessions) and must be
 * reentrant. Strings passed to the module are borrowed for the call.
 */
#ifndef TENFERRO_EXTENSION_ABI_H
#define TENFERRO_EXTENSION_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "engine_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TF_EXTENSION_ABI_MAJOR 1
/* 1.1: typed errors, infer() naming the argument; 1.2: every built-in op in the ops table,
   composite ops with string and tensor-list arguments, module caches, interfaces;
   1.3: the forward's other outputs for first-order rules (TF_EXT_OP_RULES_READ_OUTPUTS) */
#define TF_EXTENSION_ABI_MINOR 3

#define TF_EXTENSION_ENTRY_SYMBOL "tf_extension_module_v1"

#if defined(__GNUC__) || defined(__clang__)
#define TF_EXTENSION_EXPORT __attribute__((visibility("default")))
#else
#define TF_EXTENSION_EXPORT
#endif

/* Longest module id or full op name, in bytes, without the NUL. */
#define TF_EXT_MAX_NAME 127
/* Longest error-kind name, in bytes, without the NUL; most kinds per module. */
#define TF_EXT_MAX_KIND_NAME 63
#define TF_EXT_MAX_ERROR_KINDS 64
/* Most arguments (tensors and scalars together) and outputs of one op. */
#define TF_EXT_MAX_ARGS 8
#define TF_EXT_MAX_OUTPUTS 4

/* The kind of one op argument. Values are ABI; only ever appended. */
typedef enum tf_ext_arg_kind {
    TF_EXT_ARG_TENSOR = 0, /* an eager tensor; the kernel gets a const tf_operand * */
    TF_EXT_ARG_F64 = 1,    /* a double scalar */
    TF_EXT_ARG_I64 = 2,    /* an int64_t scalar (flags, counts, booleans as 0/1) */
    /* ABI 1.2, composite ops only (see "ABI 1.2"): */
    TF_EXT_ARG_STRING = 3, /* a NUL-terminated string, at most TF_EXT_MAX_STRING bytes */
    TF_EXT_ARG_TENSORS = 4 /* the last argument only: any number of tensors (0 included) */
} tf_ext_arg_kind;

/* Longest TF_EXT_ARG_STRING, in bytes without the NUL; most tensors of one TF_EXT_ARG_TENSORS. */
#define TF_EXT_MAX_STRING 65535
#define TF_EXT_MAX_LIST 65536

/* A scalar argument's value: `f` for F64, `i` for I64. */
typedef struct tf_ext_scalar {
    double f;
    int64_t i;
} tf_ext_scalar;

/* Metadata of one tensor, for infer(). */
typedef struct tf_ext_meta {
    uint32_t struct_size;
    uint32_t dtype; /* tf_dtype */
    uint32_t rank;
    uint32_t reserved0;
    int64_t shape[TF_MAX_RANK];
} tf_ext_meta;

/* Opaque handles: an eager tensor of the host, and the session rules run in. */
typedef struct tf_ext_tensor tf_ext_tensor;
typedef struct tf_ext_session tf_ext_session;

/* Reductions of tf_ext_ops.reduce (ABI 1.2); the first four are tf_reduce_op's. */
typedef enum tf_ext_reduce_op {
    TF_EXT_REDUCE_SUM = 0,
    TF_EXT_REDUCE_PROD = 1, /* zero-safe gradient */
    TF_EXT_REDUCE_MAX = 2,  /* gradient split evenly among ties */
    TF_EXT_REDUCE_MIN = 3,
    TF_EXT_REDUCE_MEAN = 4,
    TF_EXT_REDUCE_SUM_SQUARES = 5,
    TF_EXT_REDUCE_LOGSUMEXP = 6
} tf_ext_reduce_op;

/*
 * One argument of tf_ext_ops.call_args (ABI 1.2), laid out like
 * extension.h's tf_call_arg: `kind` a tf_ext_arg_kind; `tensor` for
 * TENSOR, `f` for F64, `i` for I64 and for the count of TENSORS, `str` for
 * STRING, `tensors` for TENSORS. Everything borrowed for the call.
 */
typedef struct tf_ext_arg {
    uint32_t kind;
    tf_ext_tensor *tensor;
    double f;
    int64_t i;
    const char *str;
    tf_ext_tensor *const *tensors;
} tf_ext_arg;

/* ===================================================================== */
/* The ops table: session ops for AD rules                                */
/* ===================================================================== */

/*
 * Every function returning tf_status writes its result to the last argument
 * (a new reference) only on success; on failure the host has recorded the
 * error and the rule returns the status unchanged. Semantics are those of
 * the same-named tf_session_* ops of ops.h (broadcasting NumPy style,
 * matrices on the last two axes). Grows only at the end.
 */
typedef struct tf_ext_ops {
    uint32_t struct_size;
    uint32_t reserved0;

    void (*retain)(tf_ext_tensor *x);
    void (*release)(tf_ext_tensor *x); /* NULL is a no-op */
    uint32_t (*dtype)(const tf_ext_tensor *x);
    uint32_t (*rank)(const tf_ext_tensor *x);
    int64_t (*extent)(const tf_ext_tensor *x, uint32_t axis);

    tf_status (*add)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor *y, tf_ext_tensor **out);
    tf_status (*sub)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor *y, tf_ext_tensor **out);
    tf_status (*mul)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor *y, tf_ext_tensor **out);
    tf_status (*div)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor *y, tf_ext_tensor **out);
    tf_status (*neg)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out);
    tf_status (*abs)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out);
    tf_status (*log)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out);
    /* Batched matrix product over the last two axes; leading axes must match. */
    tf_status (*matmul)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor *y, tf_ext_tensor **out);
    /* Swaps the last two axes (rank >= 2). */
    tf_status (*transpose_last2)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out);
    tf_status (*transpose)(tf_ext_session *s, tf_ext_tensor *x, const int *perm,
                           tf_ext_tensor **out);
    tf_status (*reshape)(tf_ext_session *s, tf_ext_tensor *x, uint32_t rank, const int64_t *shape,
                         tf_ext_tensor **out);
    /* Sums over `axes` (NULL: all), removing them. */
    tf_status (*reduce_sum)(tf_ext_session *s, tf_ext_tensor *x, const int *axes, size_t n_axes,
                            tf_ext_tensor **out);
    tf_status (*tril)(tf_ext_session *s, tf_ext_tensor *x, int64_t k, tf_ext_tensor **out);
    tf_status (*triu)(tf_ext_session *s, tf_ext_tensor *x, int64_t k, tf_ext_tensor **out);
    tf_status (*diagonal)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out);
    tf_status (*diag_embed)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out);
    /* A rank-0 constant of like's dtype. */
    tf_status (*scalar)(tf_ext_session *s, const tf_ext_tensor *like, double value,
                        tf_ext_tensor **out);
    /* A constant of like's dtype with the given shape, filled with value. */
    tf_status (*full)(tf_ext_session *s, const tf_ext_tensor *like, uint32_t rank,
                      const int64_t *shape, double value, tf_ext_tensor **out);
    /*
     * Calls an installed op by its full name ("tenferro.linalg.inv") with
     * its tensor arguments and scalars in signature order (tensors and
     * scalars in two arrays, each in their own order), writing n_outputs
     * new references. Recorded like any op, so rules may use it freely.
     */
    tf_status (*call)(tf_ext_session *s, const char *name, tf_ext_tensor *const *tensors,
                      uint32_t n_tensors, const tf_ext_scalar *scalars, uint32_t n_scalars,
                      tf_ext_tensor **outputs, uint32_t n_outputs);

    /* ---- ABI 1.2: every other built-in op (see "ABI 1.2"); check with TF_ABI_HAS_FIELD ---- */
    /* Unary elementwise by tf_unary_op code: NEG .. SIGMOID (the ops of ops.h's TF_UNARY_OPS),
       and CONJ, REAL, IMAG, ANGLE (TF_COMPLEX_UNARY_OPS: complex operands only) */
    tf_status (*unary)(tf_ext_session *s, uint32_t op, tf_ext_tensor *x, tf_ext_tensor **out);
    /* Binary elementwise by tf_binary_op code: ADD .. REM (MAX, MIN are maximum, minimum). */
    tf_status (*binary)(tf_ext_session *s, uint32_t op, tf_ext_tensor *x, tf_ext_tensor *y,
                        tf_ext_tensor **out);
    /* A bool tensor of x <op> y, op a tf_compare_op; no derivative. */
    tf_status (*compare)(tf_ext_session *s, uint32_t op, tf_ext_tensor *x, tf_ext_tensor *y,
                         tf_ext_tensor **out);
    tf_status (*select)(tf_ext_session *s, tf_ext_tensor *pred, tf_ext_tensor *on_true,
                        tf_ext_tensor *on_false, tf_ext_tensor **out);
    tf_status (*clamp)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor *lo, tf_ext_tensor *hi,
                       tf_ext_tensor **out);
    /* Value-preserving (convert) and lossy (cast) dtype changes; dtype a tf_dtype. */
    tf_status (*convert)(tf_ext_session *s, tf_ext_tensor *x, uint32_t dtype, tf_ext_tensor **out);
    tf_status (*cast)(tf_ext_session *s, tf_ext_tensor *x, uint32_t dtype, tf_ext_tensor **out);
    /* Every reduction, by tf_ext_reduce_op code, over `axes` (NULL: all), removing them. */
    tf_status (*reduce)(tf_ext_session *s, uint32_t op, tf_ext_tensor *x, const int *axes,
                        size_t n_axes, tf_ext_tensor **out);
    /*
     * DOT_GENERAL with contracting and batch axes (engine_abi.h's params:
     * struct_size is not read); output axes [lhs free, rhs free, batch in
     * lhs_batch order].
     */
    tf_status (*dot_general)(tf_ext_session *s, tf_ext_tensor *lhs, tf_ext_tensor *rhs,
                             const tf_dot_general_params *dims, tf_ext_tensor **out);
    /* Input axis i becomes output axis dims[i] (strictly increasing). */
    tf_status (*broadcast_in_dim)(tf_ext_session *s, tf_ext_tensor *x, uint32_t rank,
                                  const int64_t *shape, const int *dims, tf_ext_tensor **out);
    tf_status (*reverse)(tf_ext_session *s, tf_ext_tensor *x, const int *axes, size_t n_axes,
                         tf_ext_tensor **out);
    /* x[start:limit:stride] per axis, a view. */
    tf_status (*slice)(tf_ext_session *s, tf_ext_tensor *x, const int64_t *start,
                       const int64_t *limit, const int64_t *stride, tf_ext_tensor **out);
    tf_status (*dynamic_slice)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor *starts,
                               const int64_t *sizes, tf_ext_tensor **out);
    /* index_select (TF_GATHER_INDEX_SELECT) or take_along_axis (TF_GATHER_ALONG_AXIS). */
    tf_status (*gather)(tf_ext_session *s, tf_ext_tensor *x, int axis, tf_ext_tensor *index,
                        uint32_t mode, tf_ext_tensor **out);
    /* mode a tf_gather_mode, combine a tf_scatter_combine. */
    tf_status (*scatter)(tf_ext_session *s, tf_ext_tensor *base, int axis, tf_ext_tensor *index,
                         tf_ext_tensor *updates, uint32_t mode, uint32_t combine,
                         tf_ext_tensor **out);
    tf_status (*pad)(tf_ext_session *s, tf_ext_tensor *x, const int64_t *low, const int64_t *high,
                     const int64_t *interior, double value, tf_ext_tensor **out);
    tf_status (*concatenate)(tf_ext_session *s, tf_ext_tensor *const *xs, size_t n, int axis,
                             tf_ext_tensor **out);
    tf_status (*stack)(tf_ext_session *s, tf_ext_tensor *const *xs, size_t n, int axis,
                       tf_ext_tensor **out);
    tf_status (*softmax)(tf_ext_session *s, tf_ext_tensor *x, int axis, tf_ext_tensor **out);
    tf_status (*log_softmax)(tf_ext_session *s, tf_ext_tensor *x, int axis, tf_ext_tensor **out);
    tf_status (*silu)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out);
    tf_status (*gelu)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out);
    tf_status (*softplus)(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out);
    /* weight and bias may be NULL. */
    tf_status (*layer_norm)(tf_ext_session *s, tf_ext_tensor *x, size_t n_axes,
                            tf_ext_tensor *weight, tf_ext_tensor *bias, double eps,
                            tf_ext_tensor **out);
    tf_status (*rms_norm)(tf_ext_session *s, tf_ext_tensor *x, size_t n_axes,
                          tf_ext_tensor *weight, double eps, tf_ext_tensor **out);
    /* A constant of any tf_dtype filled with value (scalar and full take like's dtype). */
    tf_status (*constant)(tf_ext_session *s, uint32_t dtype, uint32_t rank, const int64_t *shape,
                          double value, tf_ext_tensor **out);
    /*
     * A constant from host data (column-major, `count` elements of dtype,
     * copied; count must equal the shape's element count), uploaded to the
     * session's engine: index vectors for gather, masks, tables.
     */
    tf_status (*constant_from_host)(tf_ext_session *s, uint32_t dtype, uint32_t rank,
                                    const int64_t *shape, const void *data, size_t count,
                                    tf_ext_tensor **out);
    /*
     * `call` with arguments of every kind, in signature order (tf_ext_arg):
     * reaches composite ops with string and tensor-list arguments, e.g.
     * "tenferro.einsum.einsum". Errors as tf_session_call's.
     */
    tf_status (*call_args)(tf_ext_session *s, const char *name, const tf_ext_arg *args,
                           uint32_t n_args, tf_ext_tensor **outputs, uint32_t n_outputs);
} tf_ext_ops;

/* ===================================================================== */
/* Kernels and rules                                                      */
/* ===================================================================== */

/* What a kernel gets besides its operands. */
typedef struct tf_ext_kernel_ctx tf_ext_kernel_ctx;
struct tf_ext_kernel_ctx {
    uint32_t struct_size;
    uint32_t reserved0;
    const tf_host_api *host;
    const char *op_name;     /* the full op name, for messages */
    const char *engine_name; /* the session's engine */
    tf_engine_state *engine; /* the engine instance (for non-host kernels) */

    /* ---- ABI 1.1: use only if TF_ABI_HAS_FIELD(ctx, tf_ext_kernel_ctx, report_kind) ---- */
    /*
     * Reports a failure of one of the module's declared error kinds (see
     * "Typed errors"): `kind` is a name from the descriptor's error_kinds,
     * `index` the batch element it concerns (flattened, first batch axis
     * fastest; -1 if none), `detail` a message naming the op and the values
     * (copied; the application sees it as the cause). Returns the status the
     * kernel must return: TF_ERR_EXTENSION, or TF_ERR_BACKEND when `kind`
     * is not declared (the host then reports that instead). Call it on the
     * kernel's thread, right before returning.
     */
    tf_status (*report_kind)(const tf_ext_kernel_ctx *ctx, const char *kind, int64_t index,
                             const char *detail);
};

/*
 * A kernel for one engine. `fn` is a typed C function (see "Ops: signature,
 * inference, kernels"), stored as a generic function pointer; cast it with
 * TF_EXT_KERNEL_FN.
 */
typedef void (*tf_ext_generic_fn)(void);
#define TF_EXT_KERNEL_FN(f) ((tf_ext_generic_fn)(f))

typedef struct tf_ext_kernel {
    const char *engine; /* the engine plugin's name, e.g. "cpu" */
    tf_ext_generic_fn fn;
} tf_ext_kernel;

/* The recorded call a rule differentiates. Everything borrowed. */
typedef struct tf_ext_call {
    uint32_t struct_size;
    uint32_t n_tensors; /* tensor arguments, in signature order */
    uint32_t n_scalars; /* scalar arguments, in signature order */
    uint32_t out_index; /* which output `output` is */
    tf_ext_tensor *const *tensors;
    const tf_ext_scalar *scalars;
    tf_ext_tensor *output; /* NULL for compose() */

    /* ---- ABI 1.2 (compose() only; TF_ABI_HAS_FIELD(call, tf_ext_call, strings)) ---- */
    uint32_t n_strings; /* TF_EXT_ARG_STRING arguments, in signature order */
    uint32_t reserved0;
    const char *const *strings;

    /* ---- ABI 1.3 (rules only; TF_ABI_HAS_FIELD(call, tf_ext_call, outputs)) ---- */
    /*
     * Every output of the forward call, as constants of the rule's session
     * (see "ABI 1.3"), or NULL (n_outputs 0): the op did not set
     * TF_EXT_OP_RULES_READ_OUTPUTS, has one output, or the derivative is
     * itself recorded, where the rule must recompute them.
     */
    uint32_t n_outputs;
    uint32_t reserved1;
    tf_ext_tensor *const *outputs;
} tf_ext_call;

/* What a rule or infer() gets: the tables and the session to issue ops in. */
typedef struct tf_ext_rule_ctx tf_ext_rule_ctx;
struct tf_ext_rule_ctx {
    uint32_t struct_size;
    uint32_t reserved0;
    const tf_host_api *host;
    const tf_ext_ops *ops;
    tf_ext_session *session;
    const char *op_name; /* full name, for messages */

    /* ---- ABI 1.1: use only if TF_ABI_HAS_FIELD(ctx, tf_ext_rule_ctx, report_argument) ---- */
    /*
     * host->report_error that also names the offending argument: `arg` is
     * its index in the op's signature (tensors and scalars counted
     * together, as in tf_ext_op.arg_names); the application then finds its
     * name in tf_error_argument(). Returns `status`, for
     * `return ctx->report_argument(ctx, TF_ERR_SHAPE_MISMATCH, 1, "...")`.
     * An index out of range names no argument. Meant for infer().
     */
    tf_status (*report_argument)(const tf_ext_rule_ctx *ctx, tf_status status, uint32_t arg,
                                 const char *message);

    /* ---- ABI 1.2: use only if TF_ABI_HAS_FIELD(ctx, tf_ext_rule_ctx, cache_put) ---- */
    /*
     * The module's extension cache in the session's runtime (see "ABI
     * 1.2"). cache_get looks up the value stored under the `key_size`
     * bytes at `key` (with the current registry epoch): on a hit it calls
     * use(value, value_size, user) once, under the cache's lock (copy what
     * you need; call no host function from `use`), and returns 1; on a
     * miss it returns 0 (`value` is 16-byte aligned and lives only during
     * the call). Each call counts as a hit or a miss in the stats.
     * cache_put stores a copy of `value` under a copy of the key (an entry
     * already stored under the key, another thread's, is kept); it returns
     * TF_OK, also when the cache's limits drop the entry at once, or
     * TF_ERR_OUT_OF_MEMORY / TF_ERR_VALIDATION (NULL key or value, an empty
     * key, sizes over 1 GiB), recorded.
     * Values are bytes: store no pointer to anything that could die.
     */
    int (*cache_get)(const tf_ext_rule_ctx *ctx, const void *key, size_t key_size,
                     void (*use)(const void *value, size_t value_size, void *user), void *user);
    tf_status (*cache_put)(const tf_ext_rule_ctx *ctx, const void *key, size_t key_size,
                           const void *value, size_t value_size);
};

typedef tf_status (*tf_ext_infer_fn)(const tf_ext_rule_ctx *ctx, const tf_ext_meta *tensors,
                                     uint32_t n_tensors, const tf_ext_scalar *scalars,
                                     uint32_t n_scalars, tf_ext_meta *outputs);
typedef tf_status (*tf_ext_vjp_fn)(const tf_ext_rule_ctx *ctx, const tf_ext_call *call,
                                   tf_ext_tensor *cotangent, const int *need,
                                   tf_ext_tensor **cot_in);
typedef tf_status (*tf_ext_jvp_fn)(const tf_ext_rule_ctx *ctx, const tf_ext_call *call,
                                   tf_ext_tensor *const *tangents, tf_ext_tensor **tangent_out);
/* A composite op's body (ABI 1.2, see "ABI 1.2"): writes n_outputs new references. */
typedef tf_status (*tf_ext_compose_fn)(const tf_ext_rule_ctx *ctx, const tf_ext_call *call,
                                       tf_ext_tensor **outputs);

/* One op. Static storage; the host keeps the pointer. */
typedef struct tf_ext_op {
    uint32_t struct_size;
    uint32_t n_args;    /* <= TF_EXT_MAX_ARGS */
    uint32_t n_outputs; /* 1 .. TF_EXT_MAX_OUTPUTS */
    uint32_t n_kernels;
    const char *name;             /* one segment, e.g. "solve" */
    const uint32_t *arg_kinds;    /* n_args tf_ext_arg_kind */
    const char *const *arg_names; /* n_args names for messages */
    tf_ext_infer_fn infer;        /* required */
    const tf_ext_kernel *kernels; /* n_kernels; one must be "cpu" */
    tf_ext_vjp_fn vjp;            /* optional */
    tf_ext_jvp_fn jvp;            /* optional */
    const char *doc;              /* optional one-line description */

    /* ---- ABI 1.2 ---- */
    /*
     * Non-NULL makes the op a composite (see "ABI 1.2"): no kernels
     * (n_kernels 0 is fine), infer, vjp and jvp are not used, and the
     * signature may hold TF_EXT_ARG_STRING and (last) TF_EXT_ARG_TENSORS.
     */
    tf_ext_compose_fn compose;

    /* ---- ABI 1.3 (read only from a module stating minor >= 3) ---- */
    uint32_t flags; /* TF_EXT_OP_* bits; 0 for none */
    uint32_t reserved1;
} tf_ext_op;

/* tf_ext_op.flags (ABI 1.3): the op's rules read its other outputs (tf_ext_call.outputs). */
#define TF_EXT_OP_RULES_READ_OUTPUTS (1u << 0)

/* ===================================================================== */
/* Installing                                                             */
/* ===================================================================== */

typedef struct tf_ext_candidate tf_ext_candidate; /* the snapshot being built */

/* The table the install hook declares its ops through. Grows only at the end. */
typedef struct tf_ext_registrar {
    uint32_t struct_size;
    uint32_t reserved0;
    tf_ext_candidate *candidate;
    /*
     * Adds one op of this module to the candidate. Errors (the whole
     * install is then discarded, even if the hook ignores the error and
     * returns TF_OK):
     * TF_ERR_VALIDATION for a malformed op (bad name, signature, missing
     * infer or cpu kernel) or a name already taken; TF_ERR_OUT_OF_MEMORY.
     */
    tf_status (*add_op)(tf_ext_candidate *candidate, const tf_ext_op *op);
} tf_ext_registrar;

/*
 * One error kind a module may report (ABI 1.1, see "Typed errors"). Static
 * storage. This struct never grows.
 */
typedef struct tf_ext_error_kind {
    const char *name;    /* one segment of [a-z0-9_] starting with a letter, <= 63 bytes */
    const char *message; /* required one line for applications: "the matrix is singular" */
} tf_ext_error_kind;

/* The module descriptor returned by the entry symbol. Static storage. */
typedef struct tf_extension_module_desc {
    uint32_t struct_size; /* sizeof(tf_extension_module_desc) as built */
    uint32_t abi_major;   /* TF_EXTENSION_ABI_MAJOR the module was built against */
    uint32_t abi_minor;
    uint32_t reserved0;
    const char *id;          /* required: namespaced id, e.g. "tenferro.linalg" */
    const char *version;     /* required: the module's own version */
    const char *description; /* optional */
    /* Required. Declares the module's ops; see "Loading and negotiation" 4. */
    tf_status (*install)(const tf_host_api *host, const tf_ext_registrar *registrar);

    /* ---- ABI 1.1 (a 1.0 descriptor ends above: it declares no kinds) ---- */
    /* Optional: the error kinds the module's kernels report (NULL and 0 for none). */
    const tf_ext_error_kind *error_kinds;
    uint32_t n_error_kinds; /* <= TF_EXT_MAX_ERROR_KINDS */
    uint32_t reserved1;     /* 0 */

    /* ---- ABI 1.2 (a 1.1 descriptor ends above) ---- */
    /*
     * Optional: the module's own table of typed functions for interface
     * `name` (e.g. "tenferro.einsum.planner.v1"), static storage, or NULL
     * when the module does not offer it. Any thread; no side effects.
     */
    const void *(*get_interface)(const char *name);
} tf_extension_module_desc;

/* The size of a 1.1 descriptor (it ends at reserved1). */
#define TF_EXTENSION_MODULE_SIZE_1_1 \
    (offsetof(tf_extension_module_desc, reserved1) + sizeof(uint32_t))

#define TF_EXTENSION_MODULE_MIN_SIZE \
    (offsetof(tf_extension_module_desc, install) + sizeof(((tf_extension_module_desc *)0)->install))

/* The entry symbol's type. A module defines exactly:
 *   TF_EXTENSION_EXPORT const tf_extension_module_desc *
 *   tf_extension_module_v1(const tf_host_api *host, uint32_t abi_major, uint32_t abi_minor);
 */
typedef const tf_extension_module_desc *(*tf_extension_entry_fn)(const tf_host_api *host,
                                                                 uint32_t abi_major,
                                                                 uint32_t abi_minor);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_EXTENSION_ABI_H */
