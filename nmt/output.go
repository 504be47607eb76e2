package nmt

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/lenspec/lenspec/model"
)

// Output writes the translations TranslateLines and TranslateTexts pass
// to its Write as lenspec translate prints them: a line per text, so
// that output line n is always text n's translation (its line breaks as
// spaces, an empty line for a text not translated), or with JSON an
// object per text. It counts what it wrote, so that a run stopped early
// can say how far it got (Progress).
type Output struct {
	W    io.Writer
	JSON bool
	// Stdin says the texts are lines of standard input, not arguments.
	Stdin bool
	// Warn reports a text not translated, not valid UTF-8 or holding
	// control characters, in one line naming it.
	Warn func(msg string)
	// Done counts the texts written, Failed those of them not
	// translated.
	Done, Failed int
	enc          *json.Encoder
}

// outputRecord is a text's JSON object: where it came from (its line or
// argument number, 1-based), the text, and its translation or why there
// is none.
type outputRecord struct {
	Line     int    `json:"line,omitempty"`
	Argument int    `json:"argument,omitempty"`
	Source   string `json:"source"`
	Error    string `json:"error,omitempty"`
	*model.Translation
}

// lineBreaks turns the line breaks a translation may hold (byte tokens
// <0x0A>, <0x0D>) into spaces, so a translation is one line.
var lineBreaks = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// Write writes text n's translation t and counts it, reporting a text
// not translated, not valid UTF-8 or holding control characters. Its
// error is the output's.
func (o *Output) Write(n int, text string, t model.Translation) error {
	rec := outputRecord{Source: text, Translation: &t}
	where := fmt.Sprintf("argument %d", n)
	if o.Stdin {
		rec.Line, where = n, fmt.Sprintf("stdin line %d", n)
	} else {
		rec.Argument = n
	}
	if t.Err != nil {
		o.Failed++
		o.Warn(fmt.Sprintf("translate: %s: %v", where, t.Err))
		rec.Error, rec.Translation = t.Err.Error(), nil
	} else if t.InvalidUTF8 {
		o.Warn(fmt.Sprintf("warning: translate: %s is not valid UTF-8; its invalid bytes were translated as byte tokens", where))
	}
	if t.Err == nil && t.ControlChars {
		o.Warn(fmt.Sprintf("warning: translate: %s holds control characters (NUL, ESC, DEL…), which are not text; each was read as a space", where))
	}
	var err error
	if o.JSON {
		if o.enc == nil {
			o.enc = json.NewEncoder(o.W)
			o.enc.SetEscapeHTML(false) // tokens such as "<0x0A>" as they are spelt
		}
		err = o.enc.Encode(rec)
	} else {
		_, err = fmt.Fprintln(o.W, lineBreaks.Replace(t.Text))
	}
	if err != nil {
		return err
	}
	o.Done++
	return nil
}

// Progress says which texts were translated and written.
func (o *Output) Progress() string {
	none, one := "argument", "argument"
	if o.Stdin {
		none, one = "line of stdin", "stdin line"
	}
	switch o.Done {
	case 0:
		return fmt.Sprintf("no %s translated", none)
	case 1:
		return one + " 1 translated and written, none after it"
	}
	return fmt.Sprintf("%ss 1–%d translated and written, none after them", one, o.Done)
}
