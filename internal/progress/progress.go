// Package progress reports the progress of long CLI runs: a progress bar
// when stderr is a terminal, plain timestamped log lines otherwise (CI logs,
// pipes), so neither ever fills with control characters nor goes silent.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Reporter shows the progress of one task of known size.
type Reporter struct {
	mu       sync.Mutex
	bar      *progressbar.ProgressBar
	w        io.Writer
	desc     string
	total    int
	done     int
	base     int       // done at the first Set: a resumed run's earlier work
	seen     bool      // whether Set has been called
	from     time.Time // when the first Set came; the rate is measured from here
	start    time.Time
	lastLog  time.Time
	interval time.Duration
	detail   string
}

// IsTerminal reports whether f is an interactive terminal.
func IsTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// New starts a reporter writing to stderr: a bar if stderr is a terminal,
// a line every 10 s otherwise. quiet silences it.
func New(desc string, total int, quiet bool) *Reporter {
	return NewTo(os.Stderr, desc, total, !quiet && IsTerminal(os.Stderr), quiet)
}

// NewTo is New with an explicit writer and mode, for tests.
func NewTo(w io.Writer, desc string, total int, bar, quiet bool) *Reporter {
	r := &Reporter{w: w, desc: desc, total: total, start: time.Now(), interval: 10 * time.Second}
	if quiet {
		r.w = io.Discard
		return r
	}
	if bar {
		r.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		return r
	}
	r.lastLog = r.start
	fmt.Fprintf(w, "%s %s: started (%d)\n", stamp(), desc, total)
	return r
}

// Set records that done units are finished; detail is a short status
// ("loss 0.31", "best length 5") shown beside the count.
func (r *Reporter) Set(done int, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.seen {
		// A resumed run starts part-way; its rate counts only this run's work.
		r.base, r.seen, r.from = done, true, time.Now()
	}
	r.done, r.detail = done, detail
	if r.bar != nil {
		if detail != "" {
			r.bar.Describe(r.desc + " " + detail)
		}
		_ = r.bar.Set(done)
		return
	}
	if time.Since(r.lastLog) >= r.interval {
		r.lastLog = time.Now()
		fmt.Fprintf(r.w, "%s %s: %d/%d%s, %s\n", stamp(), r.desc, done, r.total, withSep(detail), r.eta())
	}
}

// Add advances by n.
func (r *Reporter) Add(n int, detail string) {
	r.mu.Lock()
	done := r.done + n
	r.mu.Unlock()
	r.Set(done, detail)
}

// Finish closes the bar or prints a final line.
func (r *Reporter) Finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		_ = r.bar.Finish()
		return
	}
	fmt.Fprintf(r.w, "%s %s: done %d/%d%s in %s\n", stamp(), r.desc, r.done, r.total, withSep(r.detail), time.Since(r.start).Round(time.Millisecond))
}

func (r *Reporter) eta() string {
	el := time.Since(r.start)
	if r.done <= r.base {
		return "elapsed " + el.Round(time.Second).String()
	}
	left := time.Duration(float64(time.Since(r.from)) / float64(r.done-r.base) * float64(r.total-r.done))
	return fmt.Sprintf("elapsed %s, eta %s", el.Round(time.Second), left.Round(time.Second))
}

func withSep(s string) string {
	if s == "" {
		return ""
	}
	return ", " + s
}

func stamp() string { return time.Now().Format("15:04:05") }

// Stages shows a run made of stages (a training's pretraining, then its
// training; an experiment's methods), each a task of its own on stderr:
// report starts a new reporter whenever the stage changes; finish ends the
// current one, so that a result printed after it starts on a clean line.
func Stages(quiet bool) (report func(stage string, done, total int, status string), finish func()) {
	return stages(func(stage string, total int) *Reporter { return New(stage, total, quiet) })
}

// stages is Stages with its reporters made by start.
func stages(start func(stage string, total int) *Reporter) (report func(stage string, done, total int, status string), finish func()) {
	var rep *Reporter
	current := ""
	finish = func() {
		if rep != nil {
			rep.Finish()
			rep = nil
		}
	}
	return func(stage string, done, total int, status string) {
		if stage != current || rep == nil {
			finish()
			current, rep = stage, start(stage, total)
		}
		rep.Set(done, status)
	}, finish
}
