package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestPlainLines(t *testing.T) {
	var buf bytes.Buffer
	r := NewTo(&buf, "train", 10, false, false)
	r.interval = 0
	r.Set(4, "loss 0.5")
	r.Add(6, "loss 0.1")
	r.Finish()
	out := buf.String()
	for _, want := range []string{"train: started (10)", "train: 4/10, loss 0.5", "train: done 10/10, loss 0.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
	if strings.ContainsAny(out, "\r\x1b") {
		t.Errorf("plain output has control characters: %q", out)
	}
}

func TestPlainThrottled(t *testing.T) {
	var buf bytes.Buffer
	r := NewTo(&buf, "x", 100, false, false)
	r.interval = time.Hour
	for i := 0; i < 100; i++ {
		r.Set(i, "")
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Fatalf("%d lines for a throttled run, want only the start line", n)
	}
}

func TestQuiet(t *testing.T) {
	var buf bytes.Buffer
	r := NewTo(&buf, "x", 3, false, true)
	r.Set(3, "")
	r.Finish()
	if buf.Len() != 0 {
		t.Fatalf("quiet reporter wrote %q", buf.String())
	}
}

// A resumed run reports its rate from this run's work only: 50 of 100 units
// already done and 10 more in the first stretch must not promise the rest in
// a fraction of the time.
func TestResumedETA(t *testing.T) {
	var buf bytes.Buffer
	r := NewTo(&buf, "x", 100, false, false)
	r.interval = 0
	r.Set(50, "")
	r.from = r.from.Add(-10 * time.Second) // 10 units took 10 s
	r.Set(60, "")
	out := buf.String()
	if !strings.Contains(out, "eta 40s") {
		t.Fatalf("want eta 40s for 40 units left at 1/s, got %q", out)
	}
}

// TestStages: a new stage finishes the last one and starts its own
// reporter; a report after finish starts the stage again.
func TestStages(t *testing.T) {
	var buf bytes.Buffer
	report, finish := stages(func(stage string, total int) *Reporter {
		r := NewTo(&buf, stage, total, false, false)
		r.interval = 0
		return r
	})
	for _, step := range []struct {
		stage       string
		done, total int
	}{{"pretrain", 1, 2}, {"pretrain", 2, 2}, {"train", 1, 3}, {"train", 3, 3}} {
		report(step.stage, step.done, step.total, "")
	}
	finish()
	finish() // a second finish does nothing
	report("train", 3, 3, "")
	finish()
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		got = append(got, l[strings.Index(l, " ")+1:]) // without the time stamp
	}
	want := []string{"pretrain: started (2)", "pretrain: 1/2", "pretrain: 2/2", "pretrain: done 2/2",
		"train: started (3)", "train: 1/3", "train: 3/3", "train: done 3/3",
		"train: started (3)", "train: 3/3", "train: done 3/3"}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = strings.HasPrefix(got[i], want[i]) // then the elapsed time
	}
	if !ok {
		t.Fatalf("lines\n%s\nwant lines starting\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
