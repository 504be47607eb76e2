package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lenspec/lenspec/internal/testmodels"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nmt"
)

// tinyTranslatorDir writes a small translator (random weights, a
// tokenizer learnt on a few phrases, max_source_len 8) to a temp dir.
func tinyTranslatorDir(t *testing.T) string {
	t.Helper()
	return tinyTranslatorReading(t, 8)
}

// tinyTranslatorReading is tinyTranslatorDir with a max_source_len of
// maxSource tokens.
func tinyTranslatorReading(t *testing.T, maxSource int) string {
	t.Helper()
	m, err := testmodels.Translator(maxSource)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := model.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTranslateLineBreaksInOutput: an output made of byte tokens <0x0A>
// and <0x0D> still takes one line of text output (a space for each line
// break); --json keeps it exactly.
func TestTranslateLineBreaksInOutput(t *testing.T) {
	src := tinyTranslatorDir(t)
	m, err := model.Load[float32](src)
	if err != nil {
		t.Fatal(err)
	}
	tok := m.Config().Tokenizer
	lf, _ := tok.ID("<0x0A>")
	cr, _ := tok.ID("<0x0D>")
	for _, p := range m.Params() {
		if p.Name == "decoder.out.bias" {
			p.W.Data[lf], p.W.Data[cr] = 1e4, 1e4-1 // every step emits "\n"…
		}
		if p.Name == "decoder.embedding.weight" {
			clear(p.W.Data) // …whatever came before
		}
	}
	dir := t.TempDir()
	if err := model.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLIStdin(t, "das haus\nklein\n", "translate", "--model", dir)
	if want := strings.Repeat(" ", 10) + "\n" + strings.Repeat(" ", 10) + "\n"; code != 0 || stdout != want {
		t.Fatalf("exit %d, %q (%s); want %q", code, stdout, stderr, want)
	}
	code, stdout, _ = runCLIStdin(t, "das haus\n", "translate", "--model", dir, "--json")
	var rec struct {
		Text   string
		Tokens []string
	}
	if err := json.Unmarshal([]byte(stdout), &rec); code != 0 || err != nil || rec.Text != strings.Repeat("\n", 10) || rec.Tokens[0] != "<0x0A>" {
		t.Fatalf("--json: exit %d, %q, %v", code, stdout, err)
	}
	if !strings.Contains(stdout, `"<0x0A>"`) {
		t.Fatalf("--json escapes tokens: %s", stdout)
	}
}

// runCLIStdin is runCLI with stdin.
func runCLIStdin(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code = run(context.Background(), a, args)
	return code, out.String(), errb.String()
}

// TestTranslateLongLines: a text over the model's max_source_len is
// reported on stderr by its stdin line or argument number, one line each;
// its place in the output is an empty line (--json: an object with its
// number, source and error); every other text's output is exactly what
// translating it alone gives; the exit status is 1 if any text failed.
func TestTranslateLongLines(t *testing.T) {
	dir := tinyTranslatorDir(t)
	d, err := model.Load[float32](dir)
	if err != nil {
		t.Fatal(err)
	}
	tokens := func(s string) int { return len(model.EncodeText(d.Config().Tokenizer, s)) }
	long := strings.TrimSpace(strings.Repeat("haus ", 6))
	longer := long + " " + long
	if tokens(long) <= 8 {
		t.Fatalf("%q is %d tokens, not over 8", long, tokens(long))
	}
	// aloneText is the library's translation of one text.
	aloneText := func(text string) string {
		t.Helper()
		ts, err := model.Translate(context.Background(), d, []string{text}, 0)
		if err != nil || ts[0].Err != nil {
			t.Fatalf("%q: %v %v", text, err, ts[0].Err)
		}
		return ts[0].Text
	}
	// alone is translate --json of one argument: the reference output.
	alone := func(text string) map[string]any {
		t.Helper()
		code, stdout, stderr := runCLI(t, "translate", "--model", dir, "--json", text)
		var rec map[string]any
		if err := json.Unmarshal([]byte(stdout), &rec); code != 0 || err != nil {
			t.Fatalf("translate %q alone: exit %d, %q, %v (%s)", text, code, stdout, err, stderr)
		}
		delete(rec, "argument")
		return rec
	}
	lines := []string{"das haus", "die katze ist klein", long, "", "der hund ist alt", longer, "klein"}
	stdin := strings.Join(lines, "\n") + "\n"
	for _, c := range []struct {
		name  string
		stdin string
		args  []string
		texts []string
		bad   []int // 1-based, as reported
		code  int
	}{
		{"stdin", stdin, nil, lines, []int{3, 6}, 1},
		{"stdin in batches of 2", stdin, []string{"--batch", "2"}, lines, []int{3, 6}, 1},
		{"stdin in batches of 1", stdin, []string{"--batch", "1"}, lines, []int{3, 6}, 1},
		{"stdin, CRLF, no final newline", "das haus\r\n" + long + "\r\nklein", nil, []string{"das haus", long, "klein"}, []int{2}, 1},
		{"stdin, all bad", long + "\n" + longer + "\n", nil, []string{long, longer}, []int{1, 2}, 1},
		{"stdin, none bad", "das haus\n\nklein\n", nil, []string{"das haus", "", "klein"}, nil, 0},
		{"arguments", "", []string{"das haus", long, "klein"}, []string{"das haus", long, "klein"}, []int{2}, 1},
		{"arguments, none bad", "", []string{"das haus", "klein"}, []string{"das haus", "klein"}, nil, 0},
	} {
		for _, js := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s json=%v", c.name, js), func(t *testing.T) {
				args := []string{"translate", "--model", dir}
				if js {
					args = append(args, "--json")
				}
				args = append(args, c.args...)
				code, stdout, stderr := runCLIStdin(t, c.stdin, args...)
				if code != c.code {
					t.Fatalf("exit %d, want %d (stderr %q)", code, c.code, stderr)
				}
				where := "stdin line"
				if c.stdin == "" {
					where = "argument"
				}
				// stderr: one line per bad text, nothing else.
				var want []string
				for _, n := range c.bad {
					want = append(want, fmt.Sprintf("lenspec: translate: %s %d: %d source tokens, over the model's max_source_len 8",
						where, n, tokens(c.texts[n-1])))
				}
				if got := nonEmptyLines(stderr); !reflect.DeepEqual(got, want) {
					t.Fatalf("stderr %q, want %q", got, want)
				}
				out := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
				if len(out) != len(c.texts) {
					t.Fatalf("%d output lines for %d texts: %q", len(out), len(c.texts), stdout)
				}
				for i, text := range c.texts {
					isBad := false
					for _, n := range c.bad {
						isBad = isBad || n == i+1
					}
					if !js {
						if isBad && out[i] != "" || !isBad && out[i] != aloneText(text) {
							t.Fatalf("line %d: %q, alone %q", i+1, out[i], aloneText(text))
						}
						continue
					}
					var rec map[string]any
					if err := json.Unmarshal([]byte(out[i]), &rec); err != nil {
						t.Fatalf("line %d: %q: %v", i+1, out[i], err)
					}
					numKey := "line"
					if c.stdin == "" {
						numKey = "argument"
					}
					if rec[numKey] != float64(i+1) {
						t.Fatalf("line %d: %s %v", i+1, numKey, rec[numKey])
					}
					delete(rec, numKey)
					if isBad {
						wantRec := map[string]any{"source": text, "error": fmt.Sprintf("%d source tokens, over the model's max_source_len 8", tokens(text))}
						if !reflect.DeepEqual(rec, wantRec) {
							t.Fatalf("line %d: %v, want %v", i+1, rec, wantRec)
						}
					} else if ref := alone(text); !sameTranslation(rec, ref) {
						t.Fatalf("line %d: %v, alone %v", i+1, rec, ref)
					}
				}
			})
		}
	}
}

// TestTranslateHugeLine: a stdin line over 16 MiB is reported and
// skipped like a line over max_source_len, without holding it.
func TestTranslateHugeLine(t *testing.T) {
	dir := tinyTranslatorDir(t)
	huge := strings.Repeat("haus ", (nmt.MaxLineBytes/5)+1)
	code, stdout, stderr := runCLIStdin(t, "das haus\n"+huge+"\nklein\n", "translate", "--model", dir)
	if code != 1 || strings.Count(stdout, "\n") != 3 || strings.Split(stdout, "\n")[1] != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	if want := []string{"lenspec: translate: stdin line 2: longer than 16 MiB, not read"}; !reflect.DeepEqual(nonEmptyLines(stderr), want) {
		t.Fatalf("stderr %q", stderr)
	}
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// sameTranslation compares two --json translation records: every field
// exactly but min_rel_margin, which float32 matrix products summed in
// another order (a batch of another size; BLAS kernels differ by batch
// size and CPU) move in its last digits.
func sameTranslation(a, b map[string]any) bool {
	ma, oka := a["min_rel_margin"].(float64)
	mb, okb := b["min_rel_margin"].(float64)
	if !oka || !okb || math.Abs(ma-mb) > 1e-4*math.Max(1e-3, math.Abs(mb)) {
		return false
	}
	a, b = maps.Clone(a), maps.Clone(b)
	delete(a, "min_rel_margin")
	delete(b, "min_rel_margin")
	return reflect.DeepEqual(a, b)
}

// pipedCLI is lenspec run in process on pipes: its standard input is
// written, and its standard output read, while it runs.
type pipedCLI struct {
	in   *os.File // lenspec's stdin, the writing end
	outF *os.File // lenspec's stdout, the reading end
	out  *bufio.Reader
	errb bytes.Buffer // read only after done
	code chan int
}

func startPiped(t *testing.T, ctx context.Context, args ...string) *pipedCLI {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &pipedCLI{in: inW, outF: outR, out: bufio.NewReader(outR), code: make(chan int, 1)}
	a := &app{stdin: inR, stdout: outW, stderr: &p.errb, getenv: func(string) string { return "" }}
	go func() { p.code <- run(ctx, a, args) }()
	t.Cleanup(func() {
		inW.Close() // ends a run still reading
		outR.Close()
		inR.Close()
	})
	return p
}

// answer writes line to the command's stdin and returns the line it
// prints, failing if none comes within d while stdin stays open.
func (p *pipedCLI) answer(t *testing.T, line string, d time.Duration) string {
	t.Helper()
	if _, err := p.in.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
	p.outF.SetReadDeadline(time.Now().Add(d))
	got, err := p.out.ReadString('\n')
	if err != nil {
		t.Fatalf("no answer to %q within %v with stdin open: %v", line, d, err)
	}
	return strings.TrimSuffix(got, "\n")
}

// exit waits at most d for the command's exit status.
func (p *pipedCLI) exit(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case code := <-p.code:
		return code
	case <-time.After(d):
		t.Fatalf("still running after %v", d)
		return 0
	}
}

// TestTranslateStreams: a line written to translate's stdin gets its
// translation (the library's, for that line alone) before the next line
// is written, stdin staying open; blank lines get empty lines at once.
func TestTranslateStreams(t *testing.T) {
	dir := tinyTranslatorDir(t)
	d, err := model.Load[float32](dir)
	if err != nil {
		t.Fatal(err)
	}
	p := startPiped(t, context.Background(), "translate", "--model", dir)
	for _, line := range []string{"das haus", "die katze ist alt", "  ", "klein"} {
		want, err := model.Translate(context.Background(), d, []string{line}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.answer(t, line, time.Minute); got != want[0].Text {
			t.Fatalf("%q: %q, want %q", line, got, want[0].Text)
		}
	}
	p.in.Close()
	if code := p.exit(t, time.Minute); code != 0 {
		t.Fatalf("exit %d: %s", code, p.errb.String())
	}
}

// TestTranslateInterrupted: a signal while translate waits for input
// stops it at once, stdin still open, with 130 or 143, and the message
// says what was translated (not that work was saved).
func TestTranslateInterrupted(t *testing.T) {
	dir := tinyTranslatorDir(t)
	for _, c := range []struct {
		sig   syscall.Signal
		lines []string
		code  int
		want  string
	}{
		{syscall.SIGINT, []string{"das haus", "klein"}, 130, "lenspec: interrupted by interrupt; stdin lines 1–2 translated and written, none after them"},
		{syscall.SIGTERM, []string{"das haus"}, 143, "lenspec: interrupted by terminated; stdin line 1 translated and written, none after it"},
		{syscall.SIGINT, nil, 130, "lenspec: interrupted by interrupt; no line of stdin translated"},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		p := startPiped(t, ctx, "translate", "--model", dir)
		for _, l := range c.lines {
			p.answer(t, l, time.Minute)
		}
		cancel(signalError{c.sig})
		if code := p.exit(t, time.Minute); code != c.code || strings.TrimSpace(p.errb.String()) != c.want {
			t.Fatalf("%v after %d lines: exit %d, stderr %q; want %d, %q", c.sig, len(c.lines), code, p.errb.String(), c.code, c.want)
		}
	}
}

// TestTranslateSignal: the real signal, sent to a translate process whose
// stdin stays open after its first line, ends it with 130 at once.
func TestTranslateSignal(t *testing.T) {
	dir := tinyTranslatorDir(t)
	cmd := lenspecCmd(t, "translate", "--model", dir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in.Write([]byte("das haus\n"))
	got := make(chan error, 1)
	go func() { _, err := bufio.NewReader(out).ReadString('\n'); got <- err }()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("no answer to the first line with stdin open")
	}
	cmd.Process.Signal(syscall.SIGINT)
	if code := waitExit(t, cmd, time.Minute); code != 130 || !strings.Contains(errb.String(), "stdin line 1 translated and written") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// TestTranslateBlankAndInvalidUTF8: blank lines give empty lines; a line
// that is not valid UTF-8 is translated with a warning naming it (and,
// with --json, "invalid_utf8" in its object), and the exit status stays 0.
func TestTranslateBlankAndInvalidUTF8(t *testing.T) {
	dir := tinyTranslatorDir(t)
	code, stdout, stderr := runCLIStdin(t, "das haus\n \n\t\nklein\xff\n", "translate", "--model", dir)
	lines := strings.Split(stdout, "\n")
	if code != 0 || len(lines) != 5 || lines[0] == "" || lines[1] != "" || lines[2] != "" {
		t.Fatalf("exit %d, output %q (%s)", code, stdout, stderr)
	}
	if want := "lenspec: warning: translate: stdin line 4 is not valid UTF-8"; !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("stderr %q, want one line %q…", stderr, want)
	}
	code, stdout, stderr = runCLIStdin(t, " \nklein\xff\n", "translate", "--model", dir, "--json")
	recs := jsonLines(t, stdout)
	if code != 0 || len(recs) != 2 || recs[0]["length"] != 0.0 || recs[0]["invalid_utf8"] != nil || recs[1]["invalid_utf8"] != true || !strings.Contains(stderr, "stdin line 2") {
		t.Fatalf("exit %d, records %v, stderr %q", code, recs, stderr)
	}
}

// jsonLines decodes the JSON object on each non-empty line of out.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, l := range nonEmptyLines(out) {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestTranslateControlCharacters: a line of NUL bytes gives an empty
// line without running the model, as a blank line does, not a sentence
// the model invents; a line with control characters among its words is
// translated with a space for each; both are warned about on stderr by
// their line number (with --json, "control_chars": true), and the exit
// status stays 0.
func TestTranslateControlCharacters(t *testing.T) {
	dir := tinyTranslatorDir(t)
	in := "\x00\x00\x00\ndas\x00haus\ndas haus\n"
	code, stdout, stderr := runCLIStdin(t, in, "translate", "--model", dir)
	lines := strings.Split(stdout, "\n")
	if code != 0 || len(lines) != 4 || lines[0] != "" || lines[2] == "" || lines[1] != lines[2] {
		t.Fatalf("exit %d, output %q (%s)", code, stdout, stderr)
	}
	warn := "lenspec: warning: translate: stdin line %d holds control characters (NUL, ESC, DEL…), which are not text; each was read as a space\n"
	if want := fmt.Sprintf(warn, 1) + fmt.Sprintf(warn, 2); stderr != want {
		t.Fatalf("stderr %q, want %q", stderr, want)
	}
	code, stdout, stderr = runCLIStdin(t, in, "translate", "--model", dir, "--json")
	recs := jsonLines(t, stdout)
	if code != 0 || len(recs) != 3 || recs[0]["length"] != 0.0 || len(recs[0]["source_ids"].([]any)) != 0 || recs[0]["source"] != "\x00\x00\x00" ||
		recs[0]["control_chars"] != true || recs[1]["control_chars"] != true || recs[2]["control_chars"] != nil || !reflect.DeepEqual(recs[1]["ids"], recs[2]["ids"]) {
		t.Fatalf("exit %d, records %v, stderr %q", code, recs, stderr)
	}
}

// germanLines are n made-up German sentences of about 40 source tokens
// for the shipped Multi30k translator, drawn from seed.
func germanLines(n int, seed uint64) []string {
	subj := []string{"Ein Mann", "Eine Frau", "Zwei Kinder", "Ein Hund", "Eine Gruppe von Menschen", "Ein kleines Mädchen", "Ein Junge", "Drei Männer", "Ein Arbeiter", "Eine ältere Frau"}
	verb := []string{"spielt", "läuft", "sitzt", "steht", "fährt", "arbeitet", "springt", "wartet", "isst", "schaut"}
	rest := []string{"auf der Straße", "im Park", "vor einem Gebäude", "am Strand", "mit einem Ball", "in einem Restaurant", "neben einem Auto", "auf einer Bank", "im Schnee", "an einem Tisch"}
	rng := rand.New(rand.NewPCG(seed, 1))
	lines := make([]string, n)
	for i := range lines {
		var clauses []string
		for range 4 {
			clauses = append(clauses, subj[rng.IntN(len(subj))]+" "+verb[rng.IntN(len(verb))]+" "+rest[rng.IntN(len(rest))])
		}
		lines[i] = strings.Join(clauses, " und ") + " ."
	}
	return lines
}

// TestTranslateStopsMidBatch: a signal while translate decodes a large
// batch (the default --batch: hundreds of lines together) stops it within
// a decoding step (or an encoding of a chunk of lines), not at the end of
// the batch or of a chunk: within twice the time 16 of the lines take
// alone, measured just before. The lines finished before the first that
// was not are written, each its translation alone; stderr says which;
// the exit status is 130. The signal comes after 2, 4, then 8 times that
// time, until one run has written a line (the short first line is
// finished a few steps into the batch): a loaded machine may have been
// slower than its measure.
func TestTranslateStopsMidBatch(t *testing.T) {
	const dir = "../../models/nmt-m30k-de-en"
	d, err := model.Load[float32](dir)
	if err != nil {
		t.Fatal(err)
	}
	lines := append([]string{"Ein Hund läuft ."}, germanLines(500, 3)...)
	var problem string
	for wait := 2; wait <= 8; wait *= 2 {
		start := time.Now()
		if _, err := model.Translate(context.Background(), d, lines[1:17], 0); err != nil {
			t.Fatal(err)
		}
		baseline := time.Since(start)

		ctx, cancel := context.WithCancelCause(context.Background())
		p := startPiped(t, ctx, "translate", "--model", dir)
		out := make(chan string, 1)
		go func() { b, _ := io.ReadAll(p.out); out <- string(b) }()
		// The write returns once translate reads its input: the model
		// is loaded and the batch about to be decoded.
		if _, err := p.in.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(wait) * baseline)
		cancel(signalError{syscall.SIGINT})
		start = time.Now()
		code := p.exit(t, 10*time.Minute)
		stopped := time.Since(start)
		var written []string // output line i is line i's translation, empty or not
		if o := <-out; o != "" {
			written = strings.Split(strings.TrimSuffix(o, "\n"), "\n")
		}
		k := len(written)
		t.Logf("signal after %d×%v (16 lines alone): stopped %v later, %d lines written", wait, baseline, stopped, k)
		switch {
		case code != 130:
			t.Fatalf("exit %d, want 130; stderr %q", code, p.errb.String())
		case k == len(lines):
			t.Fatalf("every line written before the signal; stderr %q", p.errb.String())
		case stopped > 2*baseline || k == 0:
			problem = fmt.Sprintf("stopped %v after the signal (want within 2×%v), %d lines written; stderr %q", stopped, baseline, k, p.errb.String())
			continue
		}
		want, err := model.Translate(context.Background(), d, lines[:k], 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			if written[i] != w.Text {
				t.Errorf("line %d: %q, alone %q", i+1, written[i], w.Text)
			}
		}
		msg := fmt.Sprintf("lenspec: interrupted by interrupt; stdin lines 1–%d translated and written, none after them", k)
		if k == 1 {
			msg = "lenspec: interrupted by interrupt; stdin line 1 translated and written, none after it"
		}
		if got := strings.TrimSpace(p.errb.String()); got != msg {
			t.Errorf("stderr %q, want %q", got, msg)
		}
		return
	}
	t.Fatal(problem)
}
