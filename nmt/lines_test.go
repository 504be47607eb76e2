package nmt

import (
	"bufio"
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/internal/testmodels"
	"github.com/lenspec/lenspec/model"
)

// TestReadLine: lines without their endings, whichever ending; lines over
// the limit read through and flagged.
func TestReadLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string // "!" marks a line over the limit
	}{
		{"", nil},
		{"a\n", []string{"a"}},
		{"a", []string{"a"}},
		{"a\r\n\nb\r", []string{"a", "", "b"}},
		{"12345678\n123456789\nc\n", []string{"12345678", "!", "c"}},
		{"12345678\r\n", []string{"12345678"}},
		{strings.Repeat("x", 100) + "\nd", []string{"!", "d"}},
		{strings.Repeat("x", 100), []string{"!"}},
	} {
		r := bufio.NewReaderSize(strings.NewReader(c.in), 16) // smaller than a long line
		var got []string
		for {
			line, long, err := readLine(r, 8)
			if err != nil {
				if err != io.EOF {
					t.Fatalf("%q: %v", c.in, err)
				}
				break
			}
			if long {
				line = "!"
			}
			got = append(got, line)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

// failingReader gives its text, then fails.
type failingReader struct{ r io.Reader }

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errors.New("disk on fire")
	}
	return n, err
}

// TestTranslateLines: every line is passed on in order, numbered, with
// the translation it has alone (whatever the batch), a line the model
// cannot read with its reason; a read error names the line it stopped
// at.
func TestTranslateLines(t *testing.T) {
	d, err := testmodels.Translator(8)
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{"das haus", "", "die katze ist alt und der hund ist klein und das haus", "der hund ist klein"}
	in := strings.Join(lines, "\n") + "\n"
	for _, batch := range []int{1, 2, 1024} {
		var got []string
		err := TranslateLines(context.Background(), d, strings.NewReader(in), batch, 0, func(n int, text string, tr model.Translation) error {
			if n != len(got)+1 || text != lines[n-1] {
				t.Errorf("batch %d: line %d %q, want line %d %q", batch, n, text, len(got)+1, lines[len(got)])
			}
			alone, err := model.Translate(context.Background(), d, []string{text}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if (tr.Err != nil) != (alone[0].Err != nil) || tr.Err == nil && !reflect.DeepEqual(tr.IDs, alone[0].IDs) {
				t.Errorf("batch %d, line %d: %v %v, alone %v %v", batch, n, tr.IDs, tr.Err, alone[0].IDs, alone[0].Err)
			}
			got = append(got, text)
			return nil
		})
		if err != nil || len(got) != len(lines) {
			t.Fatalf("batch %d: %d lines, %v", batch, len(got), err)
		}
	}
	var n int
	err = TranslateLines(context.Background(), d, failingReader{strings.NewReader("das haus\nder hund\n")}, 8, 0, func(int, string, model.Translation) error { n++; return nil })
	var re *ReadError
	if !errors.As(err, &re) || re.Line != 3 || n != 2 {
		t.Errorf("read error after 2 lines: %v (%d lines passed on)", err, n)
	}
	stop := errors.New("stop")
	if err := TranslateLines(context.Background(), d, strings.NewReader(in), 8, 0, func(int, string, model.Translation) error { return stop }); err != stop {
		t.Errorf("emit's error: %v", err)
	}
}

// TestTranslateTexts: every text is passed on in order, numbered from 1,
// with model.Translate's translation of them together; emit's first
// error stops it.
func TestTranslateTexts(t *testing.T) {
	d, err := testmodels.Translator(8)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"das haus", "", "die katze ist alt und der hund ist klein und das haus", "der hund ist klein"}
	want, err := model.Translate(context.Background(), d, texts, 5)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	err = TranslateTexts(context.Background(), d, texts, 5, func(n int, text string, tr model.Translation) error {
		if text != texts[n-1] || (tr.Err != nil) != (want[n-1].Err != nil) || !reflect.DeepEqual(tr.IDs, want[n-1].IDs) {
			t.Errorf("text %d %q: %v %v, want %q %v %v", n, text, tr.IDs, tr.Err, texts[n-1], want[n-1].IDs, want[n-1].Err)
		}
		got = append(got, n)
		return nil
	})
	if err != nil || !reflect.DeepEqual(got, []int{1, 2, 3, 4}) {
		t.Fatalf("texts passed on %v, %v", got, err)
	}
	stop := errors.New("stop")
	calls := 0
	if err := TranslateTexts(context.Background(), d, texts, 5, func(int, string, model.Translation) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("emit's error: %v after %d calls", err, calls)
	}
}
