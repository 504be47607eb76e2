package report

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Markdown returns a GitHub-flavored Markdown table with the given header and
// rows, ending in a newline.
//
// Pipes in cells are escaped and line breaks become <br>, so any text stays
// in its cell. Rows shorter than the widest row or the header are padded with
// empty cells. A column whose non-empty cells all parse as numbers is
// right-aligned, so digits line up. Columns are padded to equal width to keep
// the source readable. With no header and no rows the result is empty.
func Markdown(header []string, rows [][]string) string {
	ncol := len(header)
	for _, r := range rows {
		ncol = max(ncol, len(r))
	}
	if ncol == 0 {
		return ""
	}
	cells := make([][]string, 0, len(rows)+1)
	for _, r := range append([][]string{header}, rows...) {
		row := make([]string, ncol)
		for i, c := range r {
			row[i] = escapeCell(c)
		}
		cells = append(cells, row)
	}
	widths := make([]int, ncol)
	numeric := make([]bool, ncol)
	for c := range ncol {
		widths[c] = 3 // room for the "---" of the delimiter row
		numeric[c] = len(rows) > 0
		nonEmpty := 0
		for r, row := range cells {
			widths[c] = max(widths[c], utf8.RuneCountInString(row[c]))
			if r == 0 || row[c] == "" {
				continue
			}
			nonEmpty++
			if _, err := strconv.ParseFloat(strings.TrimSuffix(row[c], "%"), 64); err != nil {
				numeric[c] = false
			}
		}
		if nonEmpty == 0 {
			numeric[c] = false
		}
	}
	var b strings.Builder
	writeRow := func(row []string) {
		b.WriteByte('|')
		for c, cell := range row {
			pad := strings.Repeat(" ", widths[c]-utf8.RuneCountInString(cell))
			b.WriteByte(' ')
			if numeric[c] {
				b.WriteString(pad + cell)
			} else {
				b.WriteString(cell + pad)
			}
			b.WriteString(" |")
		}
		b.WriteByte('\n')
	}
	writeRow(cells[0])
	b.WriteByte('|')
	for c := range ncol {
		if numeric[c] {
			b.WriteString(" " + strings.Repeat("-", widths[c]-1) + ": |")
		} else {
			b.WriteString(" " + strings.Repeat("-", widths[c]) + " |")
		}
	}
	b.WriteByte('\n')
	for _, row := range cells[1:] {
		writeRow(row)
	}
	return b.String()
}

// escapeCell makes s safe inside a table cell.
func escapeCell(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.ReplaceAll(s, "\n", "<br>")
	// GitHub splits cells at every pipe not preceded by a backslash, then
	// drops that backslash, then reads the rest as Markdown. Doubling the
	// backslashes before a pipe keeps them literal after that.
	var b strings.Builder
	run := 0 // backslashes just written
	// Bytes, not runes: invalid UTF-8 passes through unchanged, and
	// '\\' and '|' never occur inside a multi-byte UTF-8 sequence.
	for i := range len(s) {
		c := s[i]
		switch c {
		case '\\':
			run++
		case '|':
			b.WriteString(strings.Repeat(`\`, run))
			b.WriteByte('\\')
			run = 0
		default:
			run = 0
		}
		b.WriteByte(c)
	}
	s = b.String()
	return strings.TrimSpace(s)
}

// Mean returns the arithmetic mean of xs, or NaN for an empty slice.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Quantile returns the q-quantile of xs by linear interpolation between order
// statistics: with xs sorted ascending and h = (n-1)q, the result is
// xs[⌊h⌋] + (h-⌊h⌋)(xs[⌊h⌋+1] - xs[⌊h⌋]). This is the R-7 definition used by
// NumPy and R by default: q = 0 gives the minimum, q = 1 the maximum and
// q = 0.5 the median. xs is not modified. Quantile returns NaN if xs is empty,
// contains NaN, or q is outside [0, 1].
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 || !(q >= 0 && q <= 1) || slices.ContainsFunc(xs, math.IsNaN) {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	h := float64(len(s)-1) * q
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	frac := h - float64(lo)
	if frac == 0 {
		return s[lo]
	}
	return s[lo] + frac*(s[lo+1]-s[lo])
}
