package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// checkPNG decodes the PNG at path, checks its size in pixels and returns it.
func checkPNG(t *testing.T, path string, w, h vg.Length) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	wantW := int(math.Round(float64(w/vg.Inch) * DPI))
	wantH := int(math.Round(float64(h/vg.Inch) * DPI))
	if b := img.Bounds(); b.Dx() != wantW || b.Dy() != wantH {
		t.Errorf("%s is %dx%d pixels, want %dx%d", path, b.Dx(), b.Dy(), wantW, wantH)
	}
	return img
}

// svgText checks that the SVG at path is well-formed XML with an <svg> root
// and returns its text nodes in document order.
func svgText(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	var texts []string
	var root string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(tok)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element %q, want svg", path, root)
	}
	return texts
}

// hasColor reports whether img has a pixel of exactly color c, as the
// interior of a filled bar has.
func hasColor(img image.Image, c color.Color) bool {
	r0, g0, b0, _ := c.RGBA()
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if r>>8 == r0>>8 && g>>8 == g0>>8 && b>>8 == b0>>8 {
				return true
			}
		}
	}
	return false
}

// fakeLengths is a small attack run: the reference at delta 0, then random
// noise and PGD at three bounds, PGD getting longer and failing to stop.
func fakeLengths() []LengthPoint {
	var pts []LengthPoint
	for i := range 12 {
		pts = append(pts, LengthPoint{Method: "original", Length: 1 + i%4, Stopped: true})
	}
	// Deliberately out of order.
	for _, d := range []float64{0.1, 0.05, 0.2} {
		for i := range 12 {
			pts = append(pts, LengthPoint{Method: "random", Delta: d, Length: 1 + i%4, Stopped: true})
			l := 1 + i%4 + int(d*40)
			pts = append(pts, LengthPoint{Method: "pgd", Delta: d, Length: l, Stopped: l < 8})
		}
	}
	return pts
}

func TestLengthHistograms(t *testing.T) {
	pts := []LengthPoint{
		{"pgd", 0.2, 5, true},
		{"original", 0, 2, true},
		{"original", 0, 3, true},
		{"pgd", 0.1, 3, true},
		{"pgd", 0.1, 99, false},
		{"zeta", 0.1, 2, true},
		{"alpha", 0.2, 2, true},
		{"random", 0.2, 2, true},
		{"PGD", 0.1, 4, true}, // a different method from "pgd", still ordered with it
	}
	h, err := lengthHistograms(pts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.deltas, []float64{0.1, 0.2}) {
		t.Errorf("deltas = %v, want [0.1 0.2]", h.deltas)
	}
	var names []string
	for _, m := range h.methods {
		names = append(names, m.label)
	}
	if want := []string{"original", "random", "PGD", "pgd", "alpha", "zeta"}; !slices.Equal(names, want) {
		t.Errorf("methods = %v, want %v", names, want)
	}
	if h.methods[3].fill != okVermilion || h.methods[0].fill != gray || h.methods[4].fill == h.methods[5].fill {
		t.Errorf("method colors = %v", h.methods)
	}
	if !slices.Equal(h.lengths, []int{2, 3, 4, 5}) || !h.unstopped {
		t.Errorf("lengths = %v unstopped %v, want [2 3 4 5] true", h.lengths, h.unstopped)
	}
	// counts[panel][method] over lengths 2, 3, 4, 5 and unstopped.
	want := [][][]int{
		{ // delta 0.1
			{1, 1, 0, 0, 0}, // original, the reference, in every panel
			{0, 0, 0, 0, 0}, // random
			{0, 0, 1, 0, 0}, // PGD
			{0, 1, 0, 0, 1}, // pgd
			{0, 0, 0, 0, 0}, // alpha
			{1, 0, 0, 0, 0}, // zeta
		},
		{ // delta 0.2
			{1, 1, 0, 0, 0},
			{1, 0, 0, 0, 0},
			{0, 0, 0, 0, 0},
			{0, 0, 0, 1, 0},
			{1, 0, 0, 0, 0},
			{0, 0, 0, 0, 0},
		},
	}
	for d := range want {
		for m := range want[d] {
			if !slices.Equal(h.counts[d][m], want[d][m]) {
				t.Errorf("counts[%v][%s] = %v, want %v", h.deltas[d], names[m], h.counts[d][m], want[d][m])
			}
		}
	}
	if h.maxCount != 1 {
		t.Errorf("maxCount = %d, want 1", h.maxCount)
	}

	// Only the reference: a single panel at delta 0, no unstopped bar.
	h, err = lengthHistograms([]LengthPoint{{"original", 0, 3, true}, {"original", 0, 3, true}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.deltas, []float64{0}) || h.unstopped || h.maxCount != 2 {
		t.Errorf("reference only: deltas %v unstopped %v max %d", h.deltas, h.unstopped, h.maxCount)
	}
	// Nothing stopped: only the unstopped category.
	h, err = lengthHistograms([]LengthPoint{{"pgd", 0.1, 0, false}})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.lengths) != 0 || !h.unstopped || h.counts[0][0][0] != 1 {
		t.Errorf("none stopped: lengths %v counts %v", h.lengths, h.counts)
	}
}

func manyDeltas(n int) []LengthPoint {
	pts := make([]LengthPoint, n)
	for i := range pts {
		pts[i] = LengthPoint{"pgd", float64(i + 1), 1, true}
	}
	return pts
}

func manyMethods(n int) []LengthPoint {
	pts := make([]LengthPoint, n)
	for i := range pts {
		pts[i] = LengthPoint{fmt.Sprint("m", i), 0.1, 1, true}
	}
	return pts
}

func TestLengthHistogramsErrors(t *testing.T) {
	tests := []struct {
		name   string
		points []LengthPoint
		want   string
	}{
		{"empty", nil, "no points"},
		{"nan delta", []LengthPoint{{"pgd", math.NaN(), 1, true}}, "delta"},
		{"inf delta", []LengthPoint{{"pgd", math.Inf(1), 1, true}}, "delta"},
		{"negative delta", []LengthPoint{{"pgd", -0.1, 1, true}}, "delta"},
		{"empty method", []LengthPoint{{"", 0.1, 1, true}}, "empty method"},
		{"negative length", []LengthPoint{{"pgd", 0.1, -1, true}}, "negative length"},
		{"reference and perturbed", []LengthPoint{{"pgd", 0, 1, true}, {"pgd", 0.1, 1, true}}, "delta 0"},
		{"huge length", []LengthPoint{{"pgd", 0.1, 0, true}, {"pgd", 0.1, math.MaxInt, true}}, "span"},
		{"too many deltas", manyDeltas(maxPanels + 1), "panels"},
		{"too many methods", manyMethods(maxMethods + 1), "methods"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := lengthHistograms(tt.points)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	// A negative length is fine for an output that did not stop: it is unused.
	if _, err := lengthHistograms([]LengthPoint{{"pgd", 0.1, -1, false}}); err != nil {
		t.Errorf("unstopped negative length: %v", err)
	}
}

func TestLengthFigure(t *testing.T) {
	dir := t.TempDir()
	pngPath, svgPath := filepath.Join(dir, "len.png"), filepath.Join(dir, "len.svg")
	pts := fakeLengths()
	const title = "Output lengths under attack"
	if err := LengthFigure(pts, title, pngPath, svgPath); err != nil {
		t.Fatal(err)
	}
	h, err := lengthHistograms(pts)
	if err != nil {
		t.Fatal(err)
	}
	if r, c := h.grid(); r != 1 || c != 3 {
		t.Errorf("grid for 3 deltas = %dx%d, want 1x3", r, c)
	}
	w, ht := h.size(title)
	img := checkPNG(t, pngPath, w, ht)
	for _, m := range methodStyles {
		if !hasColor(img, m.fill) {
			t.Errorf("PNG has no bar of %s's color", m.label)
		}
	}
	texts := svgText(t, svgPath)
	for _, want := range []string{title, "original", "random", "pgd", NoEOSLabel, "number of images", "output length"} {
		if !slices.Contains(texts, want) {
			t.Errorf("SVG lacks text %q", want)
		}
	}
	// Panels in ascending order of delta.
	var panels []string
	for _, s := range texts {
		if strings.HasPrefix(s, "δ = ") {
			panels = append(panels, s)
		}
	}
	if want := []string{"δ = 0.05", "δ = 0.1", "δ = 0.2"}; !slices.Equal(panels, want) {
		t.Errorf("panel titles = %v, want %v", panels, want)
	}
}

// TestLengthFigureFitsHeader: a one-panel figure of four methods with
// long names (the caption experiment's) is as wide as its legend row and
// its title, which were cut at both edges before.
func TestLengthFigureFitsHeader(t *testing.T) {
	var pts []LengthPoint
	for _, m := range []string{"original", "random", "pgd-eos-logprob", "pgd-margin"} {
		d := 0.5
		if m == "original" {
			d = 0
		}
		pts = append(pts, LengthPoint{m, d, 3, true}, LengthPoint{m, d, 25, true})
	}
	h, err := lengthHistograms(pts)
	if err != nil {
		t.Fatal(err)
	}
	const title = "showtell-lstm-flat: output length under attack"
	w, ht := h.size(title)
	if lw := legendWidth(h.methods); w < lw {
		t.Errorf("figure %v wide, legend %v", w, lw)
	}
	if tw := textStyle(titleSize).Width(title); w < tw {
		t.Errorf("figure %v wide, title %v", w, tw)
	}
	dir := t.TempDir()
	if err := LengthFigure(pts, title, filepath.Join(dir, "f.png"), ""); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, filepath.Join(dir, "f.png"), w, ht)
}

func TestLengthFigureGrid(t *testing.T) {
	for _, tt := range []struct{ n, rows, cols int }{{1, 1, 1}, {2, 1, 2}, {3, 1, 3}, {4, 2, 2}, {5, 2, 3}, {6, 2, 3}, {7, 3, 3}, {10, 3, 4}} {
		h := &lengthHist{deltas: make([]float64, tt.n)}
		if r, c := h.grid(); r != tt.rows || c != tt.cols {
			t.Errorf("%d deltas: grid %dx%d, want %dx%d", tt.n, r, c, tt.rows, tt.cols)
		}
	}
	// Five panels leave one tile empty; drawing must cope.
	var pts []LengthPoint
	for _, d := range []float64{0.01, 0.02, 0.03, 0.04, 0.05} {
		pts = append(pts, LengthPoint{"pgd", d, 3, true})
	}
	dir := t.TempDir()
	if err := LengthFigure(pts, "", filepath.Join(dir, "g.png"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "g.svg")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SVG written for an empty path: %v", err)
	}
}

func TestFigureErrors(t *testing.T) {
	dir := t.TempDir()
	pngPath := filepath.Join(dir, "x.png")
	missing := filepath.Join(dir, "no", "such", "x.png")
	vc := []VerdictCount{{0.1, 1, 1, 1}}
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"length empty", func() error { return LengthFigure(nil, "t", pngPath, "") }, "no points"},
		{"verdict empty", func() error { return VerdictFigure(nil, "t", pngPath, "") }, "no verdict counts"},
		{"length no paths", func() error { return LengthFigure(fakeLengths(), "t", "", "") }, "no output path"},
		{"verdict no paths", func() error { return VerdictFigure(vc, "t", "", "") }, "no output path"},
		{"length bad dir", func() error { return LengthFigure(fakeLengths(), "t", missing, "") }, missing},
		{"verdict bad dir", func() error { return VerdictFigure(vc, "t", "", missing) }, missing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := os.Stat(pngPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed figure left a file: %v", err)
	}
	// Failed writes leave neither the figure nor a temporary file.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		t.Errorf("left behind %s", e.Name())
	}
}

func TestProportions(t *testing.T) {
	got, err := proportions([]VerdictCount{
		{Delta: 0.2, Robust: 0, Vulnerable: 3, Unknown: 1},
		{Delta: 0.05, Robust: 8, Vulnerable: 0, Unknown: 2},
		{Delta: 0.1, Robust: 1, Vulnerable: 1, Unknown: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []verdictProps{
		{0.05, 0.8, 0, 0.2, 10},
		{0.1, 0.25, 0.25, 0.5, 4},
		{0.2, 0, 0.75, 0.25, 4},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d bars, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.delta != w.delta || g.n != w.n ||
			math.Abs(g.robust-w.robust) > 1e-12 || math.Abs(g.vulnerable-w.vulnerable) > 1e-12 || math.Abs(g.unknown-w.unknown) > 1e-12 {
			t.Errorf("bar %d = %+v, want %+v", i, g, w)
		}
		if s := g.robust + g.vulnerable + g.unknown; math.Abs(s-1) > 1e-12 {
			t.Errorf("bar %d sums to %v", i, s)
		}
	}

	for _, tt := range []struct {
		name   string
		counts []VerdictCount
		want   string
	}{
		{"empty", nil, "no verdict counts"},
		{"no samples", []VerdictCount{{0.1, 0, 0, 0}}, "no samples"},
		{"negative", []VerdictCount{{0.1, 3, -1, 0}}, "negative"},
		{"duplicate delta", []VerdictCount{{0.1, 1, 0, 0}, {0.1, 0, 1, 0}}, "twice"},
		{"nan delta", []VerdictCount{{math.NaN(), 1, 0, 0}}, "delta"},
		{"negative delta", []VerdictCount{{-1, 1, 0, 0}}, "delta"},
		{"too many", make([]VerdictCount, maxVerdictBars+1), "bars"},
	} {
		if _, err := proportions(tt.counts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestVerdictFigure(t *testing.T) {
	dir := t.TempDir()
	pngPath, svgPath := filepath.Join(dir, "v.png"), filepath.Join(dir, "v.svg")
	counts := []VerdictCount{
		{0.01, 30, 25, 45}, {0.001, 95, 0, 5}, {0.05, 0, 88, 12}, {0.005, 60, 8, 32},
	}
	const title = "Verified output-length bounds"
	if err := VerdictFigure(counts, title, pngPath, svgPath); err != nil {
		t.Fatal(err)
	}
	w, h := verdictSize(len(counts), title)
	img := checkPNG(t, pngPath, w, h)
	for _, e := range verdictEntries {
		if !hasColor(img, e.fill) {
			t.Errorf("PNG has no %s segment", e.label)
		}
	}
	texts := svgText(t, svgPath)
	for _, want := range []string{title, "robust", "vulnerable", "unknown", "proportion of samples"} {
		if !slices.Contains(texts, want) {
			t.Errorf("SVG lacks text %q", want)
		}
	}
	// The delta labels appear left to right in ascending order.
	var xs []string
	for _, s := range texts {
		if slices.Contains([]string{"0.001", "0.005", "0.01", "0.05"}, s) {
			xs = append(xs, s)
		}
	}
	if want := []string{"0.001", "0.005", "0.01", "0.05"}; !slices.Equal(xs, want) {
		t.Errorf("x labels = %v, want %v", xs, want)
	}
}

// TestBinnedLengthFigure: lengths of hundreds of tokens are binned by
// tens with a "> 100" bin (paper figures 4 and 5), the axis spans every bin
// whatever the data, and the invisible span method never shows.
func TestBinnedLengthFigure(t *testing.T) {
	dir := t.TempDir()
	pngPath, svgPath := filepath.Join(dir, "b.png"), filepath.Join(dir, "b.svg")
	pts := []LengthPoint{
		{Method: "original", Delta: 0, Length: 7, Stopped: true},
		{Method: "random", Delta: 0.3, Length: 12, Stopped: true},
		{Method: "random", Delta: 0.3, Length: 575, Stopped: true},
		{Method: "gumbel", Delta: 0.3, Length: 100, Stopped: true},
		{Method: "gumbel", Delta: 1, Length: 1000, Stopped: false},
	}
	if err := BinnedLengthFigure(pts, 10, 100, "sentences", "NMT", pngPath, svgPath); err != nil {
		t.Fatal(err)
	}
	texts := svgText(t, svgPath)
	for _, want := range []string{">100", "0", "sentences", NoEOSLabel, "gumbel", "random"} {
		if !slices.Contains(texts, want) {
			t.Errorf("SVG lacks text %q", want)
		}
	}
	for _, s := range texts {
		if strings.Contains(s, "span") {
			t.Errorf("the span method shows: %q", s)
		}
	}
	if err := BinnedLengthFigure(pts, 0, 100, "", "", pngPath, ""); err == nil {
		t.Fatal("bins of width 0: no error")
	}
}

// TestBoundFigure: the curves' statistics and the figure's text.
func TestBoundFigure(t *testing.T) {
	points := []BoundPoint{
		{Delta: 0.05, Lower: []int{2, 3, 2}, Upper: []int{2, -1, 4}},
		{Delta: 0.01, Lower: []int{2, 3, 1}, Upper: []int{2, 3, 1}},
	}
	s, err := Bound(points[0])
	if err != nil {
		t.Fatal(err)
	}
	// The unproven image counts as unbounded: median 4 of (2, 4, ∞), no maximum.
	if s.Images != 3 || s.Proven != 2 || s.Certified != 1 || s.MedianUpper != 4 || !math.IsNaN(s.MaxUpper) || s.MaxLower != 3 || s.MedianLower != 2 {
		t.Fatalf("stats %+v", s)
	}
	if s, _ := Bound(BoundPoint{Delta: 0.1, Lower: []int{1, 2}, Upper: []int{-1, -1}}); !math.IsNaN(s.MedianUpper) || s.Proven != 0 {
		t.Fatalf("no image proven: stats %+v", s)
	}
	for _, c := range []struct {
		curve []float64
		runs  []int
	}{
		{[]float64{1, 2, 3}, []int{3}},
		{[]float64{1, math.NaN(), 3, 4}, []int{1, 2}},
		{[]float64{math.NaN(), math.NaN()}, nil},
		{[]float64{math.NaN(), 2, math.NaN()}, []int{1}},
	} {
		var runs []int
		for _, r := range segments(c.curve) {
			runs = append(runs, len(r))
		}
		if !slices.Equal(runs, c.runs) {
			t.Errorf("segments(%v): runs of %v points, want %v", c.curve, runs, c.runs)
		}
	}
	dir := t.TempDir()
	pngPath, svgPath := filepath.Join(dir, "b.png"), filepath.Join(dir, "b.svg")
	if _, err := BoundFigure(points, "Certified worst-case length", pngPath, svgPath); err != nil {
		t.Fatal(err)
	}
	w, h := boundSize(len(points), "Certified worst-case length")
	img := checkPNG(t, pngPath, w, h)
	for _, e := range boundEntries {
		if !hasColor(img, e.fill) {
			t.Errorf("PNG has no %s curve", e.label)
		}
	}
	texts := svgText(t, svgPath)
	for _, want := range []string{"Certified worst-case length", "median proven", "max witnessed", "0.01", "0.05"} {
		if !slices.Contains(texts, want) {
			t.Errorf("SVG lacks text %q", want)
		}
	}
	for _, bad := range [][]BoundPoint{
		nil,
		{{Delta: 0.1, Lower: []int{3}, Upper: []int{2}}}, // upper below lower
		{{Delta: math.NaN(), Lower: []int{1}, Upper: []int{1}}},
		{{Delta: 0.1, Lower: []int{1}, Upper: []int{1}}, {Delta: 0.1, Lower: []int{1}, Upper: []int{1}}},
		{{Delta: 0.1, Lower: []int{1, 2}, Upper: []int{1}}},
	} {
		if _, err := BoundFigure(bad, "x", pngPath, svgPath); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestThinLabelsKeep: a binned figure's bins 0..10 ("> 100" last) and its
// unstopped category on a narrow panel: the kept labels are shown, and no
// two shown labels overlap on the page (the "90" beside "> 100" did).
func TestThinLabelsKeep(t *testing.T) {
	lengths := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	var pos []float64
	var labels []string
	for _, l := range lengths {
		pos = append(pos, float64(l))
		labels = append(labels, fmt.Sprint(l*10))
	}
	labels[10] = ">100"
	pos, labels = append(pos, 11+noEOSGap), append(labels, NoEOSLabel)
	sty := textStyle(10)
	for perUnit := vg.Length(4); perUnit <= 40; perUnit += 0.5 {
		ticks := thinLabels(lengths, pos, labels, perUnit, sty.Font, 10)
		if ticks[10].Label != ">100" || ticks[11].Label != NoEOSLabel || ticks[0].Label != "0" {
			t.Errorf("perUnit %v: kept labels missing: %+v", perUnit, ticks)
		}
		prev := -1
		for i, tk := range ticks {
			if tk.Label == "" || i == 11 { // the two kept neighbours may touch; the panel's gap separates them
				continue
			}
			if prev >= 0 {
				gap := vg.Length(pos[i]-pos[prev]) * perUnit
				if need := (sty.Width(ticks[prev].Label) + sty.Width(tk.Label)) / 2; gap < need {
					t.Errorf("perUnit %v: labels %q and %q overlap (%v < %v)", perUnit, ticks[prev].Label, tk.Label, gap, need)
				}
			}
			prev = i
		}
	}
	// Wide panels label every bin.
	for i, tk := range thinLabels(lengths, pos, labels, 100, sty.Font, 10) {
		if tk.Label != labels[i] {
			t.Errorf("wide panel: tick %d labelled %q, want %q", i, tk.Label, labels[i])
		}
	}
}

// TestFiguresFitLongTitles: each figure is widened to show its title whole
// (a long --title was cut at both edges of the verdict figure), and keeps
// its own width when the title is short.
func TestFiguresFitLongTitles(t *testing.T) {
	const long = "Verification verdicts per δ, models/showtell-lstm (100 images, 60 s a sample)"
	hist, err := lengthHistograms([]LengthPoint{{"original", 0, 3, true}, {"pgd", 0.5, 9, true}})
	if err != nil {
		t.Fatal(err)
	}
	sizes := []struct {
		name string
		size func(title string) vg.Length
	}{
		{"verdict", func(title string) vg.Length { w, _ := verdictSize(3, title); return w }},
		{"bound", func(title string) vg.Length { w, _ := boundSize(3, title); return w }},
		{"length", func(title string) vg.Length { w, _ := hist.size(title); return w }},
	}
	for _, s := range sizes {
		if w, tw := s.size(long), textStyle(titleSize).Width(long); w < tw {
			t.Errorf("%s figure %v wide, its title %v", s.name, w, tw)
		}
		if s.size("short") != s.size("") {
			t.Errorf("%s figure: a short title changes the width (%v, without %v)", s.name, s.size("short"), s.size(""))
		}
	}
}
