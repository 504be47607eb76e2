package nmt

import (
	"errors"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/model"
)

// failingWriter refuses every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestOutput: a line per text (line breaks as spaces, an empty line for
// a text not translated) or a JSON object naming its line or argument;
// warnings name the text; the counts and Progress say what was written;
// a write that fails is returned and not counted.
func TestOutput(t *testing.T) {
	texts := []struct {
		text string
		tr   model.Translation
	}{
		{"a", model.Translation{Text: "one\ntwo", IDs: []int{1}, Tokens: []string{"x"}, Source: []int{2}, Length: 1, Stopped: true}},
		{"b", model.Translation{Source: []int{3}, Err: errors.New("too long")}},
		{"c\xff", model.Translation{Text: "<0x0A>?", IDs: []int{}, Tokens: []string{}, Source: []int{}, InvalidUTF8: true}},
	}
	for _, tc := range []struct {
		json, stdin      bool
		out, warn, after string
	}{
		{false, true, "one two\n\n<0x0A>?\n",
			"translate: stdin line 2: too long|warning: translate: stdin line 3 is not valid UTF-8; its invalid bytes were translated as byte tokens|",
			"stdin lines 1–3 translated and written, none after them"},
		{true, false, `{"argument":1,"source":"a","text":"one\ntwo","source_ids":[2],"ids":[1],"tokens":["x"],"length":1,"stopped":true,"min_rel_margin":0}` + "\n" +
			`{"argument":2,"source":"b","error":"too long"}` + "\n" +
			`{"argument":3,"source":"c\ufffd","text":"<0x0A>?","source_ids":[],"ids":[],"tokens":[],"length":0,"stopped":false,"min_rel_margin":0,"invalid_utf8":true}` + "\n",
			"translate: argument 2: too long|warning: translate: argument 3 is not valid UTF-8; its invalid bytes were translated as byte tokens|",
			"arguments 1–3 translated and written, none after them"},
	} {
		var w, warn strings.Builder
		o := &Output{W: &w, JSON: tc.json, Stdin: tc.stdin, Warn: func(msg string) { warn.WriteString(msg + "|") }}
		for i, x := range texts {
			if err := o.Write(i+1, x.text, x.tr); err != nil {
				t.Fatal(err)
			}
		}
		if w.String() != tc.out || warn.String() != tc.warn || o.Done != 3 || o.Failed != 1 || o.Progress() != tc.after {
			t.Errorf("json %v stdin %v:\n%s\n%s\n%d %d %q", tc.json, tc.stdin, w.String(), warn.String(), o.Done, o.Failed, o.Progress())
		}
	}
	for _, tc := range []struct {
		stdin bool
		done  int
		want  string
	}{
		{true, 0, "no line of stdin translated"},
		{false, 0, "no argument translated"},
		{true, 1, "stdin line 1 translated and written, none after it"},
		{false, 1, "argument 1 translated and written, none after it"},
		{false, 2, "arguments 1–2 translated and written, none after them"},
	} {
		if got := (&Output{Stdin: tc.stdin, Done: tc.done}).Progress(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
	o := &Output{W: failingWriter{}, Warn: func(string) {}}
	if err := o.Write(1, "a", texts[0].tr); err == nil || o.Done != 0 {
		t.Errorf("a failed write: %v, %d written", err, o.Done)
	}
}
