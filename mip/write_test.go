package mip

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenModel exercises every kind of bound, names that need sanitising,
// an objective constant, an empty row and a column in no row.
func goldenModel() *Model {
	inf := math.Inf(1)
	m := NewModel("golden model")
	a := m.AddVar("a[1]", 0, 4, Continuous)      // LO 0 (default) + UP
	b := m.AddVar("2b", -inf, 3, Continuous)     // MI + UP
	c := m.AddVar("e1", -inf, inf, Continuous)   // FR
	d := m.AddVar("a_1_", -2, inf, Integer)      // LO + PL; name clashes with a[1]
	e := m.AddVar("bound", 0, 1, Binary)         // binary
	f := m.AddVar("fixed", 2.5, 2.5, Continuous) // FX
	g := m.AddVar("neg", -5, -1, Integer)        // UP before LO
	h := m.AddVar("lonely", 1, 2, Continuous)    // in no row
	i := m.AddVar("tight bin", 1, 1, Binary)     // fixed binary
	m.AddRow("cap", []int{a, b, d}, []float64{1, -2.5, 3}, LE, 10)
	m.AddRow("obj", []int{c, e}, []float64{1, 1}, GE, -1) // clashes with the objective row
	m.AddRow("link", []int{a, c, f, g, i}, []float64{1, -1, 1, 1, 1}, EQ, 0.5)
	m.AddRow("empty", nil, nil, LE, 1)
	m.SetObjective([]int{a, b, c, d, e, g, h}, []float64{1, -1, 0.5, 2, -3, 1, 0.25}, -7.5)
	return m
}

func TestWriteGolden(t *testing.T) {
	m := goldenModel()
	for _, tt := range []struct {
		file  string
		write func(*bytes.Buffer) error
	}{
		{"golden.mps", func(b *bytes.Buffer) error { return m.WriteMPS(b) }},
		{"golden.lp", func(b *bytes.Buffer) error { return m.WriteLP(b) }},
	} {
		var buf bytes.Buffer
		if err := tt.write(&buf); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", tt.file)
		if *update {
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if got := buf.String(); got != string(want) {
			t.Errorf("%s differs from the golden file:\n%s", tt.file, got)
		}
	}
}

func TestNames(t *testing.T) {
	m := goldenModel()
	cols := m.ColumnNames()
	want := []string{"a_1_", "_2b", "_e1", "a_1__3", "_bound", "fixed", "neg", "lonely", "tight_bin"}
	if strings.Join(cols, " ") != strings.Join(want, " ") {
		t.Errorf("ColumnNames %v, want %v", cols, want)
	}
	rows := m.RowNames()
	if rows[1] != "obj_1" {
		t.Errorf("row named obj became %q", rows[1])
	}
}

// FuzzNames checks that any names give distinct tokens that both file
// formats accept.
func FuzzNames(f *testing.F) {
	f.Add("x", "x")
	f.Add("a b", "a_b")
	f.Add("obj", "OBJ")
	f.Add("e1", "1e")
	f.Add("", "ε")
	f.Fuzz(func(t *testing.T, n1, n2 string) {
		m := NewModel(n1)
		m.AddVar(n1, 0, 1, Binary)
		m.AddVar(n2, 0, 1, Continuous)
		m.AddVar(n1, 0, 1, Continuous)
		m.AddRow(n2, []int{0, 1}, []float64{1, 1}, LE, 1)
		m.AddRow(n1, []int{2}, []float64{1}, GE, 0)
		seen := map[string]bool{}
		for _, s := range m.ColumnNames() {
			checkToken(t, s)
			if seen[strings.ToLower(s)] {
				t.Fatalf("duplicate column name %q", s)
			}
			seen[strings.ToLower(s)] = true
		}
		seen = map[string]bool{"obj": true}
		for _, s := range m.RowNames() {
			checkToken(t, s)
			if seen[strings.ToLower(s)] {
				t.Fatalf("duplicate row name %q", s)
			}
			seen[strings.ToLower(s)] = true
		}
		var buf bytes.Buffer
		if err := m.WriteMPS(&buf); err != nil {
			t.Fatal(err)
		}
		if err := m.WriteLP(&buf); err != nil {
			t.Fatal(err)
		}
	})
}

func checkToken(t *testing.T, s string) {
	t.Helper()
	if s == "" || len(s) > maxNameLen+40 {
		t.Fatalf("bad name length: %q", s)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.') {
			t.Fatalf("name %q contains %q", s, r)
		}
	}
	if c := s[0]; c >= '0' && c <= '9' || c == '.' || lpKeywords[strings.ToLower(s)] {
		t.Fatalf("name %q may be misread", s)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestWriteErrors(t *testing.T) {
	m := goldenModel()
	if err := m.WriteMPS(&failWriter{n: 100}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteMPS error %v", err)
	}
	if err := m.WriteLP(&failWriter{n: 100}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteLP error %v", err)
	}
	rowsOnly := NewModel("rows")
	rowsOnly.AddRow("r", nil, nil, LE, -1)
	if err := rowsOnly.WriteLP(&bytes.Buffer{}); err == nil {
		t.Errorf("WriteLP of rows without variables succeeded")
	}
}

func TestWriteLongLines(t *testing.T) {
	m := NewModel("long")
	var idx []int
	var coef []float64
	for j := range 300 {
		idx = append(idx, m.AddVar("variable_with_a_long_name_"+strings.Repeat("x", j%7), 0, 1, Integer))
		coef = append(coef, float64(j)+0.125)
	}
	m.AddRow("r", idx, coef, LE, 100)
	m.SetObjective(idx, coef, 0)
	var buf bytes.Buffer
	if err := m.WriteLP(&buf); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		if len(line) > 255 {
			t.Fatalf("LP line of %d characters", len(line))
		}
	}
}
