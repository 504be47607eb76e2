// Shapes and entry points of ad's C kernels (kernels.c).
#ifndef LENSPEC_AD_KERNELS_H
#define LENSPEC_AD_KERNELS_H
#include <stddef.h>

// ls_conv is a convolution's shape: batch b, input c×h×w, oc output
// channels, square kernel k, stride s, zero padding p, output oh×ow.
typedef struct {
	int b, c, h, w, oc, k, s, p, oh, ow;
} ls_conv;

int ls_kernels_init(const char *override);
int ls_cpu_level(void);
int ls_conv_fast(const ls_conv *s);
size_t ls_conv_pad_size(const ls_conv *s);
size_t ls_conv_fwd_scratch(const ls_conv *s);
size_t ls_conv_bwd_scratch(const ls_conv *s);
// ls_conv_fwd computes y and leaves the padded input in xp
// (ls_conv_pad_size floats), which ls_conv_bwd reads for the weight
// gradient.
void ls_conv_fwd(const ls_conv *s, const float *x, const float *w, const float *bias, float *y, int relu, float *xp,
                 float *scratch);
// ls_conv_bwd adds the gradients whose pointers are set (dx, dw, db) for
// output gradient g (dx is written, not added to, if dx_set); y, if not
// NULL, is a fused ReLU's output: g passes where y > 0.
void ls_conv_bwd(const ls_conv *s, const float *g, const float *y, const float *xp, const float *w, float *dx, int dx_set,
                 float *dw, float *db, float *scratch);
// Sequence-model kernels (kernels_seq.c); ls_seq_init follows ls_kernels_init's choice.
void ls_seq_init(int level);
void ls_lstm_fwd(int b, int hd, const float *gates, const float *c, float *h, float *cn, float *act);
void ls_lstm_bwd(int b, int hd, const float *act, const float *c, const float *dh, const float *dcn, float *dg, float *dc);
void ls_scores_fwd(int s, int b, int a, const float *keys, const float *q, const float *v, float *out, float *th);
void ls_scores_bwd(int s, int b, int a, const float *th, const float *v, const float *g, float *dk, float *dq, float *dv);
void ls_attend_fwd(int s, int b, int d, const float *w, const float *mem, float *out);
void ls_attend_bwd(int s, int b, int d, const float *w, const float *mem, const float *g, float *dw, float *dm);
void ls_lse_rows(int rows, int cols, const float *x, const int *targets, double *lse);
void ls_xent_bwd(int rows, int cols, const float *x, const int *targets, const double *lse, const double *scale, float *gx);
void ls_adam(float *w, const float *g, float *m, float *v, size_t n, double lr, double b1, double b2, double c1, double c2, double eps, double decay);
#endif
