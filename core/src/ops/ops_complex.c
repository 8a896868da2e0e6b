/*
 * ops_complex.c - what the elementwise ops need for c64 and c128: which ops
 * a complex (or a real) dtype has, the result dtypes, NumPy's promotion of
 * mixed real/complex operands, and the derivative rules of the
 * non-holomorphic ops (abs, sign, conj, real, imag, angle, complex).
 *
 * The convention is PyTorch's (docs/complex.md): for a real loss L the
 * cotangent of a complex z is dL/dx + i dL/dy, and a rule maps a cotangent
 * by the adjoint of the op's real-linear derivative under the real inner
 * product <a, b> = Re(sum conj(a) b). For a holomorphic f that is
 * cot * conj(f'(z)) (ops_elementwise.c); the others are written here from
 * their real-linear maps t -> df(t), which are also their forward rules.
 */
#include "rule_builder.h"

/* ---- which ops a dtype has ---- */

/* The complex-only ops: complex(re, im) takes real parts instead. */
static bool complex_only(uint32_t opid)
{
    return opid == TF_OP_conj || opid == TF_OP_real || opid == TF_OP_imag || opid == TF_OP_angle;
}

/* The elementwise ops defined on complex values. */
static bool complex_defined(uint32_t opid)
{
    switch (opid) {
    case TF_OP_neg:
    case TF_OP_abs:
    case TF_OP_sign:
    case TF_OP_exp:
    case TF_OP_log:
    case TF_OP_sin:
    case TF_OP_cos:
    case TF_OP_tanh:
    case TF_OP_sqrt:
    case TF_OP_rsqrt:
    case TF_OP_add:
    case TF_OP_sub:
    case TF_OP_mul:
    case TF_OP_div:
    case TF_OP_pow: return true;
    }
    return complex_only(opid);
}

tf_status tf__complex_check(const char *op, const char *arg, uint32_t opid, tf_dtype dtype)
{
    if (opid == TF_OP_complex) {
        if (!tf_dtype_is_float(dtype))
            return tf__error(TF_ERR_DTYPE_MISMATCH, op, arg,
                             "%s: the parts must be f32 or f64, not %s", op, tf_dtype_name(dtype));
        return TF_OK;
    }
    if (tf_dtype_is_complex(dtype) && !complex_defined(opid))
        return tf__error(TF_ERR_DTYPE_MISMATCH, op, arg, "%s: not defined for %s values", op,
                         tf_dtype_name(dtype));
    if (!tf_dtype_is_complex(dtype) && complex_only(opid))
        return tf__error(TF_ERR_DTYPE_MISMATCH, op, arg,
                         "%s: defined for c64 and c128 values, not %s", op, tf_dtype_name(dtype));
    return TF_OK;
}

tf_dtype tf__unary_dtype(uint32_t opid, tf_dtype dtype)
{
    bool part =
        opid == TF_OP_abs || opid == TF_OP_real || opid == TF_OP_imag || opid == TF_OP_angle;
    return part ? tf_dtype_real_of(dtype) : dtype;
}

bool tf__holomorphic(uint32_t opid)
{
    return opid != TF_OP_abs && opid != TF_OP_sign && !complex_only(opid);
}

/* ---- promotion ---- */

/* Whether a and b promote (one complex, both inexact), and to what: the
   complex dtype whose parts hold both (NumPy). */
static bool promoted(tf_dtype a, tf_dtype b, tf_dtype *to)
{
    if (!tf_dtype_is_inexact(a) || !tf_dtype_is_inexact(b) ||
        (!tf_dtype_is_complex(a) && !tf_dtype_is_complex(b)))
        return false;
    bool wide = tf_dtype_real_of(a) == TF_F64 || tf_dtype_real_of(b) == TF_F64;
    *to = wide ? TF_C128 : TF_C64;
    return true;
}

tf_status tf__promote(tf_session *s, const char *op, tf_eager *const *xs, const char *const *names,
                      tf_eager **conv)
{
    tf_dtype a = xs[0]->value->dtype, b = xs[1]->value->dtype, to = a;
    if (a != b && !promoted(a, b, &to))
        return tf__error(TF_ERR_DTYPE_MISMATCH, op, names[1], "%s: %s is %s, %s is %s", op,
                         names[0], tf_dtype_name(a), names[1], tf_dtype_name(b));
    for (int k = 0; k < 2; k++) {
        tf_status st = TF_OK;
        if (xs[k]->value->dtype == to) {
            tf_eager_retain(xs[k]);
            conv[k] = xs[k];
        } else {
            st = tf_session_convert(s, xs[k], to, &conv[k]);
        }
        if (st) {
            tf_eager_release(conv[0]);
            conv[0] = NULL;
            return st;
        }
    }
    return TF_OK;
}

/* ---- rules of the non-holomorphic ops ---- */

/* A rank-0 constant of the part dtype of z's. */
static tf_eager *rb_part_scalar(rule_builder *b, const tf_eager *z, double v)
{
    tf_eager *o = NULL;
    RB_CALL_(b, tf_session_scalar(b->s, tf_dtype_real_of(z->value->dtype), v, &o));
}

/* The imaginary unit in z's (complex) dtype, rank 0. */
static tf_eager *rb_i(rule_builder *b, tf_eager *z)
{
    return rb_complex(b, rb_part_scalar(b, z, 0.0), rb_part_scalar(b, z, 1.0));
}

/* |z| with 0 replaced by 1 (the rules below are 0 there: their numerators
   vanish with sign(z) = 0), and sign(z) = z / |z|. */
static tf_eager *safe_abs(rule_builder *b, tf_eager *z)
{
    tf_eager *r = rb_abs(b, z);
    tf_eager *zero = rb_part_scalar(b, z, 0.0);
    return rb_select(b, rb_compare(b, r, zero, TF_COMPARE_EQ), rb_part_scalar(b, z, 1.0), r);
}

/*
 * The derivative of sign(z) = s applied to v (a tangent or a cotangent: the
 * map is self-adjoint): (v - s Re(conj(s) v)) / |z|, 0 at z = 0.
 */
static tf_eager *sign_map(rule_builder *b, tf_eager *z, tf_eager *s, tf_eager *v)
{
    tf_eager *radial = rb_mul(b, s, rb_real(b, rb_mul(b, rb_conj(b, s), v)));
    tf_eager *r = safe_abs(b, z);
    tf_eager *d = rb_div(b, rb_sub(b, v, radial), r);
    tf_eager *mask = rb_compare(b, rb_abs(b, z), rb_part_scalar(b, z, 0.0), TF_COMPARE_EQ);
    return rb_select(b, mask, rb_scalar(b, z, 0.0), d);
}

/*
 * Reverse rules (cot: the output's cotangent; real for abs, real, imag,
 * angle): conj: conj(cot); real: (cot, 0); imag: (0, cot), as the loss's
 * derivative along y is cot; abs: cot sign(z) (0 at 0); angle:
 * cot i z / |z|^2 = cot i sign(z) / |z| (0 at 0), as d atan2(y, x) =
 * (x dy - y dx) / |z|^2; sign: sign_map.
 */
tf_status tf__complex_unary_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                                const bool *need, tf_eager **cin)
{
    if (!need[0])
        return TF_OK;
    rule_builder b = rb_begin(s);
    tf_eager *z = nd->inputs[0], *r = NULL;
    switch (nd->op) {
    case TF_OP_conj: r = rb_conj(&b, cot); break;
    case TF_OP_real: r = rb_cast(&b, cot, z->value->dtype); break;
    case TF_OP_imag: r = rb_complex(&b, rb_part_scalar(&b, z, 0.0), cot); break;
    case TF_OP_abs: r = rb_mul(&b, cot, rb_sign(&b, z)); break;
    case TF_OP_angle:
        r = rb_mul(&b, cot, rb_div(&b, rb_mul(&b, rb_i(&b, z), rb_sign(&b, z)), safe_abs(&b, z)));
        break;
    case TF_OP_sign: r = sign_map(&b, z, out, cot); break;
    }
    if (r && !tf__same_shape(r->value, z->value))
        r = rb_broadcast_to(&b, r, z); /* a rank-0 zero met a smaller cot */
    return rb_done(&b, r, &cin[0]);
}

/*
 * Forward rules, the real-linear maps themselves: conj(t), Re t, Im t,
 * Re(conj(sign z) t) for abs, Im(conj(sign z) t) / |z| for angle (0 at 0),
 * sign_map for sign.
 */
tf_status tf__complex_unary_jvp(tf_session *s, tf_eager *out, const tf_node *nd,
                                tf_eager *const *tin, tf_eager **tout)
{
    tf_eager *z = nd->inputs[0], *t = tin[0], *r = NULL;
    if (!t)
        return TF_OK;
    rule_builder b = rb_begin(s);
    switch (nd->op) {
    case TF_OP_conj: r = rb_conj(&b, t); break;
    case TF_OP_real: r = rb_real(&b, t); break;
    case TF_OP_imag: r = rb_imag(&b, t); break;
    case TF_OP_abs: r = rb_real(&b, rb_mul(&b, rb_conj(&b, rb_sign(&b, z)), t)); break;
    case TF_OP_angle:
        r = rb_div(&b, rb_imag(&b, rb_mul(&b, rb_conj(&b, rb_sign(&b, z)), t)), safe_abs(&b, z));
        break;
    case TF_OP_sign: r = sign_map(&b, z, out, t); break;
    }
    return rb_done(&b, r, tout);
}

/* complex(re, im): the cotangents are Re cot and Im cot (summed back over a
   broadcast); the tangent is complex(t_re, t_im). */
static tf_status complex_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                             const bool *need, tf_eager **cin)
{
    rule_builder b = rb_begin(s);
    if (need[0])
        rb_set(&b, rb_sum_to(&b, rb_real(&b, cot), nd->inputs[0]), &cin[0]);
    if (need[1])
        rb_set(&b, rb_sum_to(&b, rb_imag(&b, cot), nd->inputs[1]), &cin[1]);
    return rb_finish(&b);
}

static tf_status complex_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                             tf_eager **tout)
{
    if (!tin[0] && !tin[1])
        return TF_OK;
    rule_builder b = rb_begin(s);
    tf_eager *re = tin[0] ? tin[0] : rb_scalar(&b, nd->inputs[0], 0.0);
    tf_eager *im = tin[1] ? tin[1] : rb_scalar(&b, nd->inputs[0], 0.0);
    tf_eager *r = rb_complex(&b, re, im);
    if (r && !tf__same_shape(r->value, out->value))
        r = rb_broadcast_to(&b, r, out);
    return rb_done(&b, r, tout);
}

const tf_op_rule tf__rule_complex = {.name = "complex", .vjp = complex_vjp, .jvp = complex_jvp};
