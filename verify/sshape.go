package verify

import (
	"fmt"
	"math"

	"github.com/lenspec/lenspec/mip"
)

// The rules shared by sigmoid and tanh: increasing functions, convex on
// (−∞, 0] and concave on [0, ∞), point-symmetric about (0, f(0)) and
// bounded by their range. On [l, u]:
//
//   - the upper line: where u ≤ 0 (convex), the chord; otherwise the
//     tangent at a point t ∈ [max(l, 0), u] — the free parameter — lifted,
//     where it passes below (l, f(l)), until it passes through it (a
//     tangent at t ≥ 0 lies above f on [0, ∞); on [l, 0] the line minus f
//     is concave and ≥ 0 at both ends); where even the tangent at u passes
//     below (l, f(l)), the chord, which then lies above f (Zhang et al.,
//     CROWN, 2018; α-CROWN makes the tangent point a parameter);
//   - the lower line: the upper line of the reflected function,
//     f(z) = 2·f(0) − f(−z), on [−u, −l], reflected back, its tangent point
//     the second parameter, in [l, min(u, 0)].
//
// Every line's constant is padded by the rounding of f, f′ and the line's
// arithmetic (math.Exp and math.Tanh are within a few ulps; the padding
// is 10⁻⁹ relative), so each is a sound bound of the exact function.

// sshape is an S-shaped function: f, its first and second derivatives,
// its range and its value at 0.
type sshape struct {
	name           string
	f, df, d2f     func(float64) float64
	lo, hi, centre float64
}

// line is y = s·z + e.
type line struct{ s, e float64 }

func (l line) at(z float64) float64 { return l.s*z + l.e }

// linePad is the rounding allowance of a line of slope s on [l, u] built
// from f's values (bounded by 1 in magnitude).
func linePad(s float64, iv Interval) float64 {
	return relPad*(2+math.Abs(s)*(math.Abs(iv.Lo)+math.Abs(iv.Hi))) + absPad
}

// degenerate reports an interval too narrow or unbounded for lines
// through f's values: the rules then take constant lines, f's range over
// it.
func degenerate(iv Interval) bool {
	return !(iv.Hi-iv.Lo > 1e-12*(1+math.Abs(iv.Lo)+math.Abs(iv.Hi))) || math.IsInf(iv.Lo, 0) || math.IsInf(iv.Hi, 0)
}

func (f sshape) outInterval(iv Interval) Interval {
	lo, hi := f.lo, f.hi
	if !math.IsInf(iv.Lo, 0) && !math.IsNaN(iv.Lo) {
		v := f.f(iv.Lo)
		lo = math.Max(lo, v-relPad*math.Abs(v)-absPad)
	}
	if !math.IsInf(iv.Hi, 0) && !math.IsNaN(iv.Hi) {
		v := f.f(iv.Hi)
		hi = math.Min(hi, v+relPad*math.Abs(v)+absPad)
	}
	return Interval{lo, hi}
}

// tangentGap is how far the tangent at t passes above (l, f(l)): ≥ 0 where
// it lies above f on [l, t].
func (f sshape) tangentGap(l, t float64) float64 {
	return f.f(t) + f.df(t)*(l-t) - f.f(l)
}

// upperRange is the interval of the upper line's tangent point on iv, and
// whether the line is the chord (no parameter).
func (f sshape) upperRange(iv Interval) (lo, hi float64, chord bool) {
	if iv.Hi <= 0 || iv.Lo < 0 && f.tangentGap(iv.Lo, iv.Hi) < 0 {
		return 0, 0, true
	}
	return math.Max(iv.Lo, 0), iv.Hi, false
}

// upperDefault is CROWN's tangent point: the tangent through (l, f(l))
// where l < 0 (the tightest there), the midpoint where l ≥ 0.
func (f sshape) upperDefault(iv Interval) float64 {
	lo, hi, chord := f.upperRange(iv)
	if chord {
		return 0
	}
	if iv.Lo >= 0 {
		return (lo + hi) / 2
	}
	// tangentGap(l, ·) increases on [0, u] (its derivative is
	// f″(t)·(l − t) ≥ 0) and is ≥ 0 at u: bisect for its root.
	if f.tangentGap(iv.Lo, lo) >= 0 {
		return lo
	}
	for range 40 {
		m := (lo + hi) / 2
		if f.tangentGap(iv.Lo, m) >= 0 {
			hi = m
		} else {
			lo = m
		}
	}
	return hi
}

// upper returns the upper line on iv with tangent point t (clamped into
// its range), unpadded, and its derivative in t at z (gz).
func (f sshape) upper(iv Interval, t, z float64) (ln line, gz float64) {
	lo, hi, chord := f.upperRange(iv)
	if chord {
		s := (f.f(iv.Hi) - f.f(iv.Lo)) / (iv.Hi - iv.Lo)
		return line{s, f.f(iv.Lo) - s*iv.Lo}, 0
	}
	t = min(max(t, lo), hi)
	s := f.df(t)
	ln = line{s, f.f(t) - s*t}
	if gap := f.tangentGap(iv.Lo, t); gap < 0 {
		// Lifted through (l, f(l)): f′(t)·(z − l) + f(l).
		return line{s, f.f(iv.Lo) - s*iv.Lo}, f.d2f(t) * (z - iv.Lo)
	}
	return ln, f.d2f(t) * (z - t)
}

// mirror is f's lower line problem on iv as an upper line problem on
// −iv.
func mirror(iv Interval) Interval { return Interval{-iv.Hi, -iv.Lo} }

// lower returns the lower line on iv with tangent point t, unpadded, and
// its derivative in t at z: 2·f(0) − U(−z) for U the upper line on −iv
// with tangent point −t.
func (f sshape) lower(iv Interval, t, z float64) (line, float64) {
	u, gz := f.upper(mirror(iv), -t, -z)
	// L(z) = 2c − (u.s·(−z) + u.e) = u.s·z + 2c − u.e; dL/dt = dU/dt′ at −z.
	return line{u.s, 2*f.centre - u.e}, gz
}

func (f sshape) apply(z float64) float64 { return f.f(z) }

func (f sshape) eval(ins [][]float64, _ int) []float64 {
	out := make([]float64, len(ins[0]))
	for i, z := range ins[0] {
		out[i] = f.f(z)
	}
	return out
}

func (f sshape) interval(ins [][]Interval, _ []bool) []Interval {
	out := make([]Interval, len(ins[0]))
	for i, iv := range ins[0] {
		out[i] = f.outInterval(iv)
	}
	return out
}

// unstable: the function is not linear on any interval wider than a
// point (the relaxation tightens as the interval shrinks).
func (sshape) unstable(iv Interval) bool { return !degenerate(iv) }

// params: the tangent points of the upper and the lower line.
func (sshape) params() int { return 2 }

func (f sshape) initParams(iv Interval, p []float64) {
	if degenerate(iv) {
		p[0], p[1] = 0, 0
		return
	}
	p[0] = f.upperDefault(iv)
	p[1] = -f.upperDefault(mirror(iv))
}

func (f sshape) project(iv Interval, p []float64) {
	if degenerate(iv) {
		return
	}
	if lo, hi, chord := f.upperRange(iv); !chord {
		p[0] = min(max(p[0], lo), hi)
	}
	if lo, hi, chord := f.upperRange(mirror(iv)); !chord {
		p[1] = min(max(p[1], -hi), -lo)
	}
}

// bound is the padded line bounding f from above (upper) or below on iv
// with parameters p: constant where iv is degenerate.
func (f sshape) bound(iv Interval, p []float64, upper bool) line {
	if degenerate(iv) {
		o := f.outInterval(iv)
		if upper {
			return line{0, o.Hi}
		}
		return line{0, o.Lo}
	}
	var ln line
	if upper {
		ln, _ = f.upper(iv, p[0], 0)
		ln.e += linePad(ln.s, iv)
	} else {
		ln, _ = f.lower(iv, p[1], 0)
		ln.e -= linePad(ln.s, iv)
	}
	return ln
}

// relax: c·f(z) ≤ c·(s·z + e) with the upper line for c > 0 and the lower
// for c < 0.
func (f sshape) relax(c float64, iv Interval, p []float64) (s, d float64) {
	ln := f.bound(iv, p, c > 0)
	return ln.s, c * ln.e
}

func (f sshape) gradParams(c float64, iv Interval, p []float64, z float64, g []float64) {
	g[0], g[1] = 0, 0
	if degenerate(iv) {
		return
	}
	if c > 0 {
		_, gz := f.upper(iv, p[0], z)
		g[0] = c * gz
	} else {
		_, gz := f.lower(iv, p[1], z)
		g[1] = c * gz
	}
}

// splitAt: the inflection point 0 where iv crosses it (each side is then
// convex or concave, and its lines tighter), the midpoint otherwise.
func (sshape) splitAt(iv Interval) float64 {
	if iv.Lo < 0 && iv.Hi > 0 {
		return 0
	}
	return (iv.Lo + iv.Hi) / 2
}

// score is |c| times the gap between CROWN's upper and lower lines at the
// split point: what a split there can remove.
func (f sshape) score(c float64, iv Interval) float64 {
	if degenerate(iv) {
		return 0
	}
	p := make([]float64, 2)
	f.initParams(iv, p)
	at := f.splitAt(iv)
	return math.Abs(c) * math.Max(0, f.bound(iv, p, true).at(at)-f.bound(iv, p, false).at(at))
}

// outer are the tangent points of the MIP's upper lines on iv: the range's
// ends and its midpoint (the chord alone where there is no range).
func (f sshape) outer(iv Interval) []float64 {
	lo, hi, chord := f.upperRange(iv)
	if chord {
		return []float64{0}
	}
	if iv.Lo < 0 {
		lo = f.upperDefault(iv)
	}
	return []float64{lo, (lo + hi) / 2, hi}
}

// encode: a variable y in f's interval over the pre-activation's bounds,
// below three upper lines and above three lower lines: an outer
// approximation of f's graph, so the MIP's feasible set contains every
// true point (a robust verdict from it is sound; its counterexamples are
// replayed like any other).
func (f sshape) encode(e *encoding, n *node, ins [][]lin) []lin {
	pre := e.b.Val[n.in[0]]
	out := make([]lin, len(ins[0]))
	for j, ex := range ins[0] {
		iv := pre[j]
		o := f.outInterval(iv)
		name := e.name(n, j)
		y := e.m.AddVar(name, o.Lo, o.Hi, mip.Continuous)
		out[j] = varExpr(y)
		if degenerate(iv) {
			continue
		}
		e.Relaxed++
		for k, t := range f.outer(iv) {
			up := f.bound(iv, []float64{t, 0}, true)
			// y ≤ s·ẑ + e
			e.rowVar(fmt.Sprintf("%s_up%d", name, k), y, 1, ex.scaled(up.s), nil, nil, mip.LE, up.e)
		}
		for k, t := range f.outer(mirror(iv)) {
			lo := f.bound(iv, []float64{0, -t}, false)
			e.rowVar(fmt.Sprintf("%s_lo%d", name, k), y, 1, ex.scaled(lo.s), nil, nil, mip.GE, lo.e)
		}
	}
	return out
}
