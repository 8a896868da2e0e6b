/*
 * common.glsl - what every compute shader of the Vulkan engine shares: the
 * element types chosen by the build (-DS_<dtype> for the source operand
 * with dtype F32, F64, I32, I64, B8 (bool), C64 or C128 (S = vec2 or dvec2,
 * R its part type), -DD_<dtype> for the destination, -DW_<bits> for
 * type-blind shaders, W_128 the 16-byte c128 elements), the
 * parameter block (binding 13), the per-batch error word (binding 14), the
 * push constants and the strided-offset walk. Bindings 0 .. 12 are the
 * operands (VK_MAX_BINDINGS in vk_internal.h; only FUSED names them all).
 *
 * Layout parameters (P, int32 words) of the elementwise shaders:
 *   P[0] rank, P[1..8] extents, then per operand j (0 = output):
 *   P[9 + 9j] element offset, P[10 + 9j .. 17 + 9j] strides in elements.
 * The host merges and drops axes first, so dense operands walk as rank 1.
 */
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

#define WG 256
layout(local_size_x = WG) in;

layout(std430, binding = 13) readonly buffer Params { int P[]; };
layout(std430, binding = 14) buffer Errors { uint ERR[]; };

layout(push_constant) uniform Push {
    uint n;  /* elements (or outputs) to produce */
    uint a0; /* per-shader argument words */
    uint a1;
    uint a2;
} pc;

layout(constant_id = 0) const uint OP = 0;

#define ERR_OUT_OF_RANGE 1u
#define ERR_DIV_ZERO 2u
#define ERR_INDEX 3u

/* Records the first data-dependent failure of the batch. */
void raise_error(uint code, uint index)
{
    if (atomicCompSwap(ERR[0], 0u, code) == 0u)
        ERR[1] = index;
}

#if defined(S_I32) || defined(S_I64)
#define S_INT 1
#endif

#if defined(S_F32)
#define S float
#elif defined(S_F64)
#define S double
#elif defined(S_I32)
#define S int
#elif defined(S_I64)
#define S int64_t
#elif defined(S_B8)
#define S uint8_t
#elif defined(S_C64)
#define S vec2 /* (re, im); R the part type */
#define R float
#define S_CPLX 1
#elif defined(S_C128)
#define S dvec2
#define R double
#define S_CPLX 1
#endif

#if defined(D_F32)
#define D float
#elif defined(D_F64)
#define D double
#elif defined(D_I32)
#define D int
#elif defined(D_I64)
#define D int64_t
#elif defined(D_B8)
#define D uint8_t
#endif

/* -DVEC4: the dense variant of an elementwise shader moves 4 elements per
   16-byte access (see vec4_range below); V4 is the vector of S or W. */
#if defined(VEC4)
#if defined(S_F32)
#define V4 vec4
#elif defined(S_I32)
#define V4 ivec4
#elif defined(W_32)
#define V4 uvec4
#endif
#endif

#if defined(W_8)
#define W uint8_t
#elif defined(W_32)
#define W uint
#elif defined(W_64)
#define W uvec2
#elif defined(W_128)
#define W uvec4
#endif

/* Element offsets of the first `count` of NOPS operands for column-major linear index i
   (off[count ..] are left unset). */
void walk_first(uint i, int count, out int off[NOPS])
{
    int rank = P[0];
    for (int j = 0; j < count; j++)
        off[j] = P[9 + 9 * j];
    uint r = i;
    for (int k = 0; k < rank; k++) {
        uint e = uint(P[1 + k]);
        int idx = int(r % e);
        r /= e;
        for (int j = 0; j < count; j++)
            off[j] += idx * P[10 + 9 * j + k];
    }
}

/* Element offsets of all NOPS operands. */
void walk(uint i, out int off[NOPS])
{
    walk_first(i, NOPS, off);
}

/*
 * The dense (VEC4) variants: the host chose one only when every operand is
 * dense with stride 1 after merging and starts at an element offset that is
 * a multiple of 4, so operand j's vector index is P[9 + 9j] / 4 + q. Each
 * invocation takes vectors q of [0, pc.n / 4) with a grid stride; the last
 * pc.n % 4 elements go one each to the first invocations (VEC4_TAIL).
 */
#define VEC4_FOR_EACH(q) \
    for (uint q = gl_GlobalInvocationID.x; q < pc.n / 4u; q += gl_NumWorkGroups.x * WG)
#define VEC4_TAIL(t) \
    uint t = (pc.n / 4u) * 4u + gl_GlobalInvocationID.x; \
    if (t < pc.n)
#define VOFF(j) (P[9 + 9 * (j)] / 4)

#define FOR_EACH_ELEMENT(i) \
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += gl_NumWorkGroups.x * WG)
