package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb}
	code = run(context.Background(), a, args)
	return code, out.String(), errb.String()
}

// smallModel writes a randomly initialised captioner with the default
// architecture (so it reads 28x112 canvases) to a temp dir.
func smallModel(t *testing.T) string {
	t.Helper()
	m, err := model.NewCaptioner[float32](model.DefaultCaptionerConfig(), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := model.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestExitCodesAndErrors(t *testing.T) {
	dir := smallModel(t)
	badPNG := filepath.Join(t.TempDir(), "bad.png")
	if err := os.WriteFile(badPNG, []byte("not a png"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
		{"unknown flag", []string{"decode", "--bogus"}, 2, "unknown flag"},
		{"bad flag value", []string{"decode", "--max-steps", "many"}, 2, "invalid argument"},
		{"missing model flag", []string{"decode", "--image", badPNG}, 2, "--model is required"},
		{"both inputs", []string{"decode", "--model", dir, "--image", badPNG, "--index", "1"}, 2, "exactly one of --image, --input or --index"},
		{"positional args", []string{"eval", "extra"}, 2, "takes no arguments"},
		{"missing model dir", []string{"decode", "--model", "/nonexistent/model", "--image", badPNG}, 1, "/nonexistent/model/config.json"},
		{"bad png", []string{"decode", "--model", dir, "--image", badPNG}, 1, "bad.png"},
		{"train without out", []string{"train", "captioner"}, 2, "--out is required"},
		{"bad split", []string{"data", "multimnist", "--out", t.TempDir(), "--count", "0"}, 2, "must be positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, c.code, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Fatalf("stderr %q lacks %q", stderr, c.want)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
				t.Fatalf("error is not one line: %q", stderr)
			}
		})
	}
}

func TestDecodePNG(t *testing.T) {
	dir := smallModel(t)
	png := filepath.Join(t.TempDir(), "x.png")
	pix := make([]uint8, multimnist.Height*multimnist.Width)
	for i := range pix {
		pix[i] = uint8(i % 251)
	}
	if err := multimnist.WritePNG(png, pix, multimnist.Height, multimnist.Width, 1); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "decode", "--model", dir, "--image", png, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rec decodeRecord
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
		t.Fatalf("output %q: %v", stdout, err)
	}
	// The same image through the library must give the same tokens.
	m, err := model.Load[float64](dir)
	if err != nil {
		t.Fatal(err)
	}
	x, err := multimnist.ReadPNG(png)
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Decode(context.Background(), x, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Stopped != res[0].Stopped || len(rec.Tokens) != len(res[0].Tokens) {
		t.Fatalf("CLI %+v, library %+v", rec, res[0])
	}
	for i := range rec.Tokens {
		if rec.Tokens[i] != res[0].Tokens[i] {
			t.Fatalf("CLI %v, library %v", rec.Tokens, res[0].Tokens)
		}
	}
	if rec.Stopped != (rec.Length != nil) {
		t.Fatalf("length %v with stopped=%v", rec.Length, rec.Stopped)
	}
}
