//go:build cgo && !purego

// The floating-point peak of one core: independent chains of vector FMAs,
// enough of them (12) to hide the FMA's latency on every port it issues to,
// and few enough to stay in registers (16 with AVX2).
#define PEAK_CHAINS 12

// PEAK_VARIANT defines peak_SUF, iters rounds of the chains acc = acc*m + a
// on vectors of V floats; it returns their sum, so that none is dropped.
#define PEAK_VARIANT(SUF, TARGET, V)                                          \
	TARGET static float peak_##SUF(long iters, float mul, float add) {        \
		typedef float vf __attribute__((vector_size(4 * (V))));                 \
		vf acc[PEAK_CHAINS], m = {0}, a = {0};                                  \
		m += mul, a += add;                                                     \
		for (int j = 0; j < PEAK_CHAINS; j++) acc[j] = a * (float)j;            \
		for (long n = 0; n < iters; n++)                                        \
			for (int j = 0; j < PEAK_CHAINS; j++) acc[j] = acc[j] * m + a;      \
		float s = 0;                                                            \
		for (int j = 0; j < PEAK_CHAINS; j++)                                   \
			for (int i = 0; i < (V); i++) s += acc[j][i];                       \
		return s;                                                               \
	}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
PEAK_VARIANT(v4, __attribute__((target("arch=x86-64-v4"))), 16)
PEAK_VARIANT(v3, __attribute__((target("arch=x86-64-v3"))), 8)
#endif
PEAK_VARIANT(base, , 4)

// ls_peak_flops runs iters rounds at level (4: AVX-512, 3: AVX2 + FMA,
// else the baseline's multiply and add) and returns the FLOPs done; sink
// receives the sum.
double ls_peak_flops(int level, long iters, float *sink) {
	int lanes = 4;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	if (level == 4) {
		*sink = peak_v4(iters, 0.999999f, 1e-7f);
		lanes = 16;
	} else if (level == 3) {
		*sink = peak_v3(iters, 0.999999f, 1e-7f);
		lanes = 8;
	} else
#endif
		*sink = peak_base(iters, 0.999999f, 1e-7f);
	return 2.0 * PEAK_CHAINS * lanes * (double)iters;
}
