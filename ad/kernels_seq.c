//go:build cgo && !purego

// Kernels for the sequence models' ops (op_lstm.go, op_attention.go):
// the LSTM cell's pointwise part and Bahdanau attention's scores and
// context vectors, forward and backward, vectorised along the feature axis.
// Their cost is in exp and tanh, which the C library computes one value at
// a time; here they are polynomial approximations on whole vectors:
//
//   exp: Cephes' expf (range reduction by ln 2 split in two constants, a
//        degree-5 polynomial, scaling by 2ⁿ through the exponent bits),
//        relative error below 2·10⁻⁷ on [−87, 88], inputs clamped there;
//   tanh: Cephes' tanhf (an odd polynomial below |x| = 0.625, else
//        1 − 2/(e^{2|x|} + 1) with the sign restored);
//   sigmoid: 1/(1 + e^{−x}).
//
// Tails shorter than a vector run through the same vector code on a
// padded copy, so a value's result never depends on its position. The Go
// loops next to each op are the float64 path and the reference the tests
// compare these with.

#include <stddef.h>
#include <string.h>
#include "kernels.h"

#define ALWAYS_SEQ static inline __attribute__((always_inline))

#define DEFINE_SEQ_KERNELS(SUF, TARGET, V)                                                                      \
	typedef float sf_##SUF __attribute__((vector_size(4 * (V)), aligned(4), may_alias));                        \
	typedef int si_##SUF __attribute__((vector_size(4 * (V)), aligned(4)));                                     \
                                                                                                                \
	TARGET ALWAYS_SEQ sf_##SUF splat_##SUF(float x) {                                                           \
		sf_##SUF v;                                                                                             \
		for (int l = 0; l < V; l++) v[l] = x;                                                                   \
		return v;                                                                                               \
	}                                                                                                           \
	/* sel: a where the mask (a comparison's all-ones lanes) is set, else b. */                                  \
	TARGET ALWAYS_SEQ sf_##SUF sel_##SUF(si_##SUF m, sf_##SUF a, sf_##SUF b) {                                  \
		return (sf_##SUF)((m & (si_##SUF)a) | (~m & (si_##SUF)b));                                              \
	}                                                                                                           \
	TARGET ALWAYS_SEQ sf_##SUF vmin_##SUF(sf_##SUF a, sf_##SUF b) { return sel_##SUF(a < b, a, b); }             \
	TARGET ALWAYS_SEQ sf_##SUF vmax_##SUF(sf_##SUF a, sf_##SUF b) { return sel_##SUF(a > b, a, b); }             \
                                                                                                                \
	TARGET ALWAYS_SEQ sf_##SUF vexp_##SUF(sf_##SUF x) {                                                         \
		x = vmin_##SUF(vmax_##SUF(x, splat_##SUF(-87.3f)), splat_##SUF(88.7f));                                 \
		/* n = round(x/ln 2) by the 1.5·2²³ trick (exact for |x/ln 2| < 2²²). */                                \
		const sf_##SUF magic = splat_##SUF(12582912.0f);                                                        \
		sf_##SUF n = (x * splat_##SUF(1.44269504088896341f) + magic) - magic;                                   \
		sf_##SUF r = x - n * splat_##SUF(0.693359375f) - n * splat_##SUF(-2.12194440e-4f);                       \
		sf_##SUF p = splat_##SUF(1.9875691500e-4f);                                                             \
		p = p * r + splat_##SUF(1.3981999507e-3f);                                                              \
		p = p * r + splat_##SUF(8.3334519073e-3f);                                                              \
		p = p * r + splat_##SUF(4.1665795894e-2f);                                                              \
		p = p * r + splat_##SUF(1.6666665459e-1f);                                                              \
		p = p * r + splat_##SUF(5.0000001201e-1f);                                                              \
		p = p * r * r + r + splat_##SUF(1.0f);                                                                  \
		si_##SUF e = (__builtin_convertvector(n, si_##SUF) + 127) << 23;                                        \
		return p * (sf_##SUF)e;                                                                                 \
	}                                                                                                           \
                                                                                                                \
	TARGET ALWAYS_SEQ sf_##SUF vsigmoid_##SUF(sf_##SUF x) {                                                     \
		return splat_##SUF(1.0f) / (splat_##SUF(1.0f) + vexp_##SUF(-x));                                        \
	}                                                                                                           \
                                                                                                                \
	TARGET ALWAYS_SEQ sf_##SUF vtanh_##SUF(sf_##SUF x) {                                                        \
		sf_##SUF ax = vmax_##SUF(x, -x);                                                                        \
		sf_##SUF z = x * x;                                                                                     \
		sf_##SUF small = splat_##SUF(-5.70498872745e-3f);                                                       \
		small = small * z + splat_##SUF(2.06390887954e-2f);                                                     \
		small = small * z + splat_##SUF(-5.37397155531e-2f);                                                    \
		small = small * z + splat_##SUF(1.33314422036e-1f);                                                     \
		small = small * z + splat_##SUF(-3.33332819422e-1f);                                                    \
		small = small * z * x + x;                                                                              \
		sf_##SUF big = splat_##SUF(1.0f) - splat_##SUF(2.0f) / (vexp_##SUF(ax + ax) + splat_##SUF(1.0f));      \
		big = sel_##SUF(x < splat_##SUF(0.0f), -big, big);                                                      \
		return sel_##SUF(ax < splat_##SUF(0.625f), small, big);                                                 \
	}                                                                                                           \
                                                                                                                \
	/* ld and st move n ≤ V lanes (zeros past n): a whole vector directly (see  \
	   kernels.c on memcpy), a part through memory. */                                                         \
	TARGET ALWAYS_SEQ sf_##SUF ld_##SUF(const float *p, int n) {                                                \
		if (n == V) return *(const sf_##SUF *)p;                                                                \
		sf_##SUF v = splat_##SUF(0.0f);                                                                         \
		memcpy(&v, p, sizeof(float) * (size_t)n);                                                               \
		return v;                                                                                               \
	}                                                                                                           \
	TARGET ALWAYS_SEQ void st_##SUF(float *p, sf_##SUF v, int n) {                                              \
		if (n == V) {                                                                                           \
			*(sf_##SUF *)p = v;                                                                                 \
			return;                                                                                             \
		}                                                                                                       \
		memcpy(p, &v, sizeof(float) * (size_t)n);                                                               \
	}                                                                                                           \
                                                                                                                \
	/* LSTM forward: one row chunk of n ≤ V lanes at column j. */                                               \
	TARGET ALWAYS_SEQ void lstm_fwd_chunk_##SUF(int hd, const float *g, const float *c, float *h, float *cn,   \
	                                            float *a, int j, int n) {                                       \
		sf_##SUF i = vsigmoid_##SUF(ld_##SUF(g + j, n)), f = vsigmoid_##SUF(ld_##SUF(g + hd + j, n));           \
		sf_##SUF gg = vtanh_##SUF(ld_##SUF(g + 2 * hd + j, n)), o = vsigmoid_##SUF(ld_##SUF(g + 3 * hd + j, n)); \
		sf_##SUF cv = f * ld_##SUF(c + j, n) + i * gg;                                                          \
		sf_##SUF tc = vtanh_##SUF(cv);                                                                          \
		st_##SUF(cn + j, cv, n), st_##SUF(h + j, o * tc, n);                                                    \
		st_##SUF(a + j, i, n), st_##SUF(a + hd + j, f, n), st_##SUF(a + 2 * hd + j, gg, n);                     \
		st_##SUF(a + 3 * hd + j, o, n), st_##SUF(a + 4 * hd + j, tc, n);                                        \
	}                                                                                                           \
	TARGET static void lstm_fwd_##SUF(int b, int hd, const float *gates, const float *c, float *h, float *cn,  \
	                                  float *act) {                                                             \
		for (int r = 0; r < b; r++) {                                                                           \
			const float *g = gates + (size_t)r * 4 * hd;                                                        \
			float *a = act + (size_t)r * 5 * hd;                                                                \
			const float *cr = c + (size_t)r * hd;                                                               \
			float *hr = h + (size_t)r * hd, *cnr = cn + (size_t)r * hd;                                         \
			int j = 0;                                                                                          \
			for (; j + V <= hd; j += V) lstm_fwd_chunk_##SUF(hd, g, cr, hr, cnr, a, j, V);                       \
			if (j < hd) lstm_fwd_chunk_##SUF(hd, g, cr, hr, cnr, a, j, hd - j);                                  \
		}                                                                                                       \
	}                                                                                                           \
                                                                                                                \
	TARGET ALWAYS_SEQ void lstm_bwd_chunk_##SUF(int hd, const float *a, const float *c, const float *dh,       \
	                                            const float *dcn, float *dg, float *dc, int j, int n) {         \
		sf_##SUF i = ld_##SUF(a + j, n), f = ld_##SUF(a + hd + j, n), gg = ld_##SUF(a + 2 * hd + j, n);          \
		sf_##SUF o = ld_##SUF(a + 3 * hd + j, n), tc = ld_##SUF(a + 4 * hd + j, n);                             \
		sf_##SUF one = splat_##SUF(1.0f), d = ld_##SUF(dcn + j, n), dhv = splat_##SUF(0.0f);                    \
		if (dh) {                                                                                               \
			dhv = ld_##SUF(dh + j, n);                                                                          \
			d += dhv * o * (one - tc * tc);                                                                     \
		}                                                                                                       \
		if (dg) {                                                                                               \
			st_##SUF(dg + j, ld_##SUF(dg + j, n) + d * gg * i * (one - i), n);                                  \
			st_##SUF(dg + hd + j, ld_##SUF(dg + hd + j, n) + d * ld_##SUF(c + j, n) * f * (one - f), n);        \
			st_##SUF(dg + 2 * hd + j, ld_##SUF(dg + 2 * hd + j, n) + d * i * (one - gg * gg), n);               \
			st_##SUF(dg + 3 * hd + j, ld_##SUF(dg + 3 * hd + j, n) + dhv * tc * o * (one - o), n);              \
		}                                                                                                       \
		if (dc) st_##SUF(dc + j, ld_##SUF(dc + j, n) + d * f, n);                                               \
	}                                                                                                           \
	TARGET static void lstm_bwd_##SUF(int b, int hd, const float *act, const float *c, const float *dh,        \
	                                  const float *dcn, float *dg, float *dc) {                                 \
		for (int r = 0; r < b; r++) {                                                                           \
			const float *a = act + (size_t)r * 5 * hd, *cr = c + (size_t)r * hd;                                \
			const float *dhr = dh ? dh + (size_t)r * hd : NULL, *dcnr = dcn + (size_t)r * hd;                   \
			float *dgr = dg ? dg + (size_t)r * 4 * hd : NULL, *dcr = dc ? dc + (size_t)r * hd : NULL;           \
			int j = 0;                                                                                          \
			for (; j + V <= hd; j += V) lstm_bwd_chunk_##SUF(hd, a, cr, dhr, dcnr, dgr, dcr, j, V);              \
			if (j < hd) lstm_bwd_chunk_##SUF(hd, a, cr, dhr, dcnr, dgr, dcr, j, hd - j);                         \
		}                                                                                                       \
	}                                                                                                           \
                                                                                                                \
	/* Additive scores: out[r·s + t] = Σ_j v_j tanh(keys[t·b + r][j] + q[r][j]), th keeps the tanh values. */  \
	TARGET static void scores_fwd_##SUF(int s, int b, int a, const float *keys, const float *q, const float *v, \
	                                    float *out, float *th) {                                                \
		for (int t = 0; t < s; t++)                                                                             \
			for (int r = 0; r < b; r++) {                                                                       \
				const float *k = keys + ((size_t)t * b + r) * a, *qr = q + (size_t)r * a;                       \
				float *tr = th + ((size_t)t * b + r) * a;                                                       \
				sf_##SUF acc = splat_##SUF(0.0f);                                                               \
				for (int j = 0; j < a; j += V) {                                                                \
					int n = a - j < V ? a - j : V;                                                              \
					sf_##SUF y = vtanh_##SUF(ld_##SUF(k + j, n) + ld_##SUF(qr + j, n));                          \
					st_##SUF(tr + j, y, n);                                                                     \
					acc += ld_##SUF(v + j, n) * y; /* lanes past n: v loads as 0 */                             \
				}                                                                                               \
				float sum = 0;                                                                                  \
				for (int l = 0; l < V; l++) sum += acc[l];                                                      \
				out[(size_t)r * s + t] = sum;                                                                   \
			}                                                                                                   \
	}                                                                                                           \
	TARGET static void scores_bwd_##SUF(int s, int b, int a, const float *th, const float *v, const float *g,  \
	                                    float *dk, float *dq, float *dv) {                                      \
		for (int t = 0; t < s; t++)                                                                             \
			for (int r = 0; r < b; r++) {                                                                       \
				float gs = g[(size_t)r * s + t];                                                                \
				if (gs == 0) continue;                                                                          \
				const float *tr = th + ((size_t)t * b + r) * a;                                                 \
				sf_##SUF gv = splat_##SUF(gs), one = splat_##SUF(1.0f);                                         \
				for (int j = 0; j < a; j += V) {                                                                \
					int n = a - j < V ? a - j : V;                                                              \
					sf_##SUF y = ld_##SUF(tr + j, n), d = gv * ld_##SUF(v + j, n) * (one - y * y);               \
					if (dk) {                                                                                   \
						float *p = dk + ((size_t)t * b + r) * a + j;                                            \
						st_##SUF(p, ld_##SUF(p, n) + d, n);                                                     \
					}                                                                                           \
					if (dq) st_##SUF(dq + (size_t)r * a + j, ld_##SUF(dq + (size_t)r * a + j, n) + d, n);       \
					if (dv) st_##SUF(dv + j, ld_##SUF(dv + j, n) + gv * y, n);                                  \
				}                                                                                               \
			}                                                                                                   \
	}                                                                                                           \
                                                                                                                \
	/* Cross-entropy: lse[r] = log Σ_j e^{x[r][j]} for rows with a target ≥ 0. */                                 \
	TARGET static void lse_rows_##SUF(int rows, int cols, const float *x, const int *targets, double *lse) {      \
		for (int r = 0; r < rows; r++) {                                                                             \
			if (targets[r] < 0) continue;                                                                               \
			const float *row = x + (size_t)r * cols;                                                                    \
			float m = row[0];                                                                                           \
			for (int j = 1; j < cols; j++) m = row[j] > m ? row[j] : m;                                                 \
			sf_##SUF mv = splat_##SUF(m), acc = splat_##SUF(0.0f);                                                      \
			int j = 0;                                                                                                  \
			for (; j + V <= cols; j += V) acc += vexp_##SUF(ld_##SUF(row + j, V) - mv);                                 \
			double sum = 0;                                                                                             \
			if (j < cols) {                                                                                             \
				/* Only the tail's first cols − j lanes are values. */                                           \
				sf_##SUF t = vexp_##SUF(ld_##SUF(row + j, cols - j) - mv);                                                 \
				for (int l = 0; l < cols - j; l++) sum += t[l];                                                            \
			}                                                                                                           \
			for (int l = 0; l < V; l++) sum += acc[l];                                                                  \
			lse[r] = m + __builtin_log(sum);                                                                            \
		}                                                                                                            \
	}                                                                                                             \
	/* gx[r][j] += scale[r]·(e^{x[r][j] − lse[r]} − [j = t_r]) for rows with t_r ≥ 0. */                          \
	TARGET static void xent_bwd_##SUF(int rows, int cols, const float *x, const int *targets, const double *lse,  \
	                                  const double *scale, float *gx) {                                           \
		for (int r = 0; r < rows; r++) {                                                                             \
			if (targets[r] < 0) continue;                                                                               \
			const float *row = x + (size_t)r * cols;                                                                    \
			float *g = gx + (size_t)r * cols;                                                                           \
			sf_##SUF l = splat_##SUF((float)lse[r]), sc = splat_##SUF((float)scale[r]);                                 \
			for (int j = 0; j < cols; j += V) {                                                                         \
				int n = cols - j < V ? cols - j : V;                                                                       \
				sf_##SUF p = vexp_##SUF(ld_##SUF(row + j, n) - l);                                                         \
				st_##SUF(g + j, ld_##SUF(g + j, n) + sc * p, n);                                                           \
			}                                                                                                           \
			g[targets[r]] -= (float)scale[r];                                                                           \
		}                                                                                                            \
	}                                                                                                             \
                                                                                                               \
	/* Context: out[r] += Σ_t w[r·s + t] mem[t·b + r]. */                                                       \
	TARGET static void attend_fwd_##SUF(int s, int b, int d, const float *w, const float *mem, float *out) {    \
		for (int t = 0; t < s; t++)                                                                             \
			for (int r = 0; r < b; r++) {                                                                       \
				float wt = w[(size_t)r * s + t];                                                                \
				if (wt == 0) continue;                                                                          \
				const float *m = mem + ((size_t)t * b + r) * d;                                                 \
				float *o = out + (size_t)r * d;                                                                 \
				sf_##SUF wv = splat_##SUF(wt);                                                                  \
				for (int j = 0; j < d; j += V) {                                                                \
					int n = d - j < V ? d - j : V;                                                              \
					st_##SUF(o + j, ld_##SUF(o + j, n) + wv * ld_##SUF(m + j, n), n);                           \
				}                                                                                               \
			}                                                                                                   \
	}                                                                                                           \
	TARGET static void attend_bwd_##SUF(int s, int b, int d, const float *w, const float *mem, const float *g, \
	                                    float *dw, float *dm) {                                                 \
		for (int t = 0; t < s; t++)                                                                             \
			for (int r = 0; r < b; r++) {                                                                       \
				const float *m = mem + ((size_t)t * b + r) * d, *gr = g + (size_t)r * d;                        \
				sf_##SUF acc = splat_##SUF(0.0f), wv = splat_##SUF(w[(size_t)r * s + t]);                       \
				for (int j = 0; j < d; j += V) {                                                                \
					int n = d - j < V ? d - j : V;                                                              \
					sf_##SUF gj = ld_##SUF(gr + j, n);                                                          \
					if (dw) acc += ld_##SUF(m + j, n) * gj;                                                     \
					if (dm) {                                                                                   \
						float *p = dm + ((size_t)t * b + r) * d + j;                                            \
						st_##SUF(p, ld_##SUF(p, n) + wv * gj, n);                                               \
					}                                                                                           \
				}                                                                                               \
				if (dw) {                                                                                       \
					float sum = 0;                                                                              \
					for (int l = 0; l < V; l++) sum += acc[l];                                                  \
					dw[(size_t)r * s + t] += sum;                                                               \
				}                                                                                               \
			}                                                                                                   \
	}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HAVE_X86_SEQ 1
DEFINE_SEQ_KERNELS(v4, __attribute__((target("arch=x86-64-v4"))), 16)
DEFINE_SEQ_KERNELS(v3, __attribute__((target("arch=x86-64-v3"))), 8)
#endif
DEFINE_SEQ_KERNELS(base, , 4)

typedef struct {
	void (*lstm_fwd)(int, int, const float *, const float *, float *, float *, float *);
	void (*lstm_bwd)(int, int, const float *, const float *, const float *, const float *, float *, float *);
	void (*scores_fwd)(int, int, int, const float *, const float *, const float *, float *, float *);
	void (*scores_bwd)(int, int, int, const float *, const float *, const float *, float *, float *, float *);
	void (*attend_fwd)(int, int, int, const float *, const float *, float *);
	void (*attend_bwd)(int, int, int, const float *, const float *, const float *, float *, float *);
	void (*lse_rows)(int, int, const float *, const int *, double *);
	void (*xent_bwd)(int, int, const float *, const int *, const double *, const double *, float *);
} seq_table;

#define SEQ_TABLE(SUF)                                                                                       \
	{lstm_fwd_##SUF, lstm_bwd_##SUF, scores_fwd_##SUF, scores_bwd_##SUF, attend_fwd_##SUF, attend_bwd_##SUF, \
	 lse_rows_##SUF, xent_bwd_##SUF}

static seq_table seq = SEQ_TABLE(base);

// ls_seq_init picks the variant for the level ls_kernels_init chose.
void ls_seq_init(int level) {
	seq_table base = SEQ_TABLE(base);
	seq = base;
#ifdef HAVE_X86_SEQ
	seq_table v4 = SEQ_TABLE(v4), v3 = SEQ_TABLE(v3);
	if (level == 4) seq = v4;
	if (level == 3) seq = v3;
#endif
}

void ls_lstm_fwd(int b, int hd, const float *gates, const float *c, float *h, float *cn, float *act) {
	seq.lstm_fwd(b, hd, gates, c, h, cn, act);
}
void ls_lstm_bwd(int b, int hd, const float *act, const float *c, const float *dh, const float *dcn, float *dg, float *dc) {
	seq.lstm_bwd(b, hd, act, c, dh, dcn, dg, dc);
}
void ls_scores_fwd(int s, int b, int a, const float *keys, const float *q, const float *v, float *out, float *th) {
	seq.scores_fwd(s, b, a, keys, q, v, out, th);
}
void ls_scores_bwd(int s, int b, int a, const float *th, const float *v, const float *g, float *dk, float *dq, float *dv) {
	seq.scores_bwd(s, b, a, th, v, g, dk, dq, dv);
}
void ls_attend_fwd(int s, int b, int d, const float *w, const float *mem, float *out) {
	seq.attend_fwd(s, b, d, w, mem, out);
}
void ls_attend_bwd(int s, int b, int d, const float *w, const float *mem, const float *g, float *dw, float *dm) {
	seq.attend_bwd(s, b, d, w, mem, g, dw, dm);
}
void ls_lse_rows(int rows, int cols, const float *x, const int *targets, double *lse) {
	seq.lse_rows(rows, cols, x, targets, lse);
}
void ls_xent_bwd(int rows, int cols, const float *x, const int *targets, const double *lse, const double *scale, float *gx) {
	seq.xent_bwd(rows, cols, x, targets, lse, scale, gx);
}
