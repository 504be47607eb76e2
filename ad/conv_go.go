package ad

// Direct convolution loops in Go: the kernels of the pure-Go build and of
// float64 (replay and gradient checks), and the fallback for shapes the C
// kernels do not take. The loop order keeps the innermost loop over a
// contiguous output or input row.

func convForwardGo[T Float](s convShape, x, w, bias, y []T, relu bool) {
	k, st, p := s.g.Kernel, s.g.Stride, s.g.Pad
	for b := 0; b < s.b; b++ {
		for o := 0; o < s.oc; o++ {
			yo := y[(b*s.oc+o)*s.oh*s.ow : (b*s.oc+o+1)*s.oh*s.ow]
			var bv T
			if bias != nil {
				bv = bias[o]
			}
			for i := range yo {
				yo[i] = bv
			}
			for c := 0; c < s.c; c++ {
				xc := x[(b*s.c+c)*s.h*s.w : (b*s.c+c+1)*s.h*s.w]
				for ky := 0; ky < k; ky++ {
					for kx := 0; kx < k; kx++ {
						wv := w[((o*s.c+c)*k+ky)*k+kx]
						for oy := 0; oy < s.oh; oy++ {
							iy := oy*st - p + ky
							if iy < 0 || iy >= s.h {
								continue
							}
							xr, yr := xc[iy*s.w:(iy+1)*s.w], yo[oy*s.ow:(oy+1)*s.ow]
							for ox := range yr {
								if ix := ox*st - p + kx; ix >= 0 && ix < s.w {
									yr[ox] += wv * xr[ix]
								}
							}
						}
					}
				}
			}
			if relu {
				for i, v := range yo {
					if v < 0 {
						yo[i] = 0
					}
				}
			}
		}
	}
}

func convBackwardDataGo[T Float](s convShape, g, w, dx []T) {
	k, st, p := s.g.Kernel, s.g.Stride, s.g.Pad
	for b := 0; b < s.b; b++ {
		for o := 0; o < s.oc; o++ {
			go_ := g[(b*s.oc+o)*s.oh*s.ow : (b*s.oc+o+1)*s.oh*s.ow]
			for c := 0; c < s.c; c++ {
				dxc := dx[(b*s.c+c)*s.h*s.w : (b*s.c+c+1)*s.h*s.w]
				for ky := 0; ky < k; ky++ {
					for kx := 0; kx < k; kx++ {
						wv := w[((o*s.c+c)*k+ky)*k+kx]
						for oy := 0; oy < s.oh; oy++ {
							iy := oy*st - p + ky
							if iy < 0 || iy >= s.h {
								continue
							}
							dr, gr := dxc[iy*s.w:(iy+1)*s.w], go_[oy*s.ow:(oy+1)*s.ow]
							for ox, gv := range gr {
								if ix := ox*st - p + kx; ix >= 0 && ix < s.w {
									dr[ix] += wv * gv
								}
							}
						}
					}
				}
			}
		}
	}
}

func convBackwardWeightGo[T Float](s convShape, g, x, dw, db []T) {
	k, st, p := s.g.Kernel, s.g.Stride, s.g.Pad
	for b := 0; b < s.b; b++ {
		for o := 0; o < s.oc; o++ {
			go_ := g[(b*s.oc+o)*s.oh*s.ow : (b*s.oc+o+1)*s.oh*s.ow]
			if db != nil {
				var sum T
				for _, v := range go_ {
					sum += v
				}
				db[o] += sum
			}
			if dw == nil {
				continue
			}
			for c := 0; c < s.c; c++ {
				xc := x[(b*s.c+c)*s.h*s.w : (b*s.c+c+1)*s.h*s.w]
				for ky := 0; ky < k; ky++ {
					for kx := 0; kx < k; kx++ {
						var sum T
						for oy := 0; oy < s.oh; oy++ {
							iy := oy*st - p + ky
							if iy < 0 || iy >= s.h {
								continue
							}
							xr, gr := xc[iy*s.w:(iy+1)*s.w], go_[oy*s.ow:(oy+1)*s.ow]
							for ox, gv := range gr {
								if ix := ox*st - p + kx; ix >= 0 && ix < s.w {
									sum += gv * xr[ix]
								}
							}
						}
						dw[((o*s.c+c)*k+ky)*k+kx] += sum
					}
				}
			}
		}
	}
}

// convBackwardGo is convBackward with the Go loops.
func convBackwardGo[T Float](s convShape, g, y, x, w, dx, dw, db []T, scratch func(int) []T) {
	g = maskReLU(g, y, scratch)
	if dw != nil || db != nil {
		convBackwardWeightGo(s, g, x, dw, db)
	}
	if dx != nil {
		convBackwardDataGo(s, g, w, dx)
	}
}

// maskReLU returns g where y > 0 and 0 elsewhere (g itself when y is nil):
// the gradient past a fused ReLU with output y.
func maskReLU[T Float](g, y []T, scratch func(int) []T) []T {
	if y == nil {
		return g
	}
	m := scratch(len(g))
	for i, v := range y {
		if v > 0 {
			m[i] = g[i]
		} else {
			m[i] = 0
		}
	}
	return m
}
