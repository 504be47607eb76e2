//go:build cgo

package cbc

/*
#cgo pkg-config: cbc clp
#cgo CXXFLAGS: -std=c++11 -O2
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/cgo"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/mip/internal/coin"
	"github.com/lenspec/lenspec/mip/internal/evsink"
	"github.com/lenspec/lenspec/mip/internal/prune"
)

// solveSem serialises in-process CBC solves: a solve holds its one slot.
// CBC 2.10 keeps global state (in CbcMain1's parameter handling and in the
// shim's callback, which has no user-data argument): concurrent solves in
// one process were seen to return at once with nothing solved. It is a
// channel rather than a mutex so that a caller whose context ends while it
// waits can give up. Apart from the test hook testThrow, this is the
// package's only mutable package-level state. To solve in parallel, use mip/external, which runs one cbc
// process per solve.
var solveSem = make(chan struct{}, 1)

// testThrow, if not 0, makes the next solves throw a C++ exception inside
// the shim (one of the throw constants): tests of the error path, which
// no known model reaches.
var testThrow int

// Values of testThrow.
const (
	throwCoinError = 1 + iota
	throwStdException
	throwOther
)

// Solver solves models with CBC linked into the process. The zero value
// is ready to use. Solves are serialised: concurrent calls to Solve wait
// for one another.
type Solver struct{}

var _ mip.Solver = Solver{}

// Name returns "cbc 2.10.x".
func (Solver) Name() string { return "cbc " + Version }

// events is what the shim's event callback reaches through its handle.
type events struct {
	sink *evsink.Sink
	c    *C.ls_ctx

	mu     sync.Mutex
	panic  *callbackPanic // the first panic of the caller's OnEvent
	silent bool           // set after a panic: call OnEvent no more
}

// callbackPanic is the value Solve panics with when Options.OnEvent
// panicked. It is an error that unwraps to the original value if that was
// an error, and it carries the stack of the original panic, which the
// re-panic would otherwise lose.
type callbackPanic struct {
	value any
	stack []byte
}

func (p *callbackPanic) Error() string {
	return fmt.Sprintf("cbc: Options.OnEvent panicked: %v\n\n[original stack]:\n%s", p.value, p.stack)
}

func (p *callbackPanic) Unwrap() error {
	err, _ := p.value.(error)
	return err
}

//export lsCbcEvent
func lsCbcEvent(h C.uintptr_t, kind C.int, obj, bound C.double, nodes C.int64_t, elapsed C.double) {
	ev := cgo.Handle(h).Value().(*events)
	ev.mu.Lock()
	silent := ev.silent
	ev.mu.Unlock()
	if silent {
		return
	}
	// This runs above C++ frames (on one of CBC's threads if it runs
	// several): a panic must not unwind through them, which would skip
	// their destructors and leave the shim's locks held, or, on a C
	// thread, crash the process. Keep it, stop the solve, and let Solve
	// re-panic once CBC has returned.
	defer func() {
		if r := recover(); r != nil {
			ev.mu.Lock()
			if ev.panic == nil {
				ev.panic = &callbackPanic{value: r, stack: debug.Stack()}
			}
			ev.silent = true
			ev.mu.Unlock()
			C.ls_ctx_cancel(ev.c, 1, 0)
		}
	}()
	ev.sink.Send(mip.Event{
		Kind:      mip.EventKind(kind),
		Objective: float64(obj),
		Bound:     float64(bound),
		Nodes:     int64(nodes),
		Elapsed:   time.Duration(float64(elapsed) * float64(time.Second)),
	})
}

// cArrays holds the model in C memory: the problem struct handed to C
// holds pointers, and cgo forbids passing Go memory that contains
// pointers to Go memory.
type cArrays struct {
	ptrs []unsafe.Pointer
}

func (a *cArrays) doubles(v []float64) *C.double {
	if len(v) == 0 {
		v = []float64{0}
	}
	p := C.malloc(C.size_t(len(v)) * C.size_t(unsafe.Sizeof(C.double(0))))
	a.ptrs = append(a.ptrs, p)
	copy(unsafe.Slice((*float64)(p), len(v)), v)
	return (*C.double)(p)
}

func (a *cArrays) ints(v []int) *C.int {
	if len(v) == 0 {
		v = []int{0}
	}
	p := C.malloc(C.size_t(len(v)) * C.size_t(unsafe.Sizeof(C.int(0))))
	a.ptrs = append(a.ptrs, p)
	s := unsafe.Slice((*C.int)(p), len(v))
	for i, x := range v {
		s[i] = C.int(x)
	}
	return (*C.int)(p)
}

func (a *cArrays) bytes(v []byte) *C.char {
	if len(v) == 0 {
		v = []byte{0}
	}
	p := C.malloc(C.size_t(len(v)))
	a.ptrs = append(a.ptrs, p)
	copy(unsafe.Slice((*byte)(p), len(v)), v)
	return (*C.char)(p)
}

// str copies s as a NUL-terminated C string.
func (a *cArrays) str(s string) *C.char { return a.bytes(append([]byte(s), 0)) }

func (a *cArrays) free() {
	for _, p := range a.ptrs {
		C.free(p)
	}
}

// cInf maps ±Inf to CBC's infinity (COIN_DBL_MAX), which is what its
// loaders treat as "no bound".
func cInf(v []float64) []float64 {
	for i, x := range v {
		if math.IsInf(x, 1) {
			v[i] = math.MaxFloat64
		} else if math.IsInf(x, -1) {
			v[i] = -math.MaxFloat64
		}
	}
	return v
}

// Solve solves m with CBC; see mip.Solver for the contract. The objective
// constant is handled in Go: CBC sees the objective without it, and the
// cutoff and all reported values are shifted accordingly.
func (s Solver) Solve(ctx context.Context, m *mip.Model, opt mip.Options) (*mip.Result, error) {
	if err := opt.Validate(m); err != nil {
		return nil, err
	}
	if m.NumVars() == 0 {
		return nil, fmt.Errorf("cbc: model %q has no variables", m.Name())
	}
	start, index, value := m.CSC()
	if len(index) > math.MaxInt32 {
		return nil, fmt.Errorf("cbc: model %q has %d nonzeros, more than CBC can index", m.Name(), len(index))
	}
	n := m.NumVars()
	collb, colub := make([]float64, n), make([]float64, n)
	isint := make([]byte, n)
	for j := range n {
		v := m.Var(j)
		collb[j], colub[j] = v.Lb, v.Ub
		if v.Type != mip.Continuous {
			isint[j] = 1
		}
	}
	obj, constant := m.Objective()
	rowlb, rowub := m.RowBounds()

	var a cArrays
	defer a.free()
	p := C.ls_problem{
		ncols:   C.int(n),
		nrows:   C.int(m.NumRows()),
		start:   a.ints(start),
		index:   a.ints(index),
		value:   a.doubles(value),
		collb:   a.doubles(cInf(collb)),
		colub:   a.doubles(cInf(colub)),
		obj:     a.doubles(obj),
		rowlb:   a.doubles(cInf(rowlb)),
		rowub:   a.doubles(cInf(rowub)),
		isint:   a.bytes(isint),
		rel_gap: C.double(opt.RelGap),
		abs_gap: C.double(opt.AbsGap),
	}
	if opt.Start != nil {
		p.mipstart = a.doubles(opt.Start)
	}
	if opt.TimeLimit > 0 {
		p.time_limit = C.double(opt.TimeLimit.Seconds())
	}
	p.threads = C.int(max(opt.Threads, 1))
	if opt.UseCutoff {
		p.use_cutoff = 1
		p.cutoff = C.double(opt.Cutoff - constant)
	}
	p.solution_limit = C.int(opt.SolutionLimit)
	p.inject_exception = C.int(testThrow)
	if len(opt.Params) > 0 {
		p.extra = a.str(strings.Join(opt.Params, "\n"))
	}
	x := make([]float64, n)
	xc := a.doubles(x)

	res := &mip.Result{Solver: s.Name(), Bound: math.NaN()}
	t0 := time.Now()
	if ctx.Err() != nil {
		res.Status = mip.Cancelled
		res.Wall = time.Since(t0)
		res.Finish(m, &opt)
		return res, nil
	}

	var h cgo.Handle
	var ev *events
	sink := evsink.New(opt.OnEvent, constant, t0)
	if sink != nil {
		ev = &events{sink: sink}
		h = cgo.NewHandle(ev)
		defer h.Delete()
	}
	c := C.ls_ctx_new(C.uintptr_t(h), C.int(btoi(ev != nil)))
	defer C.ls_ctx_free(c)
	if ev != nil {
		ev.c = c
	}

	select {
	case solveSem <- struct{}{}:
	case <-ctx.Done():
		// Cancelled while another solve runs: give up waiting.
		res.Status = mip.Cancelled
		res.Wall = time.Since(t0)
		res.Finish(m, &opt)
		return res, nil
	}
	defer func() { <-solveSem }()
	if ctx.Err() != nil { // select picks at random when both are ready
		res.Status = mip.Cancelled
		res.Wall = time.Since(t0)
		res.Finish(m, &opt)
		return res, nil
	}
	done := make(chan struct{})
	watcher := make(chan struct{})
	// The watcher stops the solve when ctx is done, and at the time limit:
	// CBC's own clock is not looked at inside an LP or preprocessing.
	var limit <-chan time.Time
	if opt.TimeLimit > 0 {
		tm := time.NewTimer(opt.TimeLimit - time.Since(t0))
		defer tm.Stop()
		limit = tm.C
	}
	go func() {
		defer close(watcher)
		select {
		case <-ctx.Done():
			// A deadline is a time limit too; a plain cancellation
			// (such as a stop at the first good incumbent) lets the LP
			// under way finish, or CBC could drop that incumbent.
			deadline := errors.Is(ctx.Err(), context.DeadlineExceeded)
			C.ls_ctx_cancel(c, 1, C.int(btoi(deadline)))
			if deadline {
				return
			}
		case <-limit:
			C.ls_ctx_cancel(c, 2, 1)
			return
		case <-done:
			return
		}
		// Cancelled: the LP may finish, but not past the time limit or
		// an enclosing deadline (it can run for seconds).
		var dl <-chan time.Time
		if d, ok := ctx.Deadline(); ok {
			tm := time.NewTimer(time.Until(d))
			defer tm.Stop()
			dl = tm.C
		}
		select {
		case <-limit:
		case <-dl:
		case <-done:
			return
		}
		C.ls_ctx_cancel(c, 2, 1)
	}()
	var r C.ls_result
	C.ls_solve(&p, c, &r, xc)
	close(done)
	<-watcher
	res.Wall = time.Since(t0)
	if ev != nil {
		ev.mu.Lock()
		p := ev.panic
		ev.mu.Unlock()
		if p != nil {
			panic(p)
		}
	}

	if r.exception != 0 {
		// CBC ran and failed: by the mip.Solver contract that is a
		// result, not an error, so that callers carry on with the
		// next model.
		res.Status = mip.Error
		res.Message = "cbc: " + C.GoString(&r.message[0])
		res.Finish(m, &opt)
		return res, nil
	}
	res.Nodes = int64(r.nodes)
	if r.has_solution != 0 {
		res.HasSolution = true
		res.Solution = make([]float64, n)
		copy(res.Solution, unsafe.Slice((*float64)(unsafe.Pointer(xc)), n))
	}
	var boundOK bool
	// A completion that reaches the limit is not trusted (ReachedLimit).
	res.Status, boundOK = status(&r, res.HasSolution, opt.ReachedLimit(res.Wall))
	if bound := float64(r.bound); boundOK && coin.Finite(bound) {
		res.Bound = bound + constant
	} else if bound := float64(r.stop_bound); r.lp_stopped != 0 && coin.Finite(bound) {
		res.Bound = bound + constant // proven before an LP was cut short
	}
	if res.Status == mip.Optimal && !boundOK {
		res.Bound = math.Inf(1) // lowered to the incumbent below
	}
	if res.HasSolution {
		// CBC prunes nodes whose LP bound comes within its cutoff
		// increment of the incumbent, so that is how far below the
		// incumbent the optimum may hide.
		res.Bound = math.Min(res.Bound, m.Eval(res.Solution)-prune.Slack(m, float64(r.increment)))
	}
	res.Finish(m, &opt)
	if res.Status == mip.Error {
		res.Message = fmt.Sprintf("cbc: unexpected outcome: status %d, secondary status %d, CbcMain1 returned %d, solution %v",
			r.status, r.secondary, r.main_return, r.has_solution != 0)
	}
	sink.Final(res)
	return res, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// status maps CBC's status and secondary status to a mip.Status and says
// whether CBC's bound can be used.
func status(r *C.ls_result, hasSol, atLimit bool) (st mip.Status, boundOK bool) {
	st, boundOK = cbcStatus(r, hasSol, atLimit)
	if r.lp_stopped != 0 {
		// An LP was cut short: CBC may have taken it for optimal or
		// infeasible and pruned on it. Nothing it concluded after the
		// stop stands; the caller uses the bound proven before it.
		boundOK = false
		if r.cancelled == 1 {
			st = mip.Cancelled
		} else {
			st = mip.TimeLimit
		}
	}
	return st, boundOK
}

func cbcStatus(r *C.ls_result, hasSol, atLimit bool) (mip.Status, bool) {
	cancelled := r.cancelled == 1
	atLimit = atLimit || r.cancelled == 2
	stopped := mip.TimeLimit // how a stop that was asked for reads
	if cancelled {
		stopped = mip.Cancelled
	}
	if r.status == 0 && (cancelled || atLimit) {
		// "Completed" while being stopped: preprocessing and cut
		// generation, interrupted by the (real or cancellation) time
		// limit, report infeasibility they did not prove.
		return stopped, false
	}
	switch r.status {
	case -1:
		// CbcMain1 stopped before branch and bound (the callback does
		// that when asked to stop during preprocessing).
		if r.cancelled != 0 {
			return stopped, false
		}
		return mip.Error, false
	case 0:
		// Search completed, neither cancelled nor at the time limit
		// (both handled above). On completion the proof is the
		// incumbent itself (the caller subtracts the pruning slack):
		// CBC's best possible value is then meaningless when
		// preprocessing solved the whole model.
		switch {
		case r.unbounded != 0 || r.secondary == 7:
			return mip.Unbounded, false
		case hasSol && r.secondary == 2:
			return mip.Optimal, true // stopped on the requested gap
		case hasSol:
			return mip.Optimal, false
		}
		return mip.Infeasible, false
	case 1:
		switch {
		case r.secondary == 7:
			return mip.Unbounded, false
		case cancelled:
			return mip.Cancelled, true
		case r.secondary == 2:
			return mip.Optimal, true // stopped on the requested gap
		case r.secondary == 4 || r.cancelled == 2:
			return mip.TimeLimit, true
		case r.secondary == 6:
			return mip.SolutionLimit, true
		}
	case 5:
		if r.cancelled != 0 {
			return stopped, true
		}
	}
	return mip.Error, false
}

// sigintHandler returns the address of the current SIGINT handler.
func sigintHandler() uintptr { return uintptr(C.ls_sigint_handler()) }
