// Package evsink delivers a backend's progress events to the caller's
// mip.Options.OnEvent callback.
package evsink

import (
	"math"
	"sync"
	"time"

	"github.com/lenspec/lenspec/mip"
)

// Sink serialises events, shifts them by the objective constant (backends
// hand solvers the objective without it) and remembers the best
// incumbent reported. A nil *Sink discards events.
type Sink struct {
	mu       sync.Mutex
	f        func(mip.Event)
	constant float64
	t0       time.Time
	best     float64
	bound    float64
}

// New returns a Sink calling f, or nil if f is nil. Objectives and bounds
// sent to it are shifted by constant; t0 is the start of the solve.
func New(f func(mip.Event), constant float64, t0 time.Time) *Sink {
	if f == nil {
		return nil
	}
	return &Sink{f: f, constant: constant, t0: t0, best: math.Inf(1), bound: math.Inf(-1)}
}

// Send delivers e with its objective and bound shifted by the constant
// and, if e.Elapsed is 0, the time since t0. Safe for concurrent use.
func (s *Sink) Send(e mip.Event) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e.Objective += s.constant
	e.Bound += s.constant
	if e.Elapsed == 0 {
		e.Elapsed = time.Since(s.t0)
	}
	if e.Kind == mip.IncumbentFound {
		s.best = math.Min(s.best, e.Objective)
	}
	s.bound = math.Max(s.bound, e.Bound)
	s.f(e)
}

// Final reports the result's solution as an incumbent if no event has
// reported one as good (solvers may find it in places that raise no
// event, such as presolve), so that callbacks see every final incumbent.
func (s *Sink) Final(res *mip.Result) {
	if s == nil || !res.HasSolution {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if res.Objective < s.best-1e-9*(1+math.Abs(res.Objective)) {
		s.best = res.Objective
		s.f(mip.Event{
			Kind:      mip.IncumbentFound,
			Objective: res.Objective,
			Bound:     math.Max(s.bound, res.Bound),
			Nodes:     res.Nodes,
			Elapsed:   time.Since(s.t0),
		})
	}
}
