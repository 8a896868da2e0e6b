#version 450
/*
 * UNARY on complex values (S_C64, S_C128): out (0) = f(in (1)), the op
 * (tf_unary_op) the specialisation constant OP. ABS, REAL, IMAG and ANGLE
 * write the part dtype R: binding 0 is then seen as an array of R. The
 * functions are complex.glsl's.
 */
#define NOPS 2
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { S o[]; };
layout(std430, binding = 0) writeonly buffer OutR { R o_r[]; }; /* the same binding, real */
layout(std430, binding = 1) readonly buffer In { S x[]; };

#include "complex.glsl"

/* tf_unary_op numbers: NEG 0, ABS 1, SIGN 2, EXP 3, LOG 4, SIN 7, COS 8, TANH 9, SQRT 10,
   RSQRT 11, RECIPROCAL 14, SQUARE 15, CONJ 19, REAL 20, IMAG 21, ANGLE 22 */
bool real_out() { return OP == 1u || OP == 20u || OP == 21u || OP == 22u; }

R apply_real(S v)
{
    switch (OP) {
    case 1: return c_abs(v);
    case 20: return v.x;
    case 21: return v.y;
    }
    return c_arg(v);
}

S apply(S v)
{
    switch (OP) {
    case 0: return -v;
    case 2: return c_sign(v);
    case 3: return c_exp(v);
    case 4: return c_log(v);
    case 7: return c_sin(v);
    case 8: return c_cos(v);
    case 9: return c_tanh(v);
    case 10: return c_sqrt(v);
    case 11: return c_rsqrt(v);
    case 14: return c_recip(v);
    case 15: return c_square(v);
    case 19: return S(v.x, -v.y);
    }
    return v;
}

void main()
{
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        if (real_out())
            o_r[off[0]] = apply_real(x[off[1]]);
        else
            o[off[0]] = apply(x[off[1]]);
    }
}
