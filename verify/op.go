package verify

import "math"

// The operator contract: what every operator of the IR implements, and
// the views of the driver's state its rules read and write. The driver
// (crown.go, alpha.go, bab.go, encode.go) runs operators only through
// these interfaces; an operator file (op_*.go) uses only what is defined
// here, block.go, interval.go and mipexpr.go.

// op is an operator of the IR.
type op interface {
	// eval is the float64 forward pass on one point: ins are the inputs'
	// values, tok the token a token-reading operator reads (−1 elsewhere).
	eval(ins [][]float64, tok int) []float64
	// interval bounds the output from the inputs' bounds; allowed are the
	// tokens a token-reading operator can read (nil elsewhere).
	interval(ins [][]Interval, allowed []bool) []Interval
	// encode adds the operator's MIP encoding given its inputs' linear
	// expressions and returns its output's.
	encode(e *encoding, n *node, ins [][]lin) []lin
}

// backOp is an operator with a backward rule of its own: exact for the
// affine operators (dense, conv, sum, slice, constant, token feedback,
// which is affine in its step's one-hot), a fixed relaxation for the
// product (McCormick's planes).
type backOp interface {
	op
	// back moves node n's coefficients in s to its inputs (and its
	// constant term to s's constants).
	back(s *backState, n *node)
	// forward evaluates the operator on a batch of points: ins' rows are
	// the points' inputs. For the gradients of relaxation parameters s is
	// the back-substitution whose relaxed network is evaluated (the token
	// a feedback took, the plane a product took, for each row).
	forward(s *backState, n *node, ins []*block) *block
}

// activation is an element-wise nonlinear operator of one input, relaxed
// by a line per neuron. Its relaxation has params() free parameters per
// neuron (ReLU: the lower slope; sigmoid and tanh: the tangent points of
// the upper and the lower line), which α-CROWN optimises: the bound of an
// objective holds for every parameter in the feasible set project keeps
// them in.
type activation interface {
	op
	// apply is the function on one value.
	apply(z float64) float64
	// outInterval bounds the output over the pre-activations iv.
	outInterval(iv Interval) Interval
	// unstable reports whether the operator is not linear over iv: its
	// relaxation is loose there and a split can help.
	unstable(iv Interval) bool
	// params is the number of free parameters per neuron.
	params() int
	// initParams writes CROWN's choice of the parameters on iv into p.
	initParams(iv Interval, p []float64)
	// project moves p into the set where relax is sound on iv.
	project(iv Interval, p []float64)
	// relax is the CROWN rule: for a coefficient c on the output, slope s
	// and constant d with c·f(z) ≤ c·s·z + d for every z in iv, using the
	// parameters p.
	relax(c float64, iv Interval, p []float64) (s, d float64)
	// gradParams writes into g the derivative in p of c·s·z + d, relax's
	// line at the pre-activation z.
	gradParams(c float64, iv Interval, p []float64, z float64, g []float64)
	// splitAt is where a branch-and-bound split cuts iv in two.
	splitAt(iv Interval) float64
	// score is how much of a bound with coefficient c on the output the
	// relaxation on iv may cost: what a split can remove (branching).
	score(c float64, iv Interval) float64
}

// rowRelaxer is an activation with a fast loop for relaxing a whole row
// (the driver otherwise calls relax per neuron): cr the row's
// coefficients on the output, pre its pre-activation bounds, alr its
// parameters (nil: CROWN's), ar/air the absolute coefficients (nil: not
// padded), sr/dr where the lines are recorded (nil: not recorded); it
// adds to ir (air), or writes every value of them when fresh, and returns
// the constant and its absolute part.
type rowRelaxer interface {
	relaxRow(cr, ir []float64, pre []Interval, alr, ar, air, sr, dr []float64, fresh bool) (k, kabs float64)
}

// inputScorer is an operator whose relaxation loosens with its inputs'
// ranges (a product's McCormick planes): for a coefficient c on its output
// i, inputScores writes into out[k] how much of a bound narrowing input k
// at i can remove, which branching credits to the activation producing it.
type inputScorer interface {
	inputScores(c float64, ins [][]Interval, i int, out []float64)
}

// wideReader is an operator whose rows read many inputs each (dense,
// conv): the MIP gives the node it reads a variable per output, or its
// rows would multiply out.
type wideReader interface{ readsWide() }

// neuron names one neuron of an activation node: a split cuts its
// pre-activation (the activation's input).
type neuron struct{ node, index int }

// cut is the range a branch-and-bound domain confines a neuron's
// pre-activation to: lo ≤ z ≤ hi (±Inf where a side is not cut). A split
// at a point p makes two children, the parent's cut with z ≥ p and with
// z ≤ p, which cover it.
type cut struct{ lo, hi float64 }

// uncut is a neuron no split has cut.
var uncut = cut{math.Inf(-1), math.Inf(1)}

// side returns c cut further at p: z ≥ p (up) or z ≤ p.
func (c cut) side(p float64, up bool) cut {
	if up {
		c.lo = math.Max(c.lo, p)
	} else {
		c.hi = math.Min(c.hi, p)
	}
	return c
}

// apply intersects iv with the cut.
func (c cut) apply(iv Interval) Interval {
	return Interval{math.Max(iv.Lo, c.lo), math.Min(iv.Hi, c.hi)}
}

// splitSet is a branch-and-bound domain's splits: the cut of every split
// neuron's pre-activation.
type splitSet map[neuron]cut

// of returns nu's cut (uncut when it has none).
func (s splitSet) of(nu neuron) cut {
	if c, ok := s[nu]; ok {
		return c
	}
	return uncut
}

// backState is one batched back-substitution: rows objectives, row r a
// linear function of one node's output over its domain dom[r], carried to
// the input through every operator's backward rule. An operator's rule
// reads its node's coefficients (coef, and abs when padded) and adds its
// inputs' (into, absInto) and its constant (k, kabs).
type backState struct {
	g   *graph
	dom []*Bounds
	rx  *relaxation
	rec *backRecord
	// padded tracks the absolute values of every term (abs, kabs), from
	// which the rounding allowance is computed; an optimiser's iterates
	// skip it.
	padded    bool
	coef, abs []*block // per node, the rows' coefficients on its output
	k, kabs   []float64
}

// relaxation holds the free parameters of a batched back-substitution,
// per activation node: alpha[n] the rows' relaxation parameters (rows ×
// width·params; nil: CROWN's choice); betaLo[n] and betaHi[n] the rows'
// β-CROWN multipliers (≥ 0) of the split constraints z ≥ lo and z ≤ hi on
// n's pre-activations, which enter the back-substitution as beta[n] =
// betaLo − betaHi on the pre-activation's coefficients and, where a cut
// is not at 0, betaK[n] = Σ βhi·hi − βlo·lo on the constant (column 0;
// column 1 the sum of the terms' absolute values, for the rounding
// allowance).
type relaxation struct {
	alpha, betaLo, betaHi, beta, betaK []*block
	// cuts are the rows' cut terms (nil: none). They are not among the
	// parts copied between rows: a row's terms are valid only for its own
	// domain's cuts.
	cuts *cutTerms
}

// newRelaxation returns empty parameters for a graph of n nodes.
func newRelaxation(n int) *relaxation {
	return &relaxation{alpha: make([]*block, n), betaLo: make([]*block, n), betaHi: make([]*block, n),
		beta: make([]*block, n), betaK: make([]*block, n)}
}

// parts lists the parameter blocks, for copying rows between relaxations.
func (rx *relaxation) parts() [][]*block {
	return [][]*block{rx.alpha, rx.betaLo, rx.betaHi, rx.beta, rx.betaK}
}

// backRecord is what a back-substitution chose, per activation node: the
// coefficients on its output before the relaxation and the line
// (slope·z + shift) each row's relaxation took; per product node, the
// coefficients (their signs chose its planes); per token-reading node,
// each row's token (−1 or a nil slice: none chosen).
type backRecord struct {
	coef, slope, shift []*block
	token              [][]int
}

// into returns the coefficient block of node p, created at zero.
func (s *backState) into(p int) *block {
	if s.coef[p] == nil {
		s.coef[p] = s.g.pool.get(len(s.dom), s.g.nodes[p].width)
	}
	return s.coef[p]
}

// fresh reports whether node p has no coefficients yet: an operator that
// writes every value may then take intoDirty's block.
func (s *backState) fresh(p int) bool { return s.coef[p] == nil }

// intoDirty is into for an operator that overwrites every value of a
// fresh block (no zeroing).
func (s *backState) intoDirty(p int) *block {
	s.coef[p] = s.g.pool.dirty(len(s.dom), s.g.nodes[p].width)
	return s.coef[p]
}

// absIntoDirty is intoDirty for the absolute coefficients.
func (s *backState) absIntoDirty(p int) *block {
	s.abs[p] = s.g.pool.dirty(len(s.dom), s.g.nodes[p].width)
	return s.abs[p]
}

// absInto is into for the absolute coefficients.
func (s *backState) absInto(p int) *block {
	if s.abs[p] == nil {
		s.abs[p] = s.g.pool.get(len(s.dom), s.g.nodes[p].width)
	}
	return s.abs[p]
}

// tokens returns the row's record of the token node n read (nil when the
// back-substitution records nothing), creating it.
func (s *backState) tokens(n *node) []int {
	if s.rec == nil {
		return nil
	}
	if s.rec.token[n.id] == nil {
		s.rec.token[n.id] = make([]int, len(s.dom))
		for r := range s.rec.token[n.id] {
			s.rec.token[n.id][r] = -1
		}
	}
	return s.rec.token[n.id]
}
