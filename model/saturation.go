package model

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/lenspec/lenspec/ad"
)

// GateStepper is implemented by decoders with an LSTM cell: StepGates is
// Step that also returns the cell's gate pre-activations [B, 4·Hidden] in
// PyTorch's order i, f, g, o (nil when the decoder has no LSTM cell).
type GateStepper[T ad.Float] interface {
	Decoder[T]
	StepGates(tp *ad.Tape[T], s State[T], prev []int) (logits *ad.Node[T], next State[T], gates *ad.Node[T])
}

// StepGates is Step that also returns the LSTM cell's gate pre-activations
// (nil for the ReLU cell); it computes the LSTM step exactly as Step does.
func (m *Captioner[T]) StepGates(tp *ad.Tape[T], st State[T], prev []int) (*ad.Node[T], State[T], *ad.Node[T]) {
	if m.LSTM == nil {
		logits, next := m.Step(tp, st, prev)
		return logits, next, nil
	}
	s := st.(*captionerState[T])
	in := s.i0
	if prev != nil {
		in = m.Emb.Forward(tp, prev)
	}
	l := m.LSTM
	gates := tp.Add(tp.Linear(in, tp.Param(l.Wih), tp.Param(l.Bih)), tp.Linear(s.s[0], tp.Param(l.Whh), tp.Param(l.Bhh)))
	h, c := tp.LSTMCell(gates, s.s[1])
	return m.Out.Forward(tp, h), &captionerState[T]{s: []*ad.Node[T]{h, c}}, gates
}

// GateNames are the LSTM gates in PyTorch's order: input, forget, cell
// candidate, output.
var GateNames = [4]string{"i", "f", "g", "o"}

// DefaultSaturation is the |pre-activation| above which a gate counts as
// saturated: σ(4) = 0.982 and σ'(4) = 0.018, so a gradient through it is
// cut to under a fourteenth of its value at 0 (tanh'(4) = 0.0013 for g).
const DefaultSaturation = 4

// GatePath is what GateSaturation measures along one input's greedy
// decoding.
type GatePath struct {
	Result Result
	// Saturated[t][k] is the fraction of gate k's Hidden pre-activations
	// (k indexes GateNames) with |z| above the threshold at decoding step t,
	// for every step decoded, the step that emitted eos included.
	Saturated [][4]float64
	// EOSMargin is o[eos] − max_{z≠eos} o[z] at the step that emitted eos:
	// how far eos won by once the caption was complete. EOSLogProb is
	// log softmax(o)[eos] there. Both are NaN for an output that did not
	// stop.
	EOSMargin, EOSLogProb float64
}

// gateTap runs a GateStepper through Greedy, keeping the gates of the
// step that just ran.
type gateTap struct {
	GateStepper[float64]
	gates *ad.Node[float64]
}

func (g *gateTap) Step(tp *ad.Tape[float64], s State[float64], prev []int) (*ad.Node[float64], State[float64]) {
	logits, next, gates := g.StepGates(tp, s, prev)
	g.gates = gates
	return logits, next
}

// GateSaturation decodes b greedily in float64 (at most maxSteps steps; ≤ 0:
// the model's cap) and measures, at every step of every input's path, how
// saturated the LSTM's gates are (|pre-activation| > threshold) and, once
// the caption is complete, the margin by which eos won: the paper's
// explanation of Show-and-Tell's resistance to lengthening (§5.2) in
// numbers. It fails for a decoder without an LSTM cell.
func GateSaturation(ctx context.Context, d Decoder[float64], b Batch[float64], maxSteps int, threshold float64) ([]GatePath, error) {
	gs, ok := d.(GateStepper[float64])
	if !ok {
		return nil, fmt.Errorf("gate saturation: %s has no LSTM gates to measure", d.Config().Architecture)
	}
	if !(threshold > 0) || math.IsInf(threshold, 0) {
		return nil, fmt.Errorf("gate saturation: threshold %v must be positive and finite", threshold)
	}
	spec := d.Input()
	n, err := b.rows(spec)
	if err != nil {
		return nil, fmt.Errorf("gate saturation: %w", err)
	}
	out := make([]GatePath, n)
	v, eos := d.Vocab(), d.EOS()
	for lo := 0; lo < n; lo += decodeChunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(n, lo+decodeChunk)
		tap := &gateTap{GateStepper: gs}
		tp := ad.NewTape[float64](false)
		paths := out[lo:hi]
		res, err := Greedy[float64](tp, tap, b.slice(spec, lo, hi).input(tp, spec, hi-lo), GreedyOptions[float64]{
			MaxSteps: maxSteps,
			OnStep: func(t int, logits *ad.Node[float64], rows []int, live []bool) {
				if tap.gates == nil {
					return
				}
				h := tap.gates.Value.Shape[1] / 4
				for k, r := range rows {
					if !live[k] {
						continue
					}
					z := tap.gates.Value.Data[k*4*h : (k+1)*4*h]
					var sat [4]float64
					for g := range sat {
						c := 0
						for _, x := range z[g*h : (g+1)*h] {
							if math.Abs(x) > threshold {
								c++
							}
						}
						sat[g] = float64(c) / float64(h)
					}
					paths[r].Saturated = append(paths[r].Saturated, sat)
					o := logits.Value.Data[k*v : (k+1)*v]
					if y, gap, _ := Argmax(o); y == eos {
						paths[r].EOSMargin = gap
						paths[r].EOSLogProb = o[eos] - logSumExp(o)
					}
				}
			},
		})
		if err != nil {
			return nil, fmt.Errorf("gate saturation: %w", err)
		}
		if tap.gates == nil {
			return nil, fmt.Errorf("gate saturation: %s has no LSTM gates to measure", d.Config().Architecture)
		}
		for i, r := range res {
			paths[i].Result = r
			if !r.Stopped {
				paths[i].EOSMargin, paths[i].EOSLogProb = math.NaN(), math.NaN()
			}
		}
	}
	return out, nil
}

func logSumExp(o []float64) float64 {
	m := slices.Max(o)
	s := 0.0
	for _, x := range o {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}

// GateSummary aggregates GatePaths.
type GateSummary struct {
	Paths int `json:"paths"`
	// Gate[k] is the fraction of gate k's pre-activations saturated over
	// every step of every path; ByStep[t][k] the same at step t, over the
	// paths that reached it (StepPaths[t] of them).
	Gate      [4]float64   `json:"gate"`
	ByStep    [][4]float64 `json:"by_step"`
	StepPaths []int        `json:"step_paths"`
	// AtEOS is the saturation at the step that emitted eos, over the paths
	// that stopped: where the decision to stop is taken.
	AtEOS [4]float64 `json:"at_eos"`
	// The eos margins of the paths that stopped (Stopped of them; all
	// zero when none did): mean, median, 10th percentile and minimum; and
	// the mean probability of eos at its step.
	Stopped         int     `json:"stopped"`
	EOSMarginMean   float64 `json:"eos_margin_mean"`
	EOSMarginMedian float64 `json:"eos_margin_median"`
	EOSMarginP10    float64 `json:"eos_margin_p10"`
	EOSMarginMin    float64 `json:"eos_margin_min"`
	EOSProbMean     float64 `json:"eos_prob_mean"`
}

// SummariseGates aggregates paths (of any lengths).
func SummariseGates(paths []GatePath) GateSummary {
	s := GateSummary{Paths: len(paths)}
	var total [4]float64
	steps := 0
	var margins []float64
	for _, p := range paths {
		for t, sat := range p.Saturated {
			for len(s.ByStep) <= t {
				s.ByStep = append(s.ByStep, [4]float64{})
				s.StepPaths = append(s.StepPaths, 0)
			}
			for k := range sat {
				s.ByStep[t][k] += sat[k]
				total[k] += sat[k]
			}
			s.StepPaths[t]++
			steps++
		}
		if p.Result.Stopped && len(p.Saturated) > 0 {
			for k, v := range p.Saturated[len(p.Saturated)-1] {
				s.AtEOS[k] += v
			}
			margins = append(margins, p.EOSMargin)
			s.EOSProbMean += math.Exp(p.EOSLogProb)
		}
	}
	for k := range total {
		if steps > 0 {
			s.Gate[k] = total[k] / float64(steps)
		}
	}
	for t := range s.ByStep {
		for k := range s.ByStep[t] {
			s.ByStep[t][k] /= float64(s.StepPaths[t])
		}
	}
	s.Stopped = len(margins)
	if len(margins) > 0 {
		slices.Sort(margins)
		sum := 0.0
		for _, m := range margins {
			sum += m
		}
		s.EOSMarginMean = sum / float64(len(margins))
		s.EOSMarginMedian = margins[len(margins)/2]
		s.EOSMarginP10 = margins[len(margins)/10]
		s.EOSMarginMin = margins[0]
		s.EOSProbMean /= float64(len(margins))
		for k := range s.AtEOS {
			s.AtEOS[k] /= float64(len(margins))
		}
	}
	return s
}
