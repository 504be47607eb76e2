package evsink

import (
	"math"
	"testing"
	"time"

	"github.com/lenspec/lenspec/mip"
)

func TestSink(t *testing.T) {
	var got []mip.Event
	s := New(func(e mip.Event) { got = append(got, e) }, 10, time.Now())
	s.Send(mip.Event{Kind: mip.BoundImproved, Objective: math.Inf(1), Bound: -5})
	s.Send(mip.Event{Kind: mip.IncumbentFound, Objective: -1, Bound: -5})
	if len(got) != 2 || got[1].Objective != 9 || got[1].Bound != 5 || got[0].Elapsed <= 0 {
		t.Fatalf("events %+v", got)
	}
	// A result no better than the last incumbent event adds nothing; a
	// better one is reported.
	s.Final(&mip.Result{HasSolution: true, Objective: 9, Bound: 7})
	if len(got) != 2 {
		t.Fatalf("Final repeated an incumbent: %+v", got)
	}
	s.Final(&mip.Result{HasSolution: true, Objective: 8, Bound: 7, Nodes: 3})
	if len(got) != 3 || got[2].Kind != mip.IncumbentFound || got[2].Objective != 8 || got[2].Bound != 7 || got[2].Nodes != 3 {
		t.Fatalf("Final: %+v", got)
	}
	s.Final(&mip.Result{HasSolution: false, Objective: math.Inf(1)})
	if len(got) != 3 {
		t.Fatalf("Final without a solution sent %+v", got[3:])
	}
	var nilSink *Sink
	nilSink.Send(mip.Event{})
	nilSink.Final(&mip.Result{HasSolution: true})
	if New(nil, 0, time.Now()) != nil {
		t.Errorf("New(nil) is not nil")
	}
}
