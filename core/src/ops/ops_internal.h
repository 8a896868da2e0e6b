/*
 * ops_internal.h - the ops and their AD rules (core/src/ops): the recorded
 * op ids, the rule table, recording on the tape, and the helpers op
 * implementations and rules share. Rules are written with session ops, so
 * they run on any engine and are differentiable again. Uses every layer up
 * to the runtime.
 */
#ifndef TF_OPS_INTERNAL_H
#define TF_OPS_INTERNAL_H

#include <string.h>

#include "runtime_internal.h"

/* ---- ops and their rules (op_table.c) ---- */

/*
 * The recorded ops, one list per family so that each family's file owns its
 * line, each entry X(NAME, name) as ops.h's lists (NAME is only used by the
 * elementwise ops, whose lists are ops.h's own). Ids are internal (never
 * cross an ABI) and may be renumbered freely.
 */
#define TF_OPS_ELEMENTWISE(X)                                                        \
    TF_UNARY_OPS(X)                                                                  \
    TF_COMPLEX_UNARY_OPS(X) TF_BINARY_OPS(X) X(COMPLEX, complex) X(COMPARE, compare) \
        X(SELECT, select) X(CONVERT, convert)
#define TF_OPS_REDUCE(X)      \
    X(REDUCE_SUM, reduce_sum) \
    X(REDUCE_PROD, reduce_prod) X(REDUCE_MAX, reduce_max) X(REDUCE_MIN, reduce_min)
#define TF_OPS_CONTRACT(X) X(DOT_GENERAL, dot_general)
#define TF_OPS_LAYOUT(X) \
    X(RESHAPE, reshape)  \
    X(TRANSPOSE, transpose) X(BROADCAST_IN_DIM, broadcast_in_dim) X(REVERSE, reverse)
#define TF_OPS_INDEX(X)                                                               \
    X(SLICE, slice)                                                                   \
    X(PAD, pad)                                                                       \
    X(CONCATENATE, concatenate) X(GATHER, gather) X(SCATTER, scatter)                 \
        X(DYNAMIC_SLICE, dynamic_slice) X(DYNAMIC_UPDATE_SLICE, dynamic_update_slice) \
            X(DIAGONAL, diagonal) X(DIAG_EMBED, diag_embed)

#define TF_OPS_EXTENSION(X) X(EXTENSION, extension) /* any extension op (extension_call.c) */

#define TF_OP_LIST(X)     \
    TF_OPS_ELEMENTWISE(X) \
    TF_OPS_REDUCE(X) TF_OPS_CONTRACT(X) TF_OPS_LAYOUT(X) TF_OPS_INDEX(X) TF_OPS_EXTENSION(X)

typedef enum tf_op_id {
#define TF_OP_ENUM_(NAME, name) TF_OP_##name,
    TF_OP_LIST(TF_OP_ENUM_)
#undef TF_OP_ENUM_
    TF_OP_COUNT_
} tf_op_id;

/*
 * Reverse rule: given the output `out`, its node and the cotangent `cot`
 * of the output, sets cot_in[i] (a new reference) for each input i with
 * need[i]; leaving it NULL means a zero cotangent. Written with session
 * ops, so the result is differentiable again.
 */
typedef tf_status (*tf_vjp_fn)(tf_session *s, tf_eager *out, const tf_node *node, tf_eager *cot,
                               const bool *need, tf_eager **cot_in);

/*
 * Forward rule: given the tangents of the inputs (NULL = zero), sets
 * *tan_out (a new reference, or NULL for a zero tangent).
 */
typedef tf_status (*tf_jvp_fn)(tf_session *s, tf_eager *out, const tf_node *node,
                               tf_eager *const *tan_in, tf_eager **tan_out);

struct tf_fx;
/*
 * Optional: the reverse rule as elementwise programs (rule_fx.h). For each needed
 * input j, builds its cotangent in fx[j] and sets res[j] to its reference
 * (TF_FX_NONE: no contribution). Returns false when this node's cotangents are
 * not such programs (an input that needs a reduction, mixed dtypes, a program
 * too long); then vjp runs. Backward calls it only when it records nothing.
 * Every cotangent it builds has the result's dtype and shape (so the caller
 * shapes it after `cot`, which is warm, rather than after the input).
 */
typedef bool (*tf_vjp_fx_fn)(const tf_node *node, tf_eager *out, tf_eager *cot, const bool *need,
                             struct tf_fx *fx, uint32_t *res);

typedef struct tf_op_rule {
    const char *name;
    tf_vjp_fn vjp;       /* NULL: no reverse rule (TF_ERR_UNSUPPORTED_AD_RULE) */
    tf_jvp_fn jvp;       /* NULL: no forward rule */
    tf_vjp_fx_fn vjp_fx; /* NULL: vjp only */
    /*
     * Values none of the three rules reads (only shape and dtype): bit i
     * (TF_UNREAD_IN(i), i < 7) for input i, TF_UNREAD_OUT for the result.
     * A deferred batch need not write a result that only such readers
     * hold. A bit set wrongly makes backward read a value never computed:
     * a TF_ERR_RUNTIME_STATE error (the suites' TENFERRO_DEFER=always runs
     * would show it). 0, the default, claims nothing.
     */
    uint8_t unread;
} tf_op_rule;

const tf_op_rule *tf__op_rule(uint32_t op);
/*
 * Registers the rule of TF_OP_extension nodes (the extension layer's,
 * extension_call.c), before the first extension op can be recorded: the
 * ops below the extension layer never name it.
 */
void tf__op_rule_set_extension(const tf_op_rule *rule);

/* ---- helpers for op implementations (op_util.c) ---- */

/*
 * Records (or not) the result of an op: wraps `value` (reference taken
 * over) in a new eager tensor of s's runtime, with a node when recording is
 * on and an input is tracked (or capture is on). On failure releases value.
 */
tf_status tf__record(tf_session *s, uint32_t op, const tf_attrs *attrs, tf_eager *const *inputs,
                     uint32_t n_inputs, tf_tensor *value, tf_eager **out);

/* Checks s, inputs non-NULL and from s's runtime. `names` name the inputs. */
tf_status tf__check_inputs(const char *op, tf_session *s, tf_eager *const *xs, size_t n,
                           const char *const *names, tf_eager **out);

/* A new dense tensor of the session's engine. */
tf_status tf__empty(tf_session *s, tf_dtype dtype, size_t rank, const int64_t *shape,
                    tf_tensor **out);
/* Runs one primitive on the session's engine. */
tf_status tf__exec(tf_session *s, tf_prim prim, const void *params, size_t n_in,
                   tf_tensor *const *in, tf_tensor *out);
/* Runs `prim` into a new dense tensor of (dtype, rank, shape), *out only on success. */
tf_status tf__exec_new(tf_session *s, tf_prim prim, const void *params, size_t n_in,
                       tf_tensor *const *in, tf_dtype dtype, size_t rank, const int64_t *shape,
                       tf_tensor **out);

/* Records and returns TF_ERR_VALIDATION: "<op>: <arg> is NULL", naming arg. */
tf_status tf__null_arg(const char *op, const char *arg);

/* Attribute vector k of a: the n values of v. */
static inline void tf__attrs_put(tf_attrs *a, int k, const int64_t *v, uint32_t n)
{
    a->n[k] = n;
    if (n)
        memcpy(a->v[k], v, n * sizeof *v);
}

/* NumPy broadcast of n shapes into shape/rank; TF_ERR_SHAPE_MISMATCH names `op`. */
tf_status tf__broadcast_shapes(const char *op, tf_tensor *const *xs, size_t n, int64_t *shape,
                               size_t *rank);
/* A stride-0 view of x broadcast (NumPy alignment) to shape. */
tf_status tf__broadcast_view(const tf_tensor *x, size_t rank, const int64_t *shape,
                             tf_tensor **out);
/* Normalises axis lists: NULL = all; sets mask. Errors name `op`. */
tf_status tf__axes_mask(const char *op, const int *axes, size_t n_axes, uint32_t rank,
                        uint64_t *mask);
tf_status tf__norm_axis(const char *op, const char *arg, int axis, uint32_t rank, uint32_t *out);

/* ---- complex dtypes (ops_complex.c) ---- */

/* TF_ERR_DTYPE_MISMATCH naming op, `arg` and dtype when the elementwise op
   `opid` is not defined for it (complex: ordering, erf, ...; real: conj,
   real, imag, angle, complex). */
tf_status tf__complex_check(const char *op, const char *arg, uint32_t opid, tf_dtype dtype);
/* The result dtype of unary op `opid` on `dtype` (abs, real, imag, angle of
   a complex value: its part dtype). */
tf_dtype tf__unary_dtype(uint32_t opid, tf_dtype dtype);
/* NumPy's promotion of a binary op's operands: xs[0..2) of one dtype are
   retained into conv as they are; a real float and a complex one (or c64
   and c128) are converted (recorded) to their common complex dtype. Any
   other mix is TF_ERR_DTYPE_MISMATCH naming names[1]. */
tf_status tf__promote(tf_session *s, const char *op, tf_eager *const *xs, const char *const *names,
                      tf_eager **conv);
/* Whether unary op `opid` is holomorphic on complex values (its derivative
   is f'(z), taken conjugated by the reverse rule). */
bool tf__holomorphic(uint32_t opid);
/* Reverse and forward rules of the non-holomorphic unary ops on a complex
   input (abs, sign, conj, real, imag, angle), in PyTorch's convention. */
tf_status tf__complex_unary_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                                const bool *need, tf_eager **cin);
tf_status tf__complex_unary_jvp(tf_session *s, tf_eager *out, const tf_node *nd,
                                tf_eager *const *tin, tf_eager **tout);

/* Reductions (ops_reduce.c): the reduced-shape value, and the forward of a
   recorded reduction op. */
tf_status tf__reduce_value(tf_session *s, tf_reduce_op op, tf_tensor *v, uint64_t mask,
                           tf_tensor **out);
tf_status tf__reduce_forward(tf_session *s, uint32_t opid, tf_reduce_op op, tf_eager *x,
                             const int *axes, size_t n_axes, tf_eager **out);

/* Session-op building blocks used by rules (all differentiable). */
tf_status tf__scalar_like(tf_session *s, const tf_eager *like, double value, tf_eager **out);
tf_status tf__zeros_like(tf_session *s, const tf_eager *like, tf_eager **out);
/* Sums a broadcast cotangent back to `shape` (reduce over stretched axes, reshape). */
tf_status tf__sum_to_shape(tf_session *s, tf_eager *x, size_t rank, const int64_t *shape,
                           tf_eager **out);
/*
 * Adds b into *acc (*acc may be NULL: it takes a reference to b). b is
 * borrowed and never written; the sum is written over *acc's own memory when
 * no one else can see it (tf__can_add_in_place), else it is a new tensor.
 */
tf_status tf__accumulate(tf_session *s, tf_eager **acc, tf_eager *b);
/*
 * The same, taking over the caller's reference to b (released on every
 * path): then the sum may also be written over b's memory when that
 * reference was the only one, *acc becoming b. A caller that will read b
 * again must use tf__accumulate: its pointer is not a reference.
 */
tf_status tf__accumulate_take(tf_session *s, tf_eager **acc, tf_eager *b);
/*
 * Whether `acc + b` may be written over acc's own memory: acc, its value and
 * that memory are held by the caller alone, acc is an untracked, unrecorded
 * dense float tensor of b's dtype and shape in the session engine's memory,
 * the engine takes in-place calls, and the sum would record nothing.
 */
bool tf__can_add_in_place(tf_session *s, const tf_eager *acc, const tf_eager *b);

#endif /* TF_OPS_INTERNAL_H */
