package report

import (
	"math"
	"strings"
	"testing"
)

func TestMarkdown(t *testing.T) {
	tests := []struct {
		name   string
		header []string
		rows   [][]string
		want   string
	}{
		{"empty", nil, nil, ""},
		{
			"numeric columns right-aligned",
			[]string{"method", "delta", "mean length"},
			[][]string{{"pgd", "0.1", "12.5"}, {"random", "0.05", "3"}},
			"" +
				"| method | delta | mean length |\n" +
				"| ------ | ----: | ----------: |\n" +
				"| pgd    |   0.1 |        12.5 |\n" +
				"| random |  0.05 |           3 |\n",
		},
		{
			"pipes and newlines escaped",
			[]string{"a|b", "c"},
			[][]string{{"x|y", "line1\nline2"}, {`back\|slash`, `\\|`}},
			"" +
				`| a\|b          | c              |` + "\n" +
				`| ------------- | -------------- |` + "\n" +
				`| x\|y          | line1<br>line2 |` + "\n" +
				`| back\\\|slash | \\\\\|         |` + "\n",
		},
		{
			"short rows padded, percentages numeric, empty cells ignored",
			[]string{"k"},
			[][]string{{"a", "50%"}, {"b"}, {"c", "7.5%"}},
			"" +
				"| k   |      |\n" +
				"| --- | ---: |\n" +
				"| a   |  50% |\n" +
				"| b   |      |\n" +
				"| c   | 7.5% |\n",
		},
		{
			"header only",
			[]string{"x", "y"},
			nil,
			"| x   | y   |\n| --- | --- |\n",
		},
		{
			"unicode width",
			[]string{"δ"},
			[][]string{{"δ=0.1 ≤ cap"}},
			"| δ           |\n| ----------- |\n| δ=0.1 ≤ cap |\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Markdown(tt.header, tt.rows); got != tt.want {
				t.Errorf("Markdown =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// splitRow splits a table line into its cells as GitHub does: a pipe is a
// cell border unless an odd number of backslashes precede it (backslashes
// pair up as escapes of one another).
func splitRow(line string) []string {
	var cells []string
	start, run := 0, 0
	for i := range len(line) {
		switch line[i] {
		case '\\':
			run++
			continue
		case '|':
			if run%2 == 0 {
				cells = append(cells, line[start:i])
				start = i + 1
			}
		}
		run = 0
	}
	return append(cells, line[start:])
}

// unescapeCell undoes what GitHub does to a cell's text: drop the backslash
// of each escaped pipe, then read the backslash escapes of backslashes and
// pipes as Markdown does.
func unescapeCell(s string) string {
	s = strings.ReplaceAll(s, `\|`, "|")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '\\' || s[i+1] == '|') {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// onlyBackslashesBeforePipes reports whether every run of backslashes in s
// is followed by a pipe; other backslashes are Markdown escapes that the
// table leaves to the reader.
func onlyBackslashesBeforePipes(s string) bool {
	for i := range len(s) {
		if s[i] == '\\' && (i+1 == len(s) || s[i+1] != '\\' && s[i+1] != '|') {
			return false
		}
	}
	return true
}

func FuzzMarkdownCell(f *testing.F) {
	for _, s := range []string{"", "a|b", `\|`, `\\|`, "x\ny", "|||", `a\`, " | ", `\\\|x|`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cell string) {
		out := Markdown([]string{"h1", "h2"}, [][]string{{cell, "z"}})
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 3 {
			t.Fatalf("table has %d lines, want 3:\n%s", len(lines), out)
		}
		for _, l := range lines {
			// Leading and trailing borders give empty outer pieces.
			if cells := splitRow(l); len(cells) != 4 || cells[0] != "" || cells[3] != "" {
				t.Fatalf("line %q splits into %q, want 2 cells", l, cells)
			}
		}
		if strings.ContainsAny(cell, "\r\n") || !onlyBackslashesBeforePipes(cell) {
			return
		}
		got := unescapeCell(strings.TrimSpace(splitRow(lines[2])[1]))
		if want := strings.TrimSpace(cell); got != want {
			t.Fatalf("cell %q reads back as %q", want, got)
		}
	})
}

func TestQuantile(t *testing.T) {
	xs := []float64{7, 1, 3, 5} // sorted: 1 3 5 7
	tests := []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{xs, 0, 1},
		{xs, 1, 7},
		{xs, 0.5, 4},     // h = 1.5: 3 + 0.5*(5-3)
		{xs, 0.25, 2.5},  // h = 0.75: 1 + 0.75*(3-1)
		{xs, 1.0 / 3, 3}, // h = 1 exactly
		{xs, 0.9, 6.4},   // h = 2.7: 5 + 0.7*2
		{[]float64{4}, 0.3, 4},
		{[]float64{2, 2, 2}, 0.5, 2},
		{[]float64{-1, 1}, 0.5, 0},
		{nil, 0.5, math.NaN()},
		{xs, -0.1, math.NaN()},
		{xs, 1.1, math.NaN()},
		{xs, math.NaN(), math.NaN()},
		{[]float64{1, math.NaN()}, 0.5, math.NaN()},
		{[]float64{1, math.Inf(1)}, 1, math.Inf(1)},
	}
	for _, tt := range tests {
		got := Quantile(tt.xs, tt.q)
		if !(got == tt.want || math.IsNaN(got) && math.IsNaN(tt.want) || math.Abs(got-tt.want) < 1e-12) {
			t.Errorf("Quantile(%v, %v) = %v, want %v", tt.xs, tt.q, got, tt.want)
		}
	}
	if xs[0] != 7 || xs[3] != 5 {
		t.Errorf("Quantile reordered its input: %v", xs)
	}
}

func TestMean(t *testing.T) {
	tests := []struct {
		xs   []float64
		want float64
	}{
		{[]float64{1, 2, 3, 4}, 2.5},
		{[]float64{-3}, -3},
		{nil, math.NaN()},
	}
	for _, tt := range tests {
		got := Mean(tt.xs)
		if !(got == tt.want || math.IsNaN(got) && math.IsNaN(tt.want)) {
			t.Errorf("Mean(%v) = %v, want %v", tt.xs, got, tt.want)
		}
	}
}
