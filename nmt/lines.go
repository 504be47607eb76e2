package nmt

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lenspec/lenspec/model"
)

// MaxLineBytes bounds a line TranslateLines reads: a longer one is read
// through and reported, not held in memory (it would be far over any
// model's max_source_len anyway).
const MaxLineBytes = 16 << 20

// BatchWait is how long a batch of lines waits for more after its first
// line: lines that come together (a file, a paste) are translated
// together, and a line that comes alone is not kept waiting for others.
const BatchWait = 20 * time.Millisecond

// TranslateLines translates the lines of r greedily with d as they
// arrive, passing each to emit in order with its 1-based number, its text
// and its translation. Lines at hand together are translated together, at
// most batch at a time, but no line waits more than BatchWait for others,
// so a line written alone to a pipe is answered before the next one
// comes. A line the model cannot read, or one over MaxLineBytes (its text
// then ""), has the reason in its translation's Err; the others are
// translated as they would be alone. TranslateLines returns at the end of
// r (nil), at emit's first error, at a read error (a *ReadError naming
// the line), or when ctx ends (ctx's error): at once if it is waiting for
// input, else within a decoding step, having passed on the lines of the
// batch finished before the first that was not.
func TranslateLines(ctx context.Context, d model.Decoder[float32], r io.Reader, batch, maxSteps int, emit func(n int, text string, t model.Translation) error) error {
	stop := make(chan struct{})
	defer close(stop)
	lines := readLines(r, batch, stop)
	done := 0
	for {
		b, end := nextBatch(ctx, lines, batch)
		if len(b) > 0 && ctx.Err() == nil {
			texts := make([]string, len(b))
			for i, l := range b {
				texts[i] = l.text
			}
			ts, err := model.Translate(ctx, d, texts, maxSteps)
			if ts == nil {
				return err
			}
			for i := range ts {
				if b[i].long {
					ts[i] = model.Translation{Err: fmt.Errorf("longer than %d MiB, not read", MaxLineBytes>>20)}
				}
			}
			n, emitErr := emitFinished(done, texts, ts, emit)
			if done += n; emitErr != nil {
				return emitErr
			}
			if err != nil {
				return err
			}
		}
		switch {
		case end == io.EOF:
			return nil
		case end != nil && ctx.Err() == nil:
			return &ReadError{Line: done + 1, Err: end}
		case end != nil:
			return end
		}
	}
}

// ReadError is a failure to read the input, at its line Line (1-based).
type ReadError struct {
	Line int
	Err  error
}

func (e *ReadError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *ReadError) Unwrap() error { return e.Err }

// line is one line of input as readLines passes it on.
type line struct {
	text string
	long bool  // over MaxLineBytes: not read, text is ""
	err  error // instead of a line: io.EOF after the last, or why reading failed
}

// readLines reads r line by line on a goroutine of its own, at most ahead
// lines ahead of their translation, until the end of r, a read error or
// stop. The last value sent carries the error (io.EOF at the end).
func readLines(r io.Reader, ahead int, stop <-chan struct{}) <-chan line {
	ch := make(chan line, ahead)
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			text, long, err := readLine(br, MaxLineBytes)
			select {
			case ch <- line{text, long, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// nextBatch returns the next lines to translate: at least one (waiting
// for it as long as it takes), then those that come within BatchWait of
// it, at most max. end is io.EOF when the input ended after them, a read
// error, or ctx's error when ctx ended first.
func nextBatch(ctx context.Context, lines <-chan line, max int) (b []line, end error) {
	var wait <-chan time.Time
	for len(b) < max {
		select {
		case <-ctx.Done():
			return b, ctx.Err()
		case <-wait:
			return b, nil
		case l := <-lines:
			if l.err != nil {
				return b, l.err
			}
			b = append(b, l)
			if wait == nil {
				t := time.NewTimer(BatchWait)
				defer t.Stop()
				wait = t.C
			}
		}
	}
	return b, nil
}

// readLine returns r's next line without its line ending ("\n", and any
// "\r" before it), or io.EOF when there is none. A line of more than max
// bytes is read to its end and dropped: long is set and line is "".
func readLine(r *bufio.Reader, max int) (line string, long bool, err error) {
	var buf []byte
	n := 0 // bytes of the line so far, line ending included
	for {
		chunk, err := r.ReadSlice('\n')
		n += len(chunk)
		if !long && n > max+2 { // "\r\n" may still come off
			long, buf = true, nil
		}
		if !long {
			buf = append(buf, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && n > 0 {
			break // a last line without "\n"
		}
		if err != nil {
			return "", false, err
		}
		break
	}
	if long {
		return "", true, nil
	}
	line = strings.TrimRight(strings.TrimSuffix(string(buf), "\n"), "\r")
	if len(line) > max {
		return "", true, nil
	}
	return line, false, nil
}

// TranslateTexts translates texts together with d (model.Translate),
// passing each to emit in order as TranslateLines passes lines: its
// 1-based number, its text and its translation (Err set for a text the
// model cannot read). It returns at emit's first error, or within a
// decoding step when ctx ends (ctx's error), having passed on the texts
// finished before the first that was not.
func TranslateTexts(ctx context.Context, d model.Decoder[float32], texts []string, maxSteps int, emit func(n int, text string, t model.Translation) error) error {
	ts, err := model.Translate(ctx, d, texts, maxSteps)
	if ts == nil {
		return err
	}
	if _, emitErr := emitFinished(0, texts, ts, emit); emitErr != nil {
		return emitErr
	}
	return err
}

// emitFinished passes texts and their translations ts to emit in order,
// numbered from after+1, up to the first that model.Translate left
// unfinished when its context ended: output stays in input order, so a
// stopped run writes the texts before the first it did not finish. It
// returns how many it passed on, and emit's first error.
func emitFinished(after int, texts []string, ts []model.Translation, emit func(n int, text string, t model.Translation) error) (int, error) {
	for i, t := range ts {
		if model.Unfinished(t) {
			return i, nil
		}
		if err := emit(after+i+1, texts[i], t); err != nil {
			return i, err
		}
	}
	return len(ts), nil
}
