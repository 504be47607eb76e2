package verify

import (
	"testing"
	"time"
)

// TestDefaultOptionsAreTheCLIs: the library's default is lenspec verify's
// for everything this package holds — branch and bound on, CROWN bounds,
// decision mode, the abstraction phases, 60 s — and valid; the solver and
// the falsifiers, which live in packages verify does not import, are the
// only parts left to the caller (experiment.DefaultVerifyOptions).
func TestDefaultOptionsAreTheCLIs(t *testing.T) {
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if !o.BaB || o.Bounds != BoundCROWN || !o.Decision || !o.Abstract || o.TimeLimit != 60*time.Second || o.Threads != 1 || o.Safety != 1e-3 {
		t.Fatalf("DefaultOptions %+v", o)
	}
	if o.Solver != nil || o.NewLP != nil || o.Falsifier != nil || o.Search != nil {
		t.Fatalf("DefaultOptions wires a solver or a falsifier: %+v", o)
	}
}
