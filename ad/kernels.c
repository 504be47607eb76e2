//go:build cgo && !purego

// Direct convolution kernels for ad's Conv2D (NCHW, PyTorch weight layout
// [OC, C, K, K]): forward with fused bias and ReLU, the input gradient and
// the weight gradient. They replace im2col + GEMM, which on lenspec's few-
// channel layers spent most of its time copying patches (docs/BENCHMARKS.md).
//
// All three are vectorised over output columns, so NCHW rows are read and
// written whole. Inputs are first copied into zero-padded planes (columns
// and rows), so no lane and no kernel row is ever checked against a
// border; with stride 2, the V inputs of V consecutive output columns are
// the even lanes of two vector loads (one permute). The forward pass works
// on tiles of FWD_OT output channels × FWD_NX vectors of columns, so that
// each input vector loaded feeds FWD_OT accumulators and each weight
// broadcast FWD_NX, all of them in registers. The fast path takes strides
// 1 and 2 and kernels up to 3 wide (ls_conv_fast); other shapes run the Go
// loops.
//
// The code is written once with GCC vector extensions and compiled three
// times — AVX-512 (16 lanes), AVX2 + FMA (8 lanes) and the baseline — and
// the best the CPU supports is chosen at run time. ad's tests run every
// variant the machine has against loop references.
//
// Vectors are loaded and stored by dereferencing a may_alias vector type
// of 4-byte alignment, never by memcpy: GCC expands a 32-byte memcpy in
// the AVX2 variant (generic tuning) as two 16-byte moves through the
// stack, and every load then stalls on store forwarding — measured: the
// AVX2 kernels ran 4–10× slower than the AVX-512 ones on the same core.
// Arrays of accumulators have constant sizes: GCC keeps an array of
// variable size in memory even when its every index is a constant.

#include <stddef.h>
#include <string.h>
#include "kernels.h"

#define KMAX 3

// Geometry shared by the kernels: L is OW rounded up to whole vectors, Wp
// the padded row length (room for the widest load past the last column),
// Hp the padded rows of a channel.
// With stride 2 a padded row is stored as its two phases, the even columns
// in [0, Wh) and the odd ones in [Wh, 2·Wh): the inputs of V consecutive
// output columns for one kernel column are then V consecutive floats, so
// every load and store is one contiguous vector, with no permute or scatter.
typedef struct {
	int L, Wp, Wh, Hp, gH, gL;
} ls_pad;

// GPAD is the zero rows and columns before the output gradient's in its
// padded copy (gH rows of gL): the input gradient reads g up to KMAX − 1
// rows and columns before the output it is at.
#define GPAD (KMAX - 1)

static ls_pad pad_of(const ls_conv *s, int V) {
	ls_pad q;
	q.L = (s->ow + V - 1) / V * V;
	int w = s->w + 2 * s->p;
	if (s->s == 1) {
		q.Wp = w > q.L + KMAX ? w : q.L + KMAX;
		q.Wh = 0;
	} else {
		/* Phase index of kernel column kx for output ox is ox + kx/2 ≤ L. */
		q.Wh = (w + 1) / 2 > q.L + 1 ? (w + 1) / 2 : q.L + 1;
		q.Wp = 2 * q.Wh;
	}
	/* Rows too: P zero rows above, zero rows below for the last output
	   row's KMAX kernel rows, so that no kernel checks a row against the
	   border. Padded row r is input row r − P. */
	q.Hp = s->h + s->p;
	if ((s->oh - 1) * s->s + KMAX > q.Hp) q.Hp = (s->oh - 1) * s->s + KMAX;
	/* g's rows up to the last input row's, columns up to a vector past the
	   last input column's (bwd_data_all). */
	int gh = (s->p + s->h - 1) / s->s + 1, gw = (s->p + s->w - 1) / s->s + V;
	q.gH = GPAD + (s->oh > gh ? s->oh : gh);
	q.gL = GPAD + (q.L > gw ? q.L : gw);
	return q;
}

// pack_fwd packs w [OC][C][K][K] by tiles of OT output channels,
// wt[tile][c][ky][kx][OT], zero beyond OC and K.
static void pack_fwd(const ls_conv *s, const float *w, float *wt, int OT) {
	const int OC = s->oc, C = s->c, K = s->k, T = (OC + OT - 1) / OT;
	memset(wt, 0, sizeof(float) * (size_t)T * C * KMAX * KMAX * OT);
	for (int o = 0; o < OC; o++)
		for (int c = 0; c < C; c++)
			for (int ky = 0; ky < K; ky++)
				for (int kx = 0; kx < K; kx++)
					wt[((((size_t)(o / OT) * C + c) * KMAX + ky) * KMAX + kx) * OT + o % OT] =
					    w[(((size_t)o * C + c) * K + ky) * K + kx];
}

// ALWAYS: helpers the compiler must inline, so that the stride S and the
// tile width OT they are called with become constants in the loops.
#define ALWAYS static inline __attribute__((always_inline))
// BWD_TAIL is bwd_data_all's case of k vectors left (k < NX): a tile of k.
// k < MAXNX, the tile's array size, is implied by NX > k; said as well so
// that GCC sees no tile wider than its arrays before it folds NX.
#define BWD_TAIL(SUF, MAXNX, k)                                                                                \
	case k:                                                                                                    \
		if (k < MAXNX && NX > k)                                                                               \
			bwd_data_tile_##SUF(s, q, gp, OCp, wt, dxp, b, t, nc, i, j0, jhi, S, pr, pc, CT, k);               \
		break;

// UNROLL unrolls a loop of constant trip count fully: the small arrays of
// accumulators it indexes then become registers.
#define UNROLL _Pragma("GCC unroll 16")

#define DEFINE_KERNELS(SUF, TARGET, V, FWD_OT, FWD_NX, BWD_OT, BWD_CT, BWD_NX, BWD_NX1)                        \
	typedef float vf_##SUF __attribute__((vector_size(4 * (V)), aligned(4), may_alias));                                \
	typedef int vi_##SUF __attribute__((vector_size(4 * (V)), aligned(4)));                                    \
                                                                                                               \
	/* tap: where the V inputs of padded columns (ox0+l)*S + kx, l < V, of */                                  \
	/* a padded row start (contiguous in either layout, see ls_pad).        */                                 \
	TARGET ALWAYS int tap_##SUF(const ls_pad *q, const int S, int ox0, int kx) {                               \
		return S == 1 ? ox0 + kx : (kx & 1) * q->Wh + ox0 + kx / 2;                                            \
	}                                                                                                          \
	/* store writes the first n lanes of a, after ReLU if relu: one vector */                                  \
	/* store for n = V, else pieces of 8, 4, 2 and 1 lanes, each a store of */                                 \
	/* constant size (a lane loop would become a call to memcpy).         */                                   \
	TARGET ALWAYS void store_##SUF(float *dst, vf_##SUF a, int n, int relu) {                                  \
		if (relu) {                                                                                            \
			vf_##SUF z = {0};                                                                                  \
			a = (vf_##SUF)((vi_##SUF)(a > z) & (vi_##SUF)a);                                                   \
		}                                                                                                      \
		if (n == V) {                                                                                          \
			*(vf_##SUF *)dst = a;                                                                              \
			return;                                                                                            \
		}                                                                                                      \
		float t[V];                                                                                            \
		memcpy(t, &a, sizeof a);                                                                               \
		int i = 0;                                                                                             \
		if (n & 8) memcpy(dst + i, t + i, 8 * sizeof(float)), i += 8;                                          \
		if (n & 4) memcpy(dst + i, t + i, 4 * sizeof(float)), i += 4;                                          \
		if (n & 2) memcpy(dst + i, t + i, 2 * sizeof(float)), i += 2;                                          \
		if (n & 1) dst[i] = t[i];                                                                              \
	}                                                                                                          \
	TARGET ALWAYS vf_##SUF load_##SUF(const float *p) {                                                        \
		return *(const vf_##SUF *)p;                                                                           \
	}                                                                                                          \
	/* tail: row[i..n) in the first lanes, zeros after, for n − V ≤ i < n:  */                                 \
	/* the row's last vector, its lanes moved down (no read past the row). */                                  \
	TARGET ALWAYS vf_##SUF tail_##SUF(const float *row, int n, int i) {                                        \
		vi_##SUF lane;                                                                                         \
		for (int l = 0; l < V; l++) lane[l] = l;                                                               \
		vf_##SUF v = __builtin_shuffle(load_##SUF(row + n - V), (lane + (V - (n - i))) & (V - 1));             \
		return (vf_##SUF)((lane < n - i) & (vi_##SUF)v);                                                       \
	}                                                                                                          \
                                                                                                               \
	/* pad_rows copies x [B·C][H][W] into xp [B·C][Hp][Wp], each row      */                                   \
	/* shifted right by P, zero elsewhere, and split by phase for stride 2 */                                  \
	/* (phase ph's column j is padded column 2j + ph, input 2j + ph − P).  */                                  \
	TARGET static void pad_rows_##SUF(const ls_pad *q, const float *restrict x, float *restrict xp,            \
	                                  int planes, int H, int W, int P) {                                       \
		vi_##SUF even;                                                                                         \
		for (int l = 0; l < V; l++) even[l] = 2 * l;                                                           \
		for (size_t r = 0; r < (size_t)planes * q->Hp; r++) {                                                  \
			float *dst = xp + r * q->Wp;                                                                       \
			int iy = (int)(r % q->Hp) - P;                                                                     \
			if (iy < 0 || iy >= H) {                                                                           \
				memset(dst, 0, sizeof(float) * q->Wp);                                                         \
				continue;                                                                                      \
			}                                                                                                  \
			const float *src = x + (r / q->Hp * H + iy) * W;                                                   \
			if (!q->Wh) {                                                                                      \
				memset(dst, 0, sizeof(float) * P);                                                             \
				memcpy(dst + P, src, sizeof(float) * W);                                                       \
				memset(dst + P + W, 0, sizeof(float) * (q->Wp - P - W));                                       \
				continue;                                                                                      \
			}                                                                                                  \
			for (int ph = 0; ph < 2; ph++) {                                                                   \
				float *d = dst + ph * q->Wh;                                                                   \
				int j0 = (P - ph + 1) / 2, j1 = (W + P - ph + 1) / 2;                                          \
				if (j0 < 0) j0 = 0;                                                                            \
				memset(d, 0, sizeof(float) * j0);                                                              \
				const float *s = src + 2 * j0 + ph - P;                                                        \
				/* Whole vectors while both loads stay inside the row. */                                      \
				int n = j1 - j0, avail = W - (2 * j0 + ph - P), k = 0;                                         \
				for (; k + V <= n && 2 * k + 2 * V <= avail; k += V) {                                         \
					vf_##SUF e = __builtin_shuffle(load_##SUF(s + 2 * k), load_##SUF(s + 2 * k + V), even);    \
					*(vf_##SUF *)(d + j0 + k) = e;                                                             \
				}                                                                                              \
				for (; k < n; k++) d[j0 + k] = s[2 * k];                                                       \
				memset(d + j1, 0, sizeof(float) * (q->Wh - j1));                                               \
			}                                                                                                  \
		}                                                                                                      \
	}                                                                                                          \
                                                                                                               \
	/* unpad_rows writes (set) or adds the padded rows dxp into dx, pad_rows' */                               \
	/* inverse. With stride 2, input column i is phase column (i + P − ph)/2 */                                \
	/* of phase ph ≡ i + P (mod 2): a vector of each phase interleaved gives */                                \
	/* two vectors of dx.                                                    */                                \
	TARGET static void unpad_rows_##SUF(const ls_pad *q, const float *restrict dxp, float *restrict dx,        \
	                                    int planes, int H, int W, int P, int set) {                            \
		vi_##SUF lo, hi;                                                                                       \
		for (int l = 0; l < V; l++) {                                                                          \
			lo[l] = l % 2 ? V + l / 2 : l / 2;                                                                 \
			hi[l] = l % 2 ? V + V / 2 + l / 2 : V / 2 + l / 2;                                                 \
		}                                                                                                      \
		const int pe = P & 1, po = pe ^ 1, je = (P - pe) / 2, jo = (1 + P - po) / 2;                           \
		for (size_t r = 0; r < (size_t)planes * H; r++) {                                                      \
			float *d = dx + r * W;                                                                             \
			const float *p = dxp + ((r / H) * q->Hp + r % H + P) * q->Wp;                                      \
			int i = 0;                                                                                         \
			if (!q->Wh) {                                                                                      \
				for (; i + V <= W; i += V) {                                                                   \
					vf_##SUF v = load_##SUF(p + P + i);                                                        \
					if (!set) v += load_##SUF(d + i);                                                          \
					*(vf_##SUF *)(d + i) = v;                                                                  \
				}                                                                                              \
				for (; i < W; i++) d[i] = set ? p[i + P] : d[i] + p[i + P];                                    \
				continue;                                                                                      \
			}                                                                                                  \
			const float *e = p + pe * q->Wh + je, *o = p + po * q->Wh + jo;                                    \
			for (; i + 2 * V <= W; i += 2 * V) {                                                               \
				vf_##SUF ev = load_##SUF(e + i / 2), ov = load_##SUF(o + i / 2);                               \
				vf_##SUF a = __builtin_shuffle(ev, ov, lo), b = __builtin_shuffle(ev, ov, hi);                 \
				if (!set) a += load_##SUF(d + i), b += load_##SUF(d + i + V);                                  \
				*(vf_##SUF *)(d + i) = a;                                                                      \
				*(vf_##SUF *)(d + i + V) = b;                                                                  \
			}                                                                                                  \
			for (; i < W; i++) {                                                                               \
				float v = i % 2 ? o[i / 2] : e[i / 2];                                                         \
				d[i] = set ? v : d[i] + v;                                                                     \
			}                                                                                                  \
		}                                                                                                      \
	}                                                                                                          \
                                                                                                               \
                                                                                                               \
	/* fwd_tile: the forward pass for OT output channels (o0 on, no of them */                                 \
	/* valid) and NX chunks of V output columns (ox0 on) of one output row. */                                 \
	/* xrow is the padded row oy·S of the image's channel 0, plane the size */                                 \
	/* of a padded channel, wt the tile's packed weights [c][ky][kx][OT].   */                                 \
	/* Each input vector loaded feeds OT accumulators and each weight       */                                 \
	/* broadcast NX: NX·OT accumulators, NX + OT loads per NX·OT FMAs. The  */                                 \
	/* loops over the tile have constant trip counts and are unrolled, so   */                                 \
	/* the accumulators live in registers.                                  */                                 \
	TARGET ALWAYS void fwd_tile_##SUF(const ls_pad *q, const float *xrow, size_t plane, int C, const float *wt, \
	                                  const float *bias, float *dst, size_t ostride, int no, int OW, int relu,  \
	                                  int ox0, const int S, const int OT, const int NX) {                      \
		vf_##SUF a[FWD_NX][FWD_OT]; /* constant sizes: arrays of variable size stay in memory */              \
		UNROLL for (int j = 0; j < OT; j++) {                                                                  \
			vf_##SUF z = {0};                                                                                  \
			float bj = bias && j < no ? bias[j] : 0;                                                           \
			UNROLL for (int n = 0; n < NX; n++) a[n][j] = z + bj;                                              \
		}                                                                                                      \
		for (int c = 0; c < C; c++, xrow += plane, wt += KMAX * KMAX * OT)                                     \
			UNROLL for (int ky = 0; ky < KMAX; ky++) {                                                         \
				const float *row = xrow + (size_t)ky * q->Wp;                                                  \
				UNROLL for (int kx = 0; kx < KMAX; kx++) {                                                     \
					vf_##SUF xv[FWD_NX];                                                                       \
					UNROLL for (int n = 0; n < NX; n++) xv[n] = load_##SUF(row + tap_##SUF(q, S, ox0 + n * V, kx)); \
					const float *w = wt + (ky * KMAX + kx) * OT;                                               \
					UNROLL for (int j = 0; j < OT; j++) {                                                      \
						float wj = w[j];                                                                       \
						UNROLL for (int n = 0; n < NX; n++) a[n][j] += wj * xv[n];                             \
					}                                                                                          \
				}                                                                                              \
			}                                                                                                  \
		UNROLL for (int j = 0; j < OT; j++)                                                                    \
			if (j < no) UNROLL for (int n = 0; n < NX; n++) {                                                  \
				int left = OW - ox0 - n * V;                                                                   \
				store_##SUF(dst + j * ostride + ox0 + n * V, a[n][j], left < V ? left : V, relu);                  \
			}                                                                                                  \
	}                                                                                                          \
                                                                                                               \
	/* fwd_all: every output row, OT-channel tiles, NX chunks at a time and */                                 \
	/* a narrower tile for the chunks left. K ≤ KMAX is zero padded to KMAX */                                 \
	/* in wt and in the rows' padding, so every trip count is a constant.   */                                 \
	TARGET ALWAYS void fwd_all_##SUF(const ls_conv *s, const ls_pad *q, const float *xp, const float *wt,      \
	                                 const float *bias, float *y, int relu, const int S, const int OT,         \
	                                 const int NX) {                                                           \
		const int C = s->c, OC = s->oc, OH = s->oh, OW = s->ow, chunks = q->L / V;                             \
		const size_t plane = (size_t)q->Hp * q->Wp;                                                            \
		for (int b = 0; b < s->b; b++)                                                                         \
			for (int oy = 0; oy < OH; oy++) {                                                                  \
				const float *xrow = xp + ((size_t)b * C * q->Hp + (size_t)oy * S) * q->Wp;                     \
				for (int o0 = 0; o0 < OC; o0 += OT) {                                                          \
					const float *wtile = wt + (size_t)(o0 / OT) * C * KMAX * KMAX * OT;                        \
					const float *bt = bias ? bias + o0 : NULL;                                                 \
					float *dst = y + (((size_t)b * OC + o0) * OH + oy) * OW;                                   \
					int no = OC - o0 < OT ? OC - o0 : OT, k = 0;                                               \
					for (; k + NX <= chunks; k += NX)                                                          \
						fwd_tile_##SUF(q, xrow, plane, C, wtile, bt, dst, (size_t)OH * OW, no, OW, relu, k * V, S, OT, NX); \
					if (NX > 2 && k + 2 <= chunks) {                                                           \
						fwd_tile_##SUF(q, xrow, plane, C, wtile, bt, dst, (size_t)OH * OW, no, OW, relu, k * V, S, OT, 2); \
						k += 2;                                                                                \
					}                                                                                          \
					if (NX > 1 && k < chunks)                                                                  \
						fwd_tile_##SUF(q, xrow, plane, C, wtile, bt, dst, (size_t)OH * OW, no, OW, relu, k * V, S, OT, 1); \
				}                                                                                              \
			}                                                                                                  \
	}                                                                                                          \
                                                                                                               \
	/* fwd: y = [relu](conv(x, w) + bias). xp receives the padded input (the */                                \
	/* backward pass reuses it), wt the weights packed by FWD_OT-channel    */                                 \
	/* tiles (pack_fwd).                                                     */                                \
	TARGET static void conv_fwd_##SUF(const ls_conv *s, const float *restrict x, const float *restrict w,      \
	                                  const float *restrict bias, float *restrict y, int relu,                 \
	                                  float *restrict xp, float *restrict wt) {                                \
		const ls_pad q = pad_of(s, V);                                                                         \
		pad_rows_##SUF(&q, x, xp, s->b * s->c, s->h, s->w, s->p);                                              \
		pack_fwd(s, w, wt, FWD_OT);                                                                            \
		if (s->s == 1) fwd_all_##SUF(s, &q, xp, wt, bias, y, relu, 1, FWD_OT, FWD_NX);                         \
		else fwd_all_##SUF(s, &q, xp, wt, bias, y, relu, 2, FWD_OT, FWD_NX);                                   \
	}                                                                                                          \
                                                                                                               \
	/* pad_g copies g [B][OC][OH][OW] into gp [B][OCp][gH][gL], at row and */                                 \
	/* column GPAD on, zero elsewhere; with y set (a fused ReLU's output)  */                                 \
	/* only where y > 0, the gradient past the activation. With db set it */                                  \
	/* adds each channel's sum to db, as it goes: lanes sum one image's    */                                 \
	/* channel in float, images add in double.                              */                                \
	TARGET static void pad_g_##SUF(const ls_conv *s, const ls_pad *q, const float *restrict g,                 \
	                               const float *restrict y, float *restrict gp, int OCp, float *restrict db) { \
		const int B = s->b, OC = s->oc, OH = s->oh, OW = s->ow, gL = q->gL;                                    \
		const size_t gplane = (size_t)q->gH * gL;                                                              \
		const vf_##SUF z = {0};                                                                                \
		for (int o = 0; o < OC; o++) {                                                                         \
			double sum = 0;                                                                                    \
			for (int b = 0; b < B; b++) {                                                                      \
				float *dst = gp + ((size_t)b * OCp + o) * gplane;                                              \
				memset(dst, 0, sizeof(float) * GPAD * gL);                                                     \
				vf_##SUF acc0 = z, acc1 = z;                                                                   \
				for (int oy = 0; oy < OH; oy++) {                                                              \
					size_t off = (((size_t)b * OC + o) * OH + oy) * OW;                                        \
					const float *gr = g + off, *yr = y ? y + off : NULL;                                       \
					float *d = dst + (size_t)(GPAD + oy) * gL;                                                 \
					memset(d, 0, sizeof(float) * GPAD);                                                        \
					d += GPAD;                                                                                 \
					int i = 0;                                                                                 \
					for (; i + V <= OW; i += V) {                                                              \
						vf_##SUF v = load_##SUF(gr + i);                                                       \
						if (yr) v = (vf_##SUF)((vi_##SUF)(load_##SUF(yr + i) > z) & (vi_##SUF)v);              \
						*(vf_##SUF *)(d + i) = v;                                                              \
						acc0 += v;                                                                             \
						vf_##SUF t = acc0;                                                                     \
						acc0 = acc1, acc1 = t;                                                                 \
					}                                                                                          \
					if (i < OW && OW >= V) { /* the tail as one vector, zero past OW */                        \
						vf_##SUF v = tail_##SUF(gr, OW, i);                                                    \
						if (yr) v = (vf_##SUF)((vi_##SUF)(tail_##SUF(yr, OW, i) > z) & (vi_##SUF)v);           \
						*(vf_##SUF *)(d + i) = v;                                                              \
						acc0 += v;                                                                             \
						i += V;                                                                                \
					}                                                                                          \
					for (; i < OW; i++) {                                                                      \
						float v = yr && !(yr[i] > 0) ? 0 : gr[i];                                              \
						d[i] = v;                                                                              \
						acc0[0] += v;                                                                          \
					}                                                                                          \
					memset(d + i, 0, sizeof(float) * (gL - GPAD - i));                                         \
				}                                                                                              \
				memset(dst + (size_t)(GPAD + OH) * gL, 0, sizeof(float) * (q->gH - GPAD - OH) * gL);           \
				vf_##SUF a = acc0 + acc1;                                                                      \
				float t = 0;                                                                                   \
				for (int l = 0; l < V; l++) t += a[l];                                                         \
				sum += t;                                                                                      \
			}                                                                                                  \
			if (db) db[o] += (float)sum;                                                                       \
		}                                                                                                      \
		for (int b = 0; b < B; b++)                                                                            \
			memset(gp + ((size_t)b * OCp + OC) * gplane, 0, sizeof(float) * (OCp - OC) * gplane);             \
	}                                                                                                          \
                                                                                                               \
	/* bwd data, one tile: dx for CT input channels (t·CT on, nc of them)   */                                \
	/* and NX vectors of the phase columns j0 on of padded row r = S·i + pr */                                \
	/* (phase column j is padded column S·j + pc), up to phase column jhi.  */                                \
	/* With stride S, padded (r, c) takes g at (oy, ox) = ((r − ky)/S,      */                                \
	/* (c − kx)/S) for the ky ≡ pr and kx ≡ pc (mod S): per phase a stride-  */                               \
	/* 1 correlation of g, vectorised over phase columns like the forward   */                                \
	/* pass, each value written once (no accumulation into dx, no zeroing). */                                \
	TARGET ALWAYS void bwd_data_tile_##SUF(const ls_conv *s, const ls_pad *q, const float *gp, int OCp,        \
	                                       const float *wt, float *dxp, int b, int t, int nc, int i, int j0,   \
	                                       int jhi, const int S, const int pr, const int pc, const int CT,     \
	                                       const int NX) {                                                     \
		const int C = s->c, OC = s->oc, gL = q->gL;                                                            \
		const size_t gplane = (size_t)q->gH * gL;                                                              \
		vf_##SUF a[BWD_NX1][BWD_CT];                                                                           \
		UNROLL for (int n = 0; n < NX; n++) UNROLL for (int j = 0; j < CT; j++) {                              \
			vf_##SUF z = {0};                                                                                  \
			a[n][j] = z;                                                                                       \
		}                                                                                                      \
		const float *g = gp + (size_t)b * OCp * gplane + (size_t)(GPAD + i) * gL + GPAD + j0;                  \
		const float *wk = wt + (size_t)t * OC * KMAX * KMAX * CT;                                              \
		for (int o = 0; o < OC; o++, g += gplane, wk += KMAX * KMAX * CT)                                      \
			UNROLL for (int ky = pr; ky < KMAX; ky += S)                                                       \
				UNROLL for (int kx = pc; kx < KMAX; kx += S) {                                                 \
					const float *gr = g - (size_t)((ky - pr) / S) * gL - (kx - pc) / S;                        \
					vf_##SUF gv[BWD_NX1];                                                                      \
					UNROLL for (int n = 0; n < NX; n++) gv[n] = load_##SUF(gr + n * V);                        \
					UNROLL for (int j = 0; j < CT; j++) {                                                      \
						float wj = wk[(ky * KMAX + kx) * CT + j];                                              \
						UNROLL for (int n = 0; n < NX; n++) a[n][j] += wj * gv[n];                             \
					}                                                                                          \
				}                                                                                              \
		float *row = dxp + (((size_t)b * C + (size_t)t * CT) * q->Hp + S * i + pr) * q->Wp + pc * q->Wh + j0;  \
		UNROLL for (int j = 0; j < CT; j++) {                                                                  \
			if (j >= nc) break;                                                                                \
			UNROLL for (int n = 0; n < NX; n++) {                                                              \
				int left = jhi + 1 - j0 - n * V;                                                               \
				store_##SUF(row + (size_t)j * q->Hp * q->Wp + n * V, a[n][j], left < V ? left : V, 0);         \
			}                                                                                                  \
		}                                                                                                      \
	}                                                                                                          \
                                                                                                               \
	/* bwd data: dxp = conv_transpose(g, w) on the padded rows and columns  */                                \
	/* of the input (those unpad_rows reads), phase by phase. wt: weights   */                                \
	/* packed [c tile][o][ky][kx][CT], zero beyond C and K.                 */                                \
	TARGET ALWAYS void bwd_data_all_##SUF(const ls_conv *s, const ls_pad *q, const float *gp, int OCp,         \
	                                      const float *wt, float *dxp, const int S, const int CT,              \
	                                      const int NX) {                                                      \
		const int C = s->c, H = s->h, W = s->w, P = s->p, T = (C + CT - 1) / CT;                               \
		for (int b = 0; b < s->b; b++)                                                                         \
			UNROLL for (int pr = 0; pr < S; pr++)                                                              \
				for (int i = (P - pr + S - 1) / S; S * i + pr < P + H; i++)                                    \
					UNROLL for (int pc = 0; pc < S; pc++) {                                                    \
						int jlo = (P - pc + S - 1) / S, jhi = (P + W - 1 - pc) / S;                            \
						for (int t = 0; t < T; t++) {                                                          \
							int nc = C - t * CT < CT ? C - t * CT : CT, j0 = jlo;                              \
							for (; j0 + (NX - 1) * V <= jhi; j0 += NX * V)                                     \
								bwd_data_tile_##SUF(s, q, gp, OCp, wt, dxp, b, t, nc, i, j0, jhi, S, pr, pc, CT, NX); \
							/* The vectors left, fewer than NX, in one tile: one at a time  */              \
							/* would leave a chain of dependent FMAs per accumulator.       */              \
							switch (j0 > jhi ? 0 : (jhi - j0) / V + 1) {                                       \
							BWD_TAIL(SUF, BWD_NX1, 7) BWD_TAIL(SUF, BWD_NX1, 6) BWD_TAIL(SUF, BWD_NX1, 5)      \
							BWD_TAIL(SUF, BWD_NX1, 4) BWD_TAIL(SUF, BWD_NX1, 3) BWD_TAIL(SUF, BWD_NX1, 2)      \
							BWD_TAIL(SUF, BWD_NX1, 1)                                                          \
							}                                                                                  \
						}                                                                                      \
					}                                                                                          \
	}                                                                                                          \
                                                                                                               \
	/* bwd weight: one image's share of dw for one tile of OT channels and */                                  \
	/* one (c, ky), added to the tile's lane-wise sums in acc, which the    */                                 \
	/* caller reduces once after the last image. Images outermost keep one  */                                 \
	/* image's g and x rows in cache for all tiles.                         */                                 \
	TARGET ALWAYS void bwd_weight_tile_##SUF(const ls_conv *s, const ls_pad *q, const float *xp,               \
	                                         const float *gp, int OCp, vf_##SUF *acc, int b, int c,            \
	                                         int ky, int o0, const int S, const int OT) {                      \
		const int C = s->c, H = s->h, P = s->p, OH = s->oh;                                                    \
		vf_##SUF a[BWD_OT][KMAX];                                                                              \
		UNROLL for (int j = 0; j < OT; j++)                                                                    \
			UNROLL for (int kx = 0; kx < KMAX; kx++) a[j][kx] = acc[j * KMAX + kx];                            \
		for (int oy = 0; oy < OH; oy++) {                                                                      \
			int iy = oy * S - P + ky;                                                                          \
			if (iy < 0 || iy >= H) continue;                                                                   \
			const float *row = xp + (((size_t)b * C + c) * q->Hp + iy + P) * q->Wp;                              \
			const float *gr = gp + (((size_t)b * OCp + o0) * q->gH + GPAD + oy) * q->gL + GPAD;                \
			for (int ox0 = 0; ox0 < q->L; ox0 += V) {                                                          \
				vf_##SUF xv[KMAX];                                                                             \
				/* All KMAX taps, whatever K: the rows' padding covers them and */                             \
				/* the extra sums are never read, while constant trip counts    */                             \
				/* keep a[][] in registers.                                     */                             \
				UNROLL for (int kx = 0; kx < KMAX; kx++) xv[kx] = load_##SUF(row + tap_##SUF(q, S, ox0, kx));  \
				UNROLL for (int j = 0; j < OT; j++) {                                                          \
					vf_##SUF gv = load_##SUF(gr + (size_t)j * q->gH * q->gL + ox0);                            \
					UNROLL for (int kx = 0; kx < KMAX; kx++) a[j][kx] += gv * xv[kx];                          \
				}                                                                                              \
			}                                                                                                  \
		}                                                                                                      \
		UNROLL for (int j = 0; j < OT; j++)                                                                    \
			UNROLL for (int kx = 0; kx < KMAX; kx++) acc[j * KMAX + kx] = a[j][kx];                            \
	}                                                                                                          \
                                                                                                               \
	/* bwd weight over the batch: acc holds C·K·OCp·KMAX vectors. */                                           \
	TARGET ALWAYS void bwd_weight_all_##SUF(const ls_conv *s, const ls_pad *q, const float *xp,                \
	                                        const float *gp,                                                   \
	                                        int OCp, float *dw, vf_##SUF *acc, const int S, const int OT) {    \
		const int C = s->c, OC = s->oc, K = s->k;                                                              \
		memset(acc, 0, sizeof *acc * (size_t)C * K * OCp * KMAX);                                              \
		for (int b = 0; b < s->b; b++)                                                                         \
			for (int c = 0; c < C; c++)                                                                        \
				for (int ky = 0; ky < K; ky++)                                                                 \
					for (int o0 = 0; o0 < OC; o0 += OT)                                                        \
						bwd_weight_tile_##SUF(s, q, xp, gp, OCp, acc + (((size_t)c * K + ky) * OCp + o0) * KMAX, \
						                      b, c, ky, o0, S, OT);                                            \
		for (int c = 0; c < C; c++)                                                                            \
			for (int ky = 0; ky < K; ky++)                                                                     \
				for (int o = 0; o < OC; o++)                                                                   \
					for (int kx = 0; kx < K; kx++) {                                                           \
						vf_##SUF v = acc[(((size_t)c * K + ky) * OCp + o) * KMAX + kx];                        \
						float t = 0;                                                                           \
						for (int l = 0; l < V; l++) t += v[l];                                                 \
						dw[(((size_t)o * C + c) * K + ky) * K + kx] += t;                                      \
					}                                                                                          \
	}                                                                                                          \
	/* bwd: the gradients of a convolution, each only if its pointer is set: */                                \
	/* dx += conv_transpose(g, w) (dx = with dx_set), dw += Σ g ⊗ patches,   */                               \
	/* db += Σ g. g is masked by y (a fused ReLU's output) when y is set,   */                                 \
	/* and padded once for all.                                              */                                \
	/* xp: the padded input the forward pass left (read for dw).            */                                 \
	/* sc: padded g, then padded dx rows (for dx), then dw's sums or dx's   */                                 \
	/* packed weights.                                                      */                                 \
	TARGET static void conv_bwd_##SUF(const ls_conv *s, const float *restrict g, const float *restrict y,      \
	                                  const float *restrict xp, const float *restrict w, float *restrict dx,   \
	                                  int dx_set, float *restrict dw, float *restrict db, float *restrict sc) { \
		const int C = s->c, H = s->h, W = s->w, OC = s->oc, K = s->k, P = s->p;                                \
		const ls_pad q = pad_of(s, V);                                                                         \
		const int OT = OC <= 4 || BWD_OT == 4 ? 4 : 8;                                                         \
		const int OCp = (OC + 15) / 16 * 16;                                                                   \
		float *gp = sc, *dxp = gp + (size_t)s->b * OCp * q.gH * q.gL;                                          \
		pad_g_##SUF(s, &q, g, y, gp, OCp, db);                                                                 \
		if (dw) {                                                                                              \
			vf_##SUF *acc = (vf_##SUF *)(dxp + ls_conv_pad_size(s));                                           \
			if (s->s == 1) {                                                                                   \
				if (OT == 4) bwd_weight_all_##SUF(s, &q, xp, gp, OCp, dw, acc, 1, 4);                          \
				else bwd_weight_all_##SUF(s, &q, xp, gp, OCp, dw, acc, 1, 8);                                  \
			} else {                                                                                           \
				if (OT == 4) bwd_weight_all_##SUF(s, &q, xp, gp, OCp, dw, acc, 2, 4);                          \
				else bwd_weight_all_##SUF(s, &q, xp, gp, OCp, dw, acc, 2, 8);                                  \
			}                                                                                                  \
		}                                                                                                      \
		if (dx) {                                                                                              \
			/* One channel per tile, and more columns, for a one-channel layer. */                            \
			const int CT = C == 1 ? 1 : BWD_CT, T = (C + CT - 1) / CT;                                         \
			float *wt = dxp + ls_conv_pad_size(s);                                                             \
			memset(wt, 0, sizeof(float) * (size_t)T * OC * KMAX * KMAX * CT);                                  \
			for (int o = 0; o < OC; o++)                                                                       \
				for (int c = 0; c < C; c++)                                                                    \
					for (int ky = 0; ky < K; ky++)                                                             \
						for (int kx = 0; kx < K; kx++)                                                         \
							wt[((((size_t)(c / CT) * OC + o) * KMAX + ky) * KMAX + kx) * CT + c % CT] =        \
							    w[(((size_t)o * C + c) * K + ky) * K + kx];                                    \
			if (s->s == 1) {                                                                                   \
				if (CT == 1) bwd_data_all_##SUF(s, &q, gp, OCp, wt, dxp, 1, 1, BWD_NX1);                       \
				else bwd_data_all_##SUF(s, &q, gp, OCp, wt, dxp, 1, BWD_CT, BWD_NX);                           \
			} else {                                                                                           \
				if (CT == 1) bwd_data_all_##SUF(s, &q, gp, OCp, wt, dxp, 2, 1, BWD_NX1);                       \
				else bwd_data_all_##SUF(s, &q, gp, OCp, wt, dxp, 2, BWD_CT, BWD_NX);                           \
			}                                                                                                  \
			unpad_rows_##SUF(&q, dxp, dx, s->b * C, H, W, P, dx_set);                                          \
		}                                                                                                      \
	}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HAVE_X86_VARIANTS 1
DEFINE_KERNELS(v4, __attribute__((target("arch=x86-64-v4"))), 16, 8, 2, 8, 8, 2, 4)
DEFINE_KERNELS(v3, __attribute__((target("arch=x86-64-v3"))), 8, 4, 2, 4, 4, 2, 8)
#endif
DEFINE_KERNELS(base, , 8, 4, 2, 4, 4, 2, 4)

typedef void (*fwd_fn)(const ls_conv *, const float *, const float *, const float *, float *, int, float *, float *);
typedef void (*bwd_fn)(const ls_conv *, const float *, const float *, const float *, const float *, float *, int,
                       float *, float *, float *);

static fwd_fn fwd = conv_fwd_base;
static bwd_fn bwd = conv_bwd_base;
static int level = 0, lanes = 8;

// ls_kernels_init picks the variants once, before any call (from Go's
// package initialisation); override caps the level ("base", "v3", "v4")
// for tests, or is NULL.
int ls_kernels_init(const char *override) {
	fwd = conv_fwd_base, bwd = conv_bwd_base, level = 0, lanes = 8;
#ifdef HAVE_X86_VARIANTS
	__builtin_cpu_init();
	int v4 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
	int v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	if (override && strcmp(override, "v4") != 0) v4 = 0;
	if (override && strcmp(override, "v4") != 0 && strcmp(override, "v3") != 0) v3 = 0;
	if (v4) {
		fwd = conv_fwd_v4, bwd = conv_bwd_v4, level = 4, lanes = 16;
	} else if (v3) {
		fwd = conv_fwd_v3, bwd = conv_bwd_v3, level = 3;
	}
#else
	(void)override;
#endif
	ls_seq_init(level);
	return level;
}

// ls_cpu_level is the highest level the CPU supports, whatever the
// override: 4, 3 or 0.
int ls_cpu_level(void) {
#ifdef HAVE_X86_VARIANTS
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq"))
		return 4;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 3;
#endif
	return 0;
}

int ls_conv_fast(const ls_conv *s) { return s->k <= KMAX && (s->s == 1 || s->s == 2); }

// The padded input's size for the variant in use; scratch sizes cover the
// largest tile (16 channels) of any variant.
size_t ls_conv_pad_size(const ls_conv *s) {
	ls_pad q = pad_of(s, lanes);
	return (size_t)s->b * s->c * q.Hp * q.Wp;
}

size_t ls_conv_fwd_scratch(const ls_conv *s) { return 2 * (size_t)(s->oc + 15) / 16 * 16 * s->c * KMAX * KMAX; }

size_t ls_conv_bwd_scratch(const ls_conv *s) {
	ls_pad q = pad_of(s, lanes);
	size_t ocp = (size_t)(s->oc + 15) / 16 * 16;
	size_t wt = (size_t)(s->c + 7) / 8 * 8 * s->oc * KMAX * KMAX; /* bwd data's packed weights */
	size_t acc = (size_t)s->c * s->k * ocp * KMAX * lanes;         /* bwd weight's sums */
	return (size_t)s->b * ocp * q.gH * q.gL + ls_conv_pad_size(s) + (wt > acc ? wt : acc);
}

void ls_conv_fwd(const ls_conv *s, const float *x, const float *w, const float *bias, float *y, int relu, float *xp,
                 float *scratch) {
	fwd(s, x, w, bias, y, relu, xp, scratch);
}

void ls_conv_bwd(const ls_conv *s, const float *g, const float *y, const float *xp, const float *w, float *dx, int dx_set,
                 float *dw, float *db, float *scratch) {
	bwd(s, g, y, xp, w, dx, dx_set, dw, db, scratch);
}

// ls_adam applies one Adam update to n float32 parameters w with
// gradients g and float32 moments m, v (the same arithmetic as ad.Adam's
// Go loop): w *= decay (decoupled weight decay, 1 for none),
// m = b1·m + (1−b1)·g, v = b2·v + (1−b2)·g², w −= (lr/c1)·m / (√(v/c2) + eps).
// The square root is an explicit vector instruction: cgo does not accept
// -fno-math-errno, without which the compiler keeps sqrtf's errno path and
// leaves the loop scalar.
#define ADAM_BODY(GI, MI, VI, WI, SQRT)                                                                        \
	{                                                                                                          \
		if (decay != 1) WI *= d;                                                                               \
		MI = B1 * MI + (1 - B1) * GI;                                                                          \
		VI = B2 * VI + (1 - B2) * GI * GI;                                                                     \
		WI -= step * MI / (SQRT(VI * ic2) + e);                                                                \
	}

#define ADAM_SETUP                                                                                             \
	const float d = (float)decay, B1 = (float)b1, B2 = (float)b2, step = (float)(lr / c1),                     \
	            ic2 = (float)(1 / c2), e = (float)eps;

static void adam_base(float *restrict w, const float *restrict g, float *restrict m, float *restrict v, size_t n,
                      double lr, double b1, double b2, double c1, double c2, double eps, double decay, size_t i) {
	ADAM_SETUP
	for (; i < n; i++) ADAM_BODY(g[i], m[i], v[i], w[i], __builtin_sqrtf)
}

#ifdef HAVE_X86_VARIANTS
#include <immintrin.h>
// ADAM_VARIANT defines adam_SUF, the vector loop over whole vectors of V
// lanes; it returns how many elements it did (the rest is adam_base's).
#define ADAM_VARIANT(SUF, TARGET, V, SQRT)                                                                           \
	TARGET static size_t adam_##SUF(float *restrict w, const float *restrict g, float *restrict m, float *restrict v, \
	                                size_t n, double lr, double b1, double b2, double c1, double c2, double eps,     \
	                                double decay) {                                                                  \
		ADAM_SETUP                                                                                                   \
		size_t i = 0;                                                                                                \
		for (; i + V <= n; i += V) {                                                                                 \
			vf_##SUF gi = *(const vf_##SUF *)(g + i), mi = *(vf_##SUF *)(m + i), vi = *(vf_##SUF *)(v + i);          \
			vf_##SUF wi = *(vf_##SUF *)(w + i);                                                                      \
			ADAM_BODY(gi, mi, vi, wi, (vf_##SUF) SQRT)                                                               \
			*(vf_##SUF *)(m + i) = mi, *(vf_##SUF *)(v + i) = vi, *(vf_##SUF *)(w + i) = wi;                         \
		}                                                                                                            \
		return i;                                                                                                    \
	}
ADAM_VARIANT(v4, __attribute__((target("arch=x86-64-v4"))), 16, _mm512_sqrt_ps)
ADAM_VARIANT(v3, __attribute__((target("arch=x86-64-v3"))), 8, _mm256_sqrt_ps)
#endif

void ls_adam(float *restrict w, const float *restrict g, float *restrict m, float *restrict v, size_t n, double lr,
             double b1, double b2, double c1, double c2, double eps, double decay) {
	size_t i = 0;
#ifdef HAVE_X86_VARIANTS
	if (level == 4) i = adam_v4(w, g, m, v, n, lr, b1, b2, c1, c2, eps, decay);
	if (level == 3) i = adam_v3(w, g, m, v, n, lr, b1, b2, c1, c2, eps, decay);
#endif
	adam_base(w, g, m, v, n, lr, b1, b2, c1, c2, eps, decay, i); // the tail
}
