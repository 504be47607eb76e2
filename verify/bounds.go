package verify

import (
	"math"
)

// spine is the unrolled computation the verifier reasons about: the encoder
// layers, then one hidden layer per decoder step,
//
//	h_{t+1} = ReLU(Whh·h_t + Wih·i_t + b),  i_0 = encoder output, i_{t≥1} = emb[y_{t−1}],
//
// each an affine map of the previous layer's output, decoder steps t ≥ 1
// with an extra token term Wih·emb[z] for a token z from an allowed set.
// Logits o_t = Wout·h_{t+1} + Bout hang off the hidden layers as heads.
type spine struct {
	net    *Net
	layers []sLayer
	enc    int // index of the encoder's last layer (i₀)
	// logitRows[z] is o[z] and marginRows[z] is o[z] − o[eos] as rows over
	// a hidden layer's output (marginRows[eos] is unused).
	logitRows, marginRows []Row
}

type sLayer struct {
	Layer
	// tokens[z] = Wih·emb[z] for decoder steps t ≥ 1, nil otherwise.
	tokens [][]float64
	step   int // decoder step t for hidden layers, −1 in the encoder
}

// newSpine unrolls net for steps 0..K (K+1 hidden layers).
func newSpine(net *Net, K int) *spine {
	s := &spine{net: net}
	for _, l := range net.Encoder {
		s.layers = append(s.layers, sLayer{Layer: l, step: -1})
	}
	s.enc = len(s.layers) - 1
	for z := 0; z < net.Vocab; z++ {
		s.logitRows = append(s.logitRows, denseRow(net.Wout[z], net.Bout[z]))
		w := make([]float64, net.Hidden)
		for k := range w {
			w[k] = net.Wout[z][k] - net.Wout[net.EOS][k]
		}
		s.marginRows = append(s.marginRows, denseRow(w, net.Bout[z]-net.Bout[net.EOS]))
	}
	e := len(net.Emb[0])
	var tok [][]float64
	for z := range net.Emb {
		p := make([]float64, net.Hidden)
		for j := range p {
			for k := 0; k < e; k++ {
				p[j] += net.Wih[j][k] * net.Emb[z][k]
			}
		}
		tok = append(tok, p)
	}
	for t := 0; t <= K; t++ {
		var l sLayer
		l.step, l.ReLU = t, true
		if t == 0 {
			l.Name, l.In = "h1", e
			for j := 0; j < net.Hidden; j++ {
				l.Rows = append(l.Rows, denseRow(net.Wih[j], net.Bih[j]+net.Bhh[j]))
			}
		} else {
			l.Name, l.In, l.tokens = "h"+itoa(t+1), net.Hidden, tok
			for j := 0; j < net.Hidden; j++ {
				l.Rows = append(l.Rows, denseRow(net.Whh[j], net.Bih[j]+net.Bhh[j]))
			}
		}
		s.layers = append(s.layers, l)
	}
	return s
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func denseRow(w []float64, b float64) Row {
	r := Row{B: b}
	for i, v := range w {
		if v != 0 {
			r.Idx = append(r.Idx, int32(i))
			r.W = append(r.W, v)
		}
	}
	return r
}

// hidden returns the spine index of h_{t+1}, the layer whose output feeds
// the logits of step t.
func (s *spine) hidden(t int) int { return s.enc + 1 + t }

// Bounds holds sound bounds of every quantity of the unrolled network.
type Bounds struct {
	Input []Interval
	// Pre[L] bounds the pre-activations of spine layer L.
	Pre [][]Interval
	// Logits[t] bounds o_t; Margin[t][z] bounds o_t[z] − o_t[eos].
	Logits, Margin [][]Interval
	// Allowed[t][z]: token z may be emitted (and fed back) at step t of a
	// counterexample: z ≠ eos, o_t[z] can reach o_t[eos] and can be the
	// largest non-eos logit.
	Allowed [][]bool
	// Proven is set when the bounds alone show that eos wins at some step
	// t ≤ K for every input: the property holds.
	Proven   bool
	ProvenAt int
	Method   string
	// NumUnstable counts ReLUs whose bounds straddle 0: each would be a
	// binary variable of the exact MIP.
	NumUnstable int
}

// BoundMethod selects how pre-activation bounds are computed.
type BoundMethod string

const (
	// BoundInterval is interval arithmetic as in the paper.
	BoundInterval BoundMethod = "interval"
	// BoundCROWN adds linear bound propagation (back-substitution through ReLU
	// relaxations to the input box), intersected with the intervals.
	BoundCROWN BoundMethod = "crown"
)

// computeBounds bounds the spine over the input box, layer by layer,
// stopping early if eos provably wins at some step.
func computeBounds(s *spine, lo, hi []float64, method BoundMethod) *Bounds {
	b := &Bounds{Method: string(method)}
	for i := range lo {
		b.Input = append(b.Input, Interval{lo[i], hi[i]})
	}
	net := s.net
	out := b.Input // bounds of the previous layer's output
	for L, l := range s.layers {
		var allowed []bool
		if l.tokens != nil {
			allowed = b.Allowed[l.step-1]
		}
		pre := make([]Interval, len(l.Rows))
		for j, r := range l.Rows {
			iv := affineIBP(r, out)
			if allowed != nil {
				tl, th := tokenRange(l.tokens, allowed, j)
				iv = Interval{iv.Lo + tl, iv.Hi + th}
			}
			if method == BoundCROWN && L > 0 {
				iv = intersect(iv, s.crownRow(b, L, j, allowed))
			}
			pre[j] = iv
		}
		b.Pre = append(b.Pre, pre)
		if l.ReLU {
			out = make([]Interval, len(pre))
			for j, iv := range pre {
				out[j] = reluIv(iv)
				if iv.Lo < 0 && iv.Hi > 0 {
					b.NumUnstable++
				}
			}
		} else {
			out = pre
		}
		if l.step < 0 {
			continue
		}
		// Heads: logits and margins of step t.
		t := l.step
		logits := make([]Interval, net.Vocab)
		for z := range logits {
			logits[z] = affineIBP(s.logitRows[z], out)
		}
		margin := make([]Interval, net.Vocab)
		for z := range margin {
			if z == net.EOS {
				continue
			}
			r := s.marginRows[z]
			iv := affineIBP(r, out)
			if method == BoundCROWN {
				iv = intersect(iv, s.crownHead(b, L, r))
			}
			margin[z] = iv
		}
		b.Logits = append(b.Logits, logits)
		b.Margin = append(b.Margin, margin)
		// Which tokens can continue a counterexample at this step?
		bestLo := math.Inf(-1)
		for z, iv := range logits {
			if z != net.EOS {
				bestLo = math.Max(bestLo, iv.Lo)
			}
		}
		al := make([]bool, net.Vocab)
		any := false
		for z := range al {
			if z != net.EOS && margin[z].Hi >= 0 && logits[z].Hi >= bestLo {
				al[z] = true
				any = true
			}
		}
		b.Allowed = append(b.Allowed, al)
		if !any {
			b.Proven, b.ProvenAt = true, t
			return b
		}
	}
	return b
}

// tokenRange is the range of the token term of row j over allowed tokens.
func tokenRange(tokens [][]float64, allowed []bool, j int) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for z, ok := range allowed {
		if ok {
			lo, hi = math.Min(lo, tokens[z][j]), math.Max(hi, tokens[z][j])
		}
	}
	return lo, hi
}

// crownRow bounds pre-activation j of spine layer L by back-substitution.
func (s *spine) crownRow(b *Bounds, L, j int, allowed []bool) Interval {
	r := s.layers[L].Rows[j]
	c := make([]float64, s.layers[L].In)
	for k, idx := range r.Idx {
		c[idx] = r.W[k]
	}
	var tl, th float64
	if allowed != nil {
		tl, th = tokenRange(s.layers[L].tokens, allowed, j)
	}
	up := s.upper(b, L-1, append([]float64(nil), c...), r.B)
	for i := range c {
		c[i] = -c[i]
	}
	lo := -s.upper(b, L-1, c, -r.B)
	return Interval{lo + tl, up + th}
}

// crownHead bounds a linear function r of the output of spine layer L.
func (s *spine) crownHead(b *Bounds, L int, r Row) Interval {
	c := make([]float64, len(s.layers[L].Rows))
	for k, idx := range r.Idx {
		c[idx] = r.W[k]
	}
	up := s.upper(b, L, append([]float64(nil), c...), r.B)
	for i := range c {
		c[i] = -c[i]
	}
	return Interval{-s.upper(b, L, c, -r.B), up}
}

// upper returns a sound upper bound of c·a_L + k over the input box, where
// a_L is the output of spine layer L (L = −1: the input itself). ReLUs are
// replaced by CROWN's linear relaxations (upper: the chord; lower: the
// identity or zero, whichever is closer), token terms by their maximum
// over the allowed tokens. c is overwritten.
func (s *spine) upper(b *Bounds, L int, c []float64, k float64) float64 {
	xc, k, abs, absc := s.back(b, L, c, k)
	for i, ci := range xc {
		iv := b.Input[i]
		if ci >= 0 {
			k += ci * iv.Hi
		} else {
			k += ci * iv.Lo
		}
		abs += absc[i] * math.Max(math.Abs(iv.Lo), math.Abs(iv.Hi))
	}
	return k + relPad*abs + absPad
}

// linearUpper returns coefficients w and constant k with c·a_L + k₀ ≤ w·x + k
// for every input x of the box: CROWN's linear upper bound, its constant
// padded for rounding (the padding assumes |x| ≤ max(|lo|, |hi|)).
func (s *spine) linearUpper(b *Bounds, L int, c []float64, k float64) ([]float64, float64) {
	xc, k, abs, absc := s.back(b, L, c, k)
	for i := range xc {
		iv := b.Input[i]
		abs += absc[i] * math.Max(math.Abs(iv.Lo), math.Abs(iv.Hi))
	}
	return xc, k + relPad*abs + absPad
}

// back back-substitutes c·a_L + k to the input: it returns coefficients over
// x, the constant, the absolute sum of the constant's terms and the
// absolute coefficients (for rounding allowances).
func (s *spine) back(b *Bounds, L int, c []float64, k float64) (xc []float64, kk, abs float64, absc []float64) {
	abs = math.Abs(k)
	absc = make([]float64, len(c))
	for i, v := range c {
		absc[i] = math.Abs(v)
	}
	for ; L >= 0; L-- {
		l := s.layers[L]
		pre := b.Pre[L]
		if l.ReLU {
			for i, ci := range c {
				if ci == 0 {
					continue
				}
				iv := pre[i]
				switch {
				case iv.Hi <= 0:
					c[i], absc[i] = 0, 0
				case iv.Lo >= 0:
				case ci > 0: // a ≤ s·(z − lo)
					sl := iv.Hi / (iv.Hi - iv.Lo)
					c[i] = ci * sl
					absc[i] *= sl
					k -= ci * sl * iv.Lo
					abs += math.Abs(ci * sl * iv.Lo)
				default: // a ≥ α·z
					if iv.Hi < -iv.Lo {
						c[i], absc[i] = 0, 0
					}
				}
			}
		}
		next := make([]float64, l.In)
		nextAbs := make([]float64, l.In)
		var tokenCoef []float64
		for i, ci := range c {
			if ci == 0 {
				continue
			}
			r := l.Rows[i]
			k += ci * r.B
			abs += absc[i] * math.Abs(r.B)
			for q, idx := range r.Idx {
				next[idx] += ci * r.W[q]
				nextAbs[idx] += absc[i] * math.Abs(r.W[q])
			}
			if l.tokens != nil {
				if tokenCoef == nil {
					tokenCoef = make([]float64, len(c))
				}
				tokenCoef[i] = ci
			}
		}
		if tokenCoef != nil {
			allowed := b.Allowed[l.step-1]
			best, bestAbs := math.Inf(-1), 0.0
			for z, ok := range allowed {
				if !ok {
					continue
				}
				var v, va float64
				for i, ci := range tokenCoef {
					v += ci * l.tokens[z][i]
					va += math.Abs(ci * l.tokens[z][i])
				}
				if v > best {
					best = v
				}
				bestAbs = math.Max(bestAbs, va)
			}
			k += best
			abs += bestAbs
		}
		c, absc = next, nextAbs
	}
	return c, k, abs, absc
}
