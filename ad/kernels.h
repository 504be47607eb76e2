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
// output gradient g; y, if not NULL, is a fused ReLU's output: g passes
// where y > 0.
void ls_conv_bwd(const ls_conv *s, const float *g, const float *y, const float *xp, const float *w, float *dx, float *dw,
                 float *db, float *scratch);
void ls_adam(float *w, const float *g, float *m, float *v, size_t n, double lr, double b1, double b2, double c1, double c2, double eps, double decay);
#endif
