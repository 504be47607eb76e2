package verify

import (
	"fmt"
	"math"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/model"
)

// neuron kinds of a ReLU under known pre-activation bounds.
const (
	inactive   = iota // hi ≤ 0: output 0, no variable
	active            // lo ≥ 0: output = pre-activation, continuous
	unstable          // big-M with one binary
	linear            // no ReLU
	relaxed           // unstable, encoded by its triangle relaxation (no binary)
	abstracted        // inside the encoder, replaced by linear bounds on i₀
)

// encodeOptions chooses how exact the MIP is.
type encodeOptions struct {
	// relaxGap: unstable ReLUs whose triangle relaxation is within this
	// of the ReLU everywhere (−l·u/(u−l) < relaxGap) get the relaxation
	// instead of a binary.
	relaxGap float64
	// abstract replaces the encoder layers below abstractAt by CROWN's
	// linear lower and upper bounds of layer abstractAt's pre-activations in
	// terms of the input: a far smaller MIP whose feasible set contains the
	// exact one. Layers from abstractAt on are encoded exactly.
	abstract   bool
	abstractAt int
	// box keeps only the interval bounds of the abstraction boundary (no
	// linear rows in x, no input variables): the decoder-sized MIP solves
	// in milliseconds where the linear rows over thousands of inputs make
	// every LP slow.
	box bool
}

// encoding is the MIP of "some input of the ball decodes more than K
// tokens" (docs/verification.md): the unrolled network with big-M ReLUs,
// a one-hot argmax over the non-eos tokens that can win at each step, the
// fed-back embedding as a linear function of the one-hot, and the margin
// m ≤ max_{z≠eos} o_t[z] − o_t[eos] for t = 0..K. The objective minimises
// −m.
type encoding struct {
	m     *mip.Model
	s     *spine
	b     *Bounds
	K     int
	x     []int   // input variables
	kind  [][]int // per spine layer, per neuron
	out   [][]int // output variable per neuron (−1: constant 0)
	bin   [][]int // binary per unstable neuron (−1 otherwise)
	logit [][]int // per step, per token: variable or −1
	delta [][]int // per step, per token: one-hot binary, −1 if not allowed; a lone allowed token is fixed (−2)
	omax  []int   // per step: max non-eos logit variable, −1 if a single token is allowed
	mvar  int
	// Binaries counts the binary variables (ReLUs and argmax).
	Binaries, ReLUBinaries int
	// Relaxed counts unstable ReLUs encoded by their triangle relaxation.
	Relaxed int
	// zpre holds the abstraction boundary's pre-activation variables.
	zpre   []int
	zpreAt int
}

// lin is a linear expression Σ coef·var + c.
type lin struct {
	idx  []int
	coef []float64
	c    float64
}

func (l *lin) add(v int, w float64) {
	if v >= 0 && w != 0 {
		l.idx = append(l.idx, v)
		l.coef = append(l.coef, w)
	}
}

// row adds the constraint v·a − expr (sense) rhs, i.e. a·v − expr ⋚ rhs.
func (e *encoding) rowVar(name string, v int, a float64, ex lin, extra []int, extraCoef []float64, sense mip.Sense, rhs float64) {
	idx := append([]int{v}, extra...)
	coef := append([]float64{a}, extraCoef...)
	for k, j := range ex.idx {
		idx = append(idx, j)
		coef = append(coef, -ex.coef[k])
	}
	e.m.AddRow(name, idx, coef, sense, rhs+ex.c)
}

// encode builds the MIP from the spine and its bounds. With relaxations
// (see encodeOptions) the model over-approximates: a robustness proof stays
// sound, but a counterexample it finds may be spurious (it is replayed
// anyway).
func encode(s *spine, b *Bounds, K int, eo encodeOptions) (*encoding, error) {
	relaxGap := eo.relaxGap
	e := &encoding{m: mip.NewModel("lenspec"), s: s, b: b, K: K, zpreAt: -1}
	if eo.abstract {
		e.zpreAt = eo.abstractAt
	}
	if !eo.box {
		for i, iv := range b.Input {
			e.x = append(e.x, e.m.AddVar(fmt.Sprintf("x%d", i), iv.Lo, iv.Hi, mip.Continuous))
		}
	}
	prevOut := e.x
	for L, l := range s.layers {
		pre := b.Pre[L]
		var zvar []int // abstraction boundary: pre-activation variables
		if eo.abstract && L < eo.abstractAt {
			e.kind, e.out, e.bin = append(e.kind, nil), append(e.out, nil), append(e.bin, nil)
			continue
		}
		if eo.abstract && L == eo.abstractAt && (L > 0 || eo.box) {
			zvar = e.abstractPre(L, eo.box)
		}
		kinds := make([]int, len(l.Rows))
		outs := make([]int, len(l.Rows))
		bins := make([]int, len(l.Rows))
		for j, r := range l.Rows {
			bins[j] = -1
			ex := lin{c: r.B}
			if zvar != nil {
				ex = lin{idx: []int{zvar[j]}, coef: []float64{1}}
			} else {
				for k, idx := range r.Idx {
					ex.add(prevOut[idx], r.W[k])
				}
			}
			if l.tokens != nil { // Σ_z δ_{t−1}[z]·(Wih·emb[z])_j
				t := l.step - 1
				for z, d := range e.delta[t] {
					switch {
					case d >= 0:
						ex.add(d, l.tokens[z][j])
					case d == -2:
						ex.c += l.tokens[z][j]
					}
				}
			}
			iv := pre[j]
			name := fmt.Sprintf("%s_%d", l.Name, j)
			switch {
			case !l.ReLU:
				kinds[j] = linear
				outs[j] = e.m.AddVar(name, iv.Lo, iv.Hi, mip.Continuous)
				e.rowVar(name+"_def", outs[j], 1, ex, nil, nil, mip.EQ, 0)
			case iv.Hi <= 0:
				kinds[j], outs[j] = inactive, -1
			case iv.Lo >= 0:
				kinds[j] = active
				outs[j] = e.m.AddVar(name, iv.Lo, iv.Hi, mip.Continuous)
				e.rowVar(name+"_def", outs[j], 1, ex, nil, nil, mip.EQ, 0)
			case -iv.Lo*iv.Hi/(iv.Hi-iv.Lo) < relaxGap:
				kinds[j] = relaxed
				a := e.m.AddVar(name, 0, iv.Hi, mip.Continuous)
				outs[j] = a
				e.Relaxed++
				// a ≥ ẑ;  a ≤ u/(u−l)·(ẑ − l): with a ≥ 0 (its bound), the triangle.
				sl := iv.Hi / (iv.Hi - iv.Lo)
				e.rowVar(name+"_ge", a, 1, ex, nil, nil, mip.GE, 0)
				scaled := lin{idx: ex.idx, c: sl * ex.c}
				for _, c := range ex.coef {
					scaled.coef = append(scaled.coef, sl*c)
				}
				e.rowVar(name+"_chord", a, 1, scaled, nil, nil, mip.LE, -sl*iv.Lo)
			default:
				kinds[j] = unstable
				a := e.m.AddVar(name, 0, iv.Hi, mip.Continuous)
				d := e.m.AddVar(name+"_on", 0, 1, mip.Binary)
				outs[j], bins[j] = a, d
				e.Binaries++
				e.ReLUBinaries++
				// a ≥ ẑ;  a ≤ ẑ − lo·(1 − d);  a ≤ hi·d  (paper Eq. 5)
				e.rowVar(name+"_ge", a, 1, ex, nil, nil, mip.GE, 0)
				e.rowVar(name+"_le", a, 1, ex, []int{d}, []float64{-iv.Lo}, mip.LE, -iv.Lo)
				e.m.AddRow(name+"_off", []int{a, d}, []float64{1, -iv.Hi}, mip.LE, 0)
			}
		}
		e.kind, e.out, e.bin = append(e.kind, kinds), append(e.out, outs), append(e.bin, bins)
		prevOut = outs
		if l.step < 0 {
			continue
		}
		if err := e.head(l.step, outs); err != nil {
			return nil, err
		}
	}
	// m ≤ min over steps of the margin bounds; the objective minimises −m.
	ub := math.Inf(1)
	for t := 0; t <= K; t++ {
		best := math.Inf(-1)
		for z, ok := range b.Allowed[t] {
			if ok {
				best = math.Max(best, b.Margin[t][z].Hi)
			}
		}
		ub = math.Min(ub, best)
	}
	e.m.SetBounds(e.mvar, math.Inf(-1), ub)
	e.m.SetObjective([]int{e.mvar}, []float64{-1}, 0)
	if err := e.m.Err(); err != nil {
		return nil, fmt.Errorf("verify: encoding: %w", err)
	}
	return e, nil
}

// abstractPre creates variables for the pre-activations of encoder layer
// L, bounded by their intervals and (unless box) by CROWN's linear bounds
// in x, standing in for every layer below L.
func (e *encoding) abstractPre(L int, box bool) []int {
	s, b := e.s, e.b
	l := s.layers[L]
	zs := make([]int, len(l.Rows))
	for j, r := range l.Rows {
		iv := b.Pre[L][j]
		name := fmt.Sprintf("%s_pre%d", l.Name, j)
		zs[j] = e.m.AddVar(name, iv.Lo, iv.Hi, mip.Continuous)
		if box {
			continue
		}
		c := make([]float64, l.In)
		for k, idx := range r.Idx {
			c[idx] = r.W[k]
		}
		neg := make([]float64, len(c))
		for i, v := range c {
			neg[i] = -v
		}
		wu, ku := s.linearUpper(b, L-1, c, r.B)
		wl, kl := s.linearUpper(b, L-1, neg, -r.B) // −z ≤ wl·x + kl
		up, lo := lin{c: ku}, lin{c: -kl}
		for i, xi := range e.x {
			up.add(xi, wu[i])
			lo.add(xi, -wl[i])
		}
		e.rowVar(name+"_up", zs[j], 1, up, nil, nil, mip.LE, 0)
		e.rowVar(name+"_lo", zs[j], 1, lo, nil, nil, mip.GE, 0)
	}
	e.zpre = zs
	return zs
}

// input returns the input point of a MIP solution, or nil when the
// encoding has no input variables (the box abstraction).
func (e *encoding) input(sol []float64) []float64 {
	if len(e.x) == 0 {
		return nil
	}
	x := make([]float64, len(e.x))
	for i, v := range e.x {
		x[i] = sol[v]
	}
	return x
}

// head encodes the logits of step t, the argmax one-hot over the allowed
// tokens and the margin constraint m ≤ o_max − o_eos.
func (e *encoding) head(t int, h []int) error {
	net, b := e.s.net, e.b
	if t == 0 {
		e.mvar = e.m.AddVar("m", math.Inf(-1), math.Inf(1), mip.Continuous)
	}
	allowed := b.Allowed[t]
	logit := make([]int, net.Vocab)
	for z := range logit {
		logit[z] = -1
		if !allowed[z] && z != net.EOS {
			continue
		}
		iv := b.Logits[t][z]
		name := fmt.Sprintf("o%d_%d", t, z)
		logit[z] = e.m.AddVar(name, iv.Lo, iv.Hi, mip.Continuous)
		ex := lin{c: net.Bout[z]}
		for k, v := range h {
			ex.add(v, net.Wout[z][k])
		}
		e.rowVar(name+"_def", logit[z], 1, ex, nil, nil, mip.EQ, 0)
	}
	e.logit = append(e.logit, logit)
	var toks []int
	for z, ok := range allowed {
		if ok {
			toks = append(toks, z)
		}
	}
	delta := make([]int, net.Vocab)
	for z := range delta {
		delta[z] = -1
	}
	eos := logit[net.EOS]
	if len(toks) == 1 {
		z := toks[0]
		delta[z] = -2
		e.omax = append(e.omax, -1)
		// m ≤ o_z − o_eos
		e.m.AddRow(fmt.Sprintf("m_%d", t), []int{e.mvar, logit[z], eos}, []float64{1, -1, 1}, mip.LE, 0)
	} else {
		U := math.Inf(-1)
		for _, z := range toks {
			U = math.Max(U, b.Logits[t][z].Hi)
		}
		lo := math.Inf(1)
		for _, z := range toks {
			lo = math.Min(lo, b.Logits[t][z].Lo)
		}
		om := e.m.AddVar(fmt.Sprintf("omax%d", t), lo, U, mip.Continuous)
		e.omax = append(e.omax, om)
		var sumIdx []int
		var sumCoef []float64
		for _, z := range toks {
			d := e.m.AddVar(fmt.Sprintf("y%d_%d", t, z), 0, 1, mip.Binary)
			delta[z] = d
			e.Binaries++
			sumIdx, sumCoef = append(sumIdx, d), append(sumCoef, 1)
			M := U - b.Logits[t][z].Lo
			// omax ≥ o_z;  omax ≤ o_z + M·(1 − δ_z)  (paper Eq. 6)
			e.m.AddRow(fmt.Sprintf("omax%d_ge_%d", t, z), []int{om, logit[z]}, []float64{1, -1}, mip.GE, 0)
			e.m.AddRow(fmt.Sprintf("omax%d_le_%d", t, z), []int{om, logit[z], d}, []float64{1, -1, M}, mip.LE, M)
		}
		e.m.AddRow(fmt.Sprintf("onehot%d", t), sumIdx, sumCoef, mip.EQ, 1)
		e.m.AddRow(fmt.Sprintf("m_%d", t), []int{e.mvar, om, eos}, []float64{1, -1, 1}, mip.LE, 0)
	}
	e.delta = append(e.delta, delta)
	return nil
}

// assignment returns the MIP point of input x decoded along its path with
// the argmax taken over the non-eos tokens at each step (the path a
// counterexample follows; model.Greedy with NoEOS decodes it). ok is false
// when the path leaves the encoded set (a token outside Allowed), which
// happens only for inputs that are not counterexamples.
func (e *encoding) assignment(d64 model.Decoder[float64], x []float64) (v []float64, ok bool, err error) {
	net := e.s.net
	tp := ad.NewTape[float64](false)
	path, err := model.Greedy(tp, d64, model.Input[float64]{X: tp.Const(ad.FromSlice(x, 1, len(x)))}, model.GreedyOptions[float64]{MaxSteps: e.K + 1, NoEOS: true})
	if err != nil {
		return nil, false, err
	}
	tokens := path[0].Tokens
	v = make([]float64, e.m.NumVars())
	for i, xi := range e.x {
		v[xi] = x[i]
	}
	pre, in := net.Forward(x)
	set := func(L int, z []float64) []float64 {
		out := make([]float64, len(z))
		if e.kind[L] == nil { // abstracted encoder layer
			return out
		}
		if L == e.zpreAt && e.zpre != nil {
			for j, zj := range z {
				v[e.zpre[j]] = zj
			}
		}
		for j, zj := range z {
			switch e.kind[L][j] {
			case linear:
				out[j] = zj
			default:
				out[j] = math.Max(zj, 0)
			}
			if o := e.out[L][j]; o >= 0 {
				v[o] = out[j]
			}
			if d := e.bin[L][j]; d >= 0 && zj > 0 {
				v[d] = 1
			}
		}
		return out
	}
	for L := 0; L <= e.s.enc; L++ {
		set(L, pre[L])
	}
	h := make([]float64, net.Hidden)
	m := math.Inf(1)
	for t, y := range tokens {
		z, _, o := net.StepPre(in, h)
		h = set(e.s.hidden(t), z)
		for q, oq := range o {
			if lv := e.logit[t][q]; lv >= 0 {
				v[lv] = oq
			}
		}
		if !e.b.Allowed[t][y] {
			return v, false, nil
		}
		if d := e.delta[t][y]; d >= 0 {
			v[d] = 1
		}
		if om := e.omax[t]; om >= 0 {
			v[om] = o[y]
		}
		m = math.Min(m, o[y]-o[net.EOS])
		in = net.Emb[y]
	}
	v[e.mvar] = m
	return v, true, nil
}
