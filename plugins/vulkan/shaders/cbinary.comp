#version 450
/*
 * BINARY on complex values (S_C64, S_C128): out (0) = f(a (1), b (2)), the
 * op (tf_binary_op) the specialisation constant OP: ADD, SUB, MUL and DIV
 * (C's operators, complex.glsl), POW; COMPLEX (11) reads two parts of type R
 * (bindings 1 and 2 seen as arrays of R) and writes re + im i, every bit of
 * both kept.
 */
#define NOPS 3
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { S o[]; };
layout(std430, binding = 1) readonly buffer A { S a[]; };
layout(std430, binding = 2) readonly buffer B { S b[]; };
layout(std430, binding = 1) readonly buffer AR { R a_r[]; }; /* COMPLEX's parts */
layout(std430, binding = 2) readonly buffer BR { R b_r[]; };

#include "complex.glsl"

S apply(S x, S y)
{
    switch (OP) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return c_mul(x, y);
    case 3: return c_div(x, y);
    case 4: return c_pow(x, y);
    }
    return x;
}

void main()
{
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        if (OP == 11u)
            o[off[0]] = S(a_r[off[1]], b_r[off[2]]);
        else
            o[off[0]] = apply(a[off[1]], b[off[2]]);
    }
}
