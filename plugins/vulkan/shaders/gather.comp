#version 450
/*
 * GATHER: out (0) = x (1) at the positions read from index (2, i32, or i64
 * with -DIDX_I64). The host folds both modes into one walk over out: x's
 * stride on the gathered axis is 0 in the walk and the index element of
 * each output element comes from the index operand's walk (rank-1 index of
 * INDEX_SELECT: stride only along the axis). P[36] is x's stride along the
 * axis, P[37] its extent. An index outside [0, extent) raises ERR_INDEX.
 */
#define NOPS 3
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { W o[]; };
layout(std430, binding = 1) readonly buffer In { W x[]; };
#ifdef IDX_I64
layout(std430, binding = 2) readonly buffer Index { uvec2 ix[]; };
#else
layout(std430, binding = 2) readonly buffer Index { int ix[]; };
#endif

void main()
{
    uint ext = uint(P[37]);
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
#ifdef IDX_I64
        uvec2 v = ix[off[2]];
        bool ok = v.y == 0u && v.x < ext;
        int j = int(v.x);
#else
        int j = ix[off[2]];
        bool ok = j >= 0 && uint(j) < ext;
#endif
        if (ok)
            o[off[0]] = x[off[1] + j * P[36]];
        else
            raise_error(ERR_INDEX, i);
    }
}
