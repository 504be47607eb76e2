package mip

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// objName is the name of the objective row in the files written; row
// names are made to differ from it.
const objName = "obj"

// maxNameLen bounds written names well below the 255 characters that CPLEX
// LP readers accept, leaving room for uniqueness suffixes.
const maxNameLen = 200

// lpKeywords are words that LP-format readers may take for section
// headers or bound keywords when they appear as names.
var lpKeywords = map[string]bool{
	"min": true, "max": true, "minimize": true, "maximize": true, "minimise": true, "maximise": true,
	"minimum": true, "maximum": true, "subject": true, "to": true, "st": true, "such": true, "that": true,
	"bound": true, "bounds": true, "free": true, "inf": true, "infinity": true, "general": true,
	"generals": true, "gen": true, "integer": true, "integers": true, "int": true, "binary": true,
	"binaries": true, "bin": true, "end": true, "semi": true, "semis": true, "semi-continuous": true,
	"sos": true,
}

// sanitizeName maps name to a token that both free MPS and CPLEX LP
// readers accept: characters other than ASCII letters, digits, '_' and
// '.' become '_'; a leading digit or '.', a leading 'e'/'E' that could
// start an exponent, and reserved words get a '_' prefix.
func sanitizeName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if b.Len() >= maxNameLen {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" {
		return "_"
	}
	c := s[0]
	exp := (c == 'e' || c == 'E') && len(s) > 1 && (s[1] >= '0' && s[1] <= '9' || s[1] == 'e' || s[1] == 'E')
	if c >= '0' && c <= '9' || c == '.' || exp || lpKeywords[strings.ToLower(s)] {
		s = "_" + s
	}
	return s
}

// uniqueNames sanitises names and makes them distinct from one another and
// from the reserved ones, appending "_<index>" (and further counters if
// needed) to later duplicates.
func uniqueNames(names []string, reserved ...string) []string {
	seen := make(map[string]bool, len(names)+len(reserved))
	for _, r := range reserved {
		seen[strings.ToLower(r)] = true
	}
	out := make([]string, len(names))
	for i, n := range names {
		s := sanitizeName(n)
		base := s
		for k := 0; seen[strings.ToLower(s)]; k++ {
			s = base + "_" + strconv.Itoa(i)
			if k > 0 {
				s += "_" + strconv.Itoa(k)
			}
		}
		seen[strings.ToLower(s)] = true
		out[i] = s
	}
	return out
}

// ColumnNames returns the variable names exactly as WriteMPS and WriteLP
// write them: sanitised and unique (case-insensitively). Solution files
// produced from those files name variables this way.
func (m *Model) ColumnNames() []string {
	names := make([]string, len(m.vars))
	for j, v := range m.vars {
		names[j] = v.Name
	}
	return uniqueNames(names)
}

// RowNames returns the constraint names as WriteMPS and WriteLP write them;
// they also differ from the objective row's name, "obj".
func (m *Model) RowNames() []string {
	names := make([]string, len(m.rows))
	for i, r := range m.rows {
		names[i] = r.Name
	}
	return uniqueNames(names, objName)
}

func fmtNum(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// errWriter remembers the first write error so that the writers can print
// freely and check once.
type errWriter struct {
	w   *bufio.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

func (e *errWriter) flush() error {
	if e.err == nil {
		e.err = e.w.Flush()
	}
	return e.err
}

// WriteMPS writes m in free MPS format. The objective row is "obj" and is
// minimised; its constant is written as the negated right-hand side of the
// objective row (the usual convention, which CBC follows). Integer and
// binary columns are enclosed in MARKER INTORG/INTEND lines and always get
// explicit bounds, since some readers default integer columns to binary.
// Names are those of ColumnNames and RowNames. The NAME line carries the
// word FREE, which CBC's reader needs to switch to free format.
func (m *Model) WriteMPS(w io.Writer) error {
	if m.err != nil {
		return m.err
	}
	cols, rows := m.ColumnNames(), m.RowNames()
	e := &errWriter{w: bufio.NewWriter(w)}
	name := sanitizeName(m.name)
	if m.name == "" {
		name = "model"
	}
	e.printf("NAME %s FREE\nROWS\n N %s\n", name, objName)
	for i, r := range m.rows {
		e.printf(" %s %s\n", [...]string{LE: "L", GE: "G", EQ: "E"}[r.Sense], rows[i])
	}
	e.printf("COLUMNS\n")
	start, index, value := m.CSC()
	inInt := false
	for j, v := range m.vars {
		if isInt := v.Type != Continuous; isInt != inInt {
			if isInt {
				e.printf(" MARKER 'MARKER' 'INTORG'\n")
			} else {
				e.printf(" MARKER 'MARKER' 'INTEND'\n")
			}
			inInt = isInt
		}
		// A column must appear at least once to exist.
		if m.obj[j] != 0 || start[j] == start[j+1] {
			e.printf(" %s %s %s\n", cols[j], objName, fmtNum(m.obj[j]))
		}
		for k := start[j]; k < start[j+1]; k++ {
			e.printf(" %s %s %s\n", cols[j], rows[index[k]], fmtNum(value[k]))
		}
	}
	if inInt {
		e.printf(" MARKER 'MARKER' 'INTEND'\n")
	}
	e.printf("RHS\n")
	if m.objConst != 0 {
		e.printf(" RHS %s %s\n", objName, fmtNum(-m.objConst))
	}
	for i, r := range m.rows {
		if r.Rhs != 0 {
			e.printf(" RHS %s %s\n", rows[i], fmtNum(r.Rhs))
		}
	}
	e.printf("BOUNDS\n")
	for j, v := range m.vars {
		writeMPSBounds(e, cols[j], v)
	}
	e.printf("ENDATA\n")
	if err := e.flush(); err != nil {
		return fmt.Errorf("mip: write MPS of %q: %w", m.name, err)
	}
	return nil
}

// writeMPSBounds writes the bound lines of one column. UP comes before LO
// or MI because readers turn a negative UP on a column whose lower bound
// is still the default 0 into lower bound -Inf; a later LO restores the
// intended lower bound.
func writeMPSBounds(e *errWriter, name string, v VarInfo) {
	isInt := v.Type != Continuous
	lbInf, ubInf := math.IsInf(v.Lb, -1), math.IsInf(v.Ub, 1)
	switch {
	case v.Lb == v.Ub:
		e.printf(" FX BND %s %s\n", name, fmtNum(v.Lb))
	case lbInf && ubInf:
		e.printf(" FR BND %s\n", name)
	default:
		if !ubInf {
			e.printf(" UP BND %s %s\n", name, fmtNum(v.Ub))
		}
		switch {
		case lbInf:
			e.printf(" MI BND %s\n", name)
		case v.Lb != 0 || isInt || v.Ub < 0:
			e.printf(" LO BND %s %s\n", name, fmtNum(v.Lb))
		}
		if isInt && ubInf {
			e.printf(" PL BND %s\n", name)
		}
	}
}

// lpTerms writes a linear expression, breaking lines so that none gets
// long (CPLEX readers limit lines to 255 characters).
func lpTerms(e *errWriter, idx []int, coef []float64, cols []string, lineLen int) int {
	for k, j := range idx {
		c := coef[k]
		sign := "+"
		if c < 0 || (c == 0 && math.Signbit(c)) {
			sign, c = "-", -c
		}
		term := fmt.Sprintf(" %s %s %s", sign, fmtNum(c), cols[j])
		if lineLen+len(term) > 200 {
			e.printf("\n ")
			lineLen = 1
		}
		e.printf("%s", term)
		lineLen += len(term)
	}
	return lineLen
}

// WriteLP writes m in CPLEX LP format. The objective is minimised; a
// nonzero constant is written as a constant term of the objective, which
// CPLEX-format readers accept but CBC 2.10's LP reader silently drops
// (use WriteMPS for CBC). Binary variables with bounds [0, 1] go in the
// Binaries section; other integer variables, and binaries with tightened
// bounds, go in Generals with explicit bounds. Names are those of
// ColumnNames and RowNames.
func (m *Model) WriteLP(w io.Writer) error {
	if m.err != nil {
		return m.err
	}
	if len(m.vars) == 0 && len(m.rows) > 0 {
		return fmt.Errorf("mip: write LP of %q: %w", m.name, errors.New("rows without variables cannot be written in LP format"))
	}
	cols, rows := m.ColumnNames(), m.RowNames()
	e := &errWriter{w: bufio.NewWriter(w)}
	e.printf("\\ Problem name: %s\n", sanitizeName(m.name))
	e.printf("Minimize\n %s:", objName)
	var idx []int
	var coef []float64
	for j, c := range m.obj {
		if c != 0 {
			idx = append(idx, j)
			coef = append(coef, c)
		}
	}
	if len(idx) == 0 && len(m.vars) > 0 {
		idx, coef = []int{0}, []float64{0}
	}
	lpTerms(e, idx, coef, cols, len(objName)+2)
	if m.objConst != 0 {
		if m.objConst < 0 {
			e.printf(" - %s", fmtNum(-m.objConst))
		} else {
			e.printf(" + %s", fmtNum(m.objConst))
		}
	}
	e.printf("\nSubject To\n")
	for i, r := range m.rows {
		e.printf(" %s:", rows[i])
		idx, coef := r.Idx, r.Coef
		if len(idx) == 0 {
			idx, coef = []int{0}, []float64{0}
		}
		lpTerms(e, idx, coef, cols, len(rows[i])+2)
		e.printf(" %s %s\n", r.Sense, fmtNum(r.Rhs))
	}
	e.printf("Bounds\n")
	var generals, binaries []int
	for j, v := range m.vars {
		isBin := v.Type == Binary && v.Lb == 0 && v.Ub == 1
		switch {
		case isBin:
			binaries = append(binaries, j)
			continue
		case v.Type != Continuous:
			generals = append(generals, j)
		}
		lbInf, ubInf := math.IsInf(v.Lb, -1), math.IsInf(v.Ub, 1)
		switch {
		case v.Lb == v.Ub:
			e.printf(" %s = %s\n", cols[j], fmtNum(v.Lb))
		case lbInf && ubInf:
			e.printf(" %s free\n", cols[j])
		case lbInf:
			e.printf(" -inf <= %s <= %s\n", cols[j], fmtNum(v.Ub))
		case ubInf:
			if v.Lb != 0 {
				e.printf(" %s >= %s\n", cols[j], fmtNum(v.Lb))
			}
		default:
			e.printf(" %s <= %s <= %s\n", fmtNum(v.Lb), cols[j], fmtNum(v.Ub))
		}
	}
	for _, sec := range []struct {
		title string
		js    []int
	}{{"Generals", generals}, {"Binaries", binaries}} {
		if len(sec.js) == 0 {
			continue
		}
		e.printf("%s\n", sec.title)
		n := 0
		for _, j := range sec.js {
			if n > 0 && n+len(cols[j]) > 200 {
				e.printf("\n")
				n = 0
			}
			e.printf(" %s", cols[j])
			n += len(cols[j]) + 1
		}
		e.printf("\n")
	}
	e.printf("End\n")
	if err := e.flush(); err != nil {
		return fmt.Errorf("mip: write LP of %q: %w", m.name, err)
	}
	return nil
}
