/*
 * math64.glsl - double-precision exp, log, expm1, log1p, sin, cos, tanh,
 * sigmoid, erf and pow, which GLSL does not define for double. Each reduces
 * its argument and sums a series far enough for ~1 ulp in the reduced
 * range; accuracy is about 1e-15 relative for ordinary arguments (sin/cos
 * reduce by pi/2 in three parts, good to |x| ~ 1e8).
 */
const double LN2_HI = 6.93147180369123816490e-01LF;
const double LN2_LO = 1.90821492927058770002e-10LF;
const double INV_LN2 = 1.44269504088896338700e+00LF;
const double PIO2_1 = 1.57079632673412561417e+00LF;
const double PIO2_2 = 6.07710050630396597660e-11LF;
const double PIO2_3 = 2.02226624871116645580e-21LF;
const double INV_PIO2 = 6.36619772367581382433e-01LF;

double d_inf() { return 1.0LF / 0.0LF; }

double d_exp(double x)
{
    if (isnan(x))
        return x;
    if (x > 709.782712893384LF)
        return d_inf();
    if (x < -745.1332191019412LF)
        return 0.0LF;
    double k = floor(x * INV_LN2 + 0.5LF);
    double r = (x - k * LN2_HI) - k * LN2_LO; /* |r| <= ln2/2 */
    double term = 1.0LF, sum = 1.0LF;
    for (int n = 1; n <= 14; n++) {
        term *= r / double(n);
        sum += term;
    }
    int ki = int(k);
    /* two steps so neither scale overflows for k near +-1024 */
    return ldexp(ldexp(sum, ki / 2), ki - ki / 2);
}

double d_log(double x)
{
    if (isnan(x) || x < 0.0LF)
        return 0.0LF / 0.0LF;
    if (x == 0.0LF)
        return -d_inf();
    if (isinf(x))
        return x;
    int e;
    double m = frexp(x, e); /* m in [0.5, 1) */
    if (m < 0.70710678118654752440LF) {
        m *= 2.0LF;
        e -= 1;
    }
    double f = (m - 1.0LF) / (m + 1.0LF), s = f * f; /* |f| <= 0.172 */
    double sum = 0.0LF, p = 1.0LF;
    for (int n = 0; n <= 12; n++) {
        sum += p / double(2 * n + 1);
        p *= s;
    }
    double lm = 2.0LF * f * sum;
    return double(e) * LN2_HI + (double(e) * LN2_LO + lm);
}

double d_expm1(double x)
{
    if (x == 0.0LF)
        return x; /* -0 too, which the series' first sum would make +0 */
    if (abs(x) < 0.35LF) {
        double term = x, sum = x;
        for (int n = 2; n <= 18; n++) {
            term *= x / double(n);
            sum += term;
        }
        return sum;
    }
    return d_exp(x) - 1.0LF;
}

/* Kahan: u = 1 + x rounds x, and log(u) * x / (u - 1) corrects log(u) by what it lost
   (d_log is relatively accurate near 1). precise (NoContraction) keeps drivers from
   reassociating (1 + x) - 1 to x, which cancels the correction: lavapipe did. */
double d_log1p(double x)
{
    precise double u = 1.0LF + x;
    if (u == 1.0LF)
        return x;
    if (isinf(u) || u <= 0.0LF)
        return d_log(u);
    precise double r = d_log(u) * x / (u - 1.0LF);
    return r;
}

/* sin (want_cos false) or cos of x. */
double d_sincos(double x, bool want_cos)
{
    if (isnan(x) || isinf(x))
        return 0.0LF / 0.0LF;
    double k = floor(x * INV_PIO2 + 0.5LF);
    double r = ((x - k * PIO2_1) - k * PIO2_2) - k * PIO2_3; /* |r| <= pi/4 */
    int q = int(mod(k, 4.0LF)) + (want_cos ? 1 : 0);
    double r2 = r * r;
    double s = r, st = r, c = 1.0LF, ct = 1.0LF;
    for (int n = 1; n <= 10; n++) {
        st *= -r2 / double((2 * n) * (2 * n + 1));
        s += st;
        ct *= -r2 / double((2 * n - 1) * (2 * n));
        c += ct;
    }
    switch (q & 3) {
    case 0: return s;
    case 1: return c;
    case 2: return -s;
    }
    return -c;
}

double d_tanh(double x)
{
    if (isnan(x))
        return x;
    if (abs(x) > 22.0LF)
        return sign(x);
    double t = d_expm1(2.0LF * abs(x));
    return sign(x) * (t / (t + 2.0LF));
}

double d_sigmoid(double x)
{
    if (x >= 0.0LF)
        return 1.0LF / (1.0LF + d_exp(-x));
    double e = d_exp(x);
    return e / (1.0LF + e);
}

double d_erf(double v)
{
    if (isnan(v))
        return v;
    double a = abs(v);
    if (a < 2.0LF) {
        double x2 = a * a, term = a, sum = a;
        for (int n = 1; n < 60; n++) {
            term *= -x2 / double(n);
            double add = term / double(2 * n + 1);
            sum += add;
            if (abs(add) < 1e-17LF * abs(sum))
                break;
        }
        return sign(v) * sum * 1.1283791670955125739LF;
    }
    if (a > 27.0LF)
        return sign(v);
    double cf = a;
    for (int k = 120; k >= 1; k--)
        cf = a + double(k) * 0.5LF / cf;
    double erfc = d_exp(-a * a) / (cf * 1.7724538509055160273LF);
    return sign(v) * (1.0LF - erfc);
}

bool d_is_odd_integer(double y)
{
    return floor(y) == y && abs(y) < 9007199254740992.0LF && mod(y, 2.0LF) == 1.0LF;
}

/* C pow, as f_pow of binary.comp, on d_exp and d_log. */
double d_pow(double x, double y)
{
    if (y == 0.0LF || x == 1.0LF)
        return 1.0LF;
    if (isnan(x) || isnan(y))
        return x + y;
    double ax = abs(x);
    if (x == 0.0LF) {
        double r = y < 0.0LF ? d_inf() : 0.0LF;
        return (d_is_odd_integer(y) && 1.0LF / x < 0.0LF) ? -r : r;
    }
    if (isinf(y))
        return ax == 1.0LF ? 1.0LF : ((ax > 1.0LF) == (y > 0.0LF) ? d_inf() : 0.0LF);
    double r = isinf(ax) ? (y > 0.0LF ? ax : 0.0LF) : d_exp(y * d_log(ax));
    if (x < 0.0LF) {
        if (floor(y) != y)
            return 0.0LF / 0.0LF;
        return d_is_odd_integer(y) ? -r : r;
    }
    return r;
}
