/*
 * math.glsl - float helpers with the ABI's semantics where GLSL's built-ins
 * differ: NaN-propagating max/min with -0 < +0, C fmod (exact, by Sterbenz-exact
 * subtraction of scaled divisors). F is the float type (float or double);
 * float_ops.glsl and math64.glsl hold the transcendental functions.
 */
/* IEEE 754-2019 maximum/minimum: -0 < +0 (GLSL's max and min may return either zero of
   two; 1 / -0 = -inf tells the zeros apart). */
F f_max(F a, F b)
{
    return isnan(a) || isnan(b) ? a + b : a == b ? (F(1) / a < F(0) ? b : a) : max(a, b);
}
F f_min(F a, F b)
{
    return isnan(a) || isnan(b) ? a + b : a == b ? (F(1) / a < F(0) ? a : b) : min(a, b);
}

F f_fmod(F x, F y)
{
    if (isnan(x) || isnan(y) || isinf(x) || y == F(0))
        return F(0) / F(0) + (x - x);
    if (isinf(y))
        return x;
    F ax = abs(x), ay = abs(y);
    if (ax < ay)
        return x;
    int ey, er;
    frexp(ay, ey);
    F r = ax;
    while (r >= ay) {
        frexp(r, er);
        F t = ldexp(ay, er - ey); /* ay scaled to r's binade: t <= r < 2t or r < t */
        if (t > r)
            t *= F(0.5);
        r -= t; /* exact: t <= r < 2t */
    }
    return x < F(0) ? -r : r;
}
