package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// LengthPoint is the output of one method on one image at one perturbation
// bound.
type LengthPoint struct {
	// Method names how the input was produced, e.g. "original", "random"
	// or "pgd".
	Method string
	// Delta is the perturbation bound. Points with Delta 0 are the
	// unperturbed reference, drawn in every panel.
	Delta float64
	// Length is the number of tokens decoded before EOS. It is ignored for
	// outputs that did not stop.
	Length int
	// Stopped reports whether decoding emitted EOS before the length cap.
	Stopped bool
}

// NoEOSLabel labels the bar of outputs that never emitted EOS.
const NoEOSLabel = "no EOS"

// methodStyles fixes the order and color of the methods lenspec reports, so
// that a method looks the same in every figure. The reference is neutral gray;
// random and PGD get the two Okabe–Ito colors furthest apart.
var methodStyles = []legendEntry{
	{"original", gray},
	{"random", okSkyBlue},
	{"pgd", okVermilion},
}

// extraColors color methods not in methodStyles, in name order.
var extraColors = []color.Color{okOrange, okBlue, okGreen, okPurple, okYellow, okBlack}

// lengthHist is the data of a LengthFigure.
type lengthHist struct {
	deltas    []float64     // one panel per delta, ascending
	methods   []legendEntry // legend and bar order
	lengths   []int         // stopped-output lengths, min..max without gaps
	unstopped bool          // whether a final "no EOS" category is shown
	// counts[panel][method][category] is the number of images; category
	// len(lengths) is the unstopped one.
	counts   [][][]int
	maxCount int
	// label names a length category (nil: the length); yLabel is the y
	// axis' label (empty: "number of images").
	label  func(int) string
	yLabel string
}

// lengthHistograms validates points and counts them per panel, method and
// output length. Points at delta 0 are the reference and are counted in every
// panel; when every point is at delta 0 there is a single panel.
func lengthHistograms(points []LengthPoint) (*lengthHist, error) {
	if len(points) == 0 {
		return nil, errors.New("no points")
	}
	refMethods := map[string]bool{}
	pertMethods := map[string]float64{}
	var deltas []float64
	seen := map[float64]bool{}
	minL, maxL := math.MaxInt, math.MinInt
	h := &lengthHist{}
	for i, p := range points {
		switch {
		case p.Method == "":
			return nil, fmt.Errorf("point %d: empty method", i)
		case math.IsNaN(p.Delta) || math.IsInf(p.Delta, 0) || p.Delta < 0:
			return nil, fmt.Errorf("point %d (%s): delta %v is not a finite non-negative number", i, p.Method, p.Delta)
		case p.Stopped && p.Length < 0:
			return nil, fmt.Errorf("point %d (%s, delta %v): negative length %d", i, p.Method, p.Delta, p.Length)
		}
		if p.Delta == 0 {
			refMethods[p.Method] = true
		} else {
			pertMethods[p.Method] = p.Delta
			if !seen[p.Delta] {
				seen[p.Delta] = true
				deltas = append(deltas, p.Delta)
			}
		}
		if p.Stopped {
			minL, maxL = min(minL, p.Length), max(maxL, p.Length)
		} else {
			h.unstopped = true
		}
	}
	for m := range refMethods {
		if d, ok := pertMethods[m]; ok {
			// Drawing the reference in a panel that has its own points for
			// the same method would count those images twice.
			return nil, fmt.Errorf("method %q has points at delta 0 (the reference) and at delta %v", m, d)
		}
	}
	if len(deltas) == 0 {
		deltas = []float64{0}
	}
	// Beyond these a figure is unreadable, and its PNG would need gigabytes.
	if len(deltas) > maxPanels {
		return nil, fmt.Errorf("%d deltas, at most %d panels fit in one figure", len(deltas), maxPanels)
	}
	if n := len(refMethods) + len(pertMethods); n > maxMethods {
		return nil, fmt.Errorf("%d methods, at most %d can be told apart in one figure", n, maxMethods)
	}
	if minL <= maxL && maxL-minL >= maxLengthBins {
		return nil, fmt.Errorf("stopped lengths span %d to %d, at most %d bars per method fit in a panel", minL, maxL, maxLengthBins)
	}
	slices.Sort(deltas)
	h.deltas = deltas
	h.methods = orderMethods(refMethods, pertMethods)
	if minL <= maxL {
		for l := minL; l <= maxL; l++ {
			h.lengths = append(h.lengths, l)
		}
	}

	nCat := len(h.lengths)
	if h.unstopped {
		nCat++
	}
	mIndex := map[string]int{}
	for i, m := range h.methods {
		mIndex[m.label] = i
	}
	h.counts = make([][][]int, len(deltas))
	for d := range h.counts {
		h.counts[d] = make([][]int, len(h.methods))
		for m := range h.counts[d] {
			h.counts[d][m] = make([]int, nCat)
		}
	}
	for _, p := range points {
		cat := len(h.lengths)
		if p.Stopped {
			cat = p.Length - minL
		}
		m := mIndex[p.Method]
		for d, delta := range deltas {
			if p.Delta == 0 || p.Delta == delta {
				h.counts[d][m][cat]++
				h.maxCount = max(h.maxCount, h.counts[d][m][cat])
			}
		}
	}
	return h, nil
}

// orderMethods puts the known methods first, in their fixed order and
// colors, and the others after them by name. Known names match regardless of
// case.
func orderMethods(ref map[string]bool, pert map[string]float64) []legendEntry {
	var names []string
	for m := range ref {
		names = append(names, m)
	}
	for m := range pert {
		names = append(names, m)
	}
	slices.Sort(names)
	var out, extra []legendEntry
	for _, known := range methodStyles {
		for _, m := range names {
			if strings.EqualFold(m, known.label) {
				out = append(out, legendEntry{m, known.fill})
			}
		}
	}
	for _, m := range names {
		if !slices.ContainsFunc(out, func(e legendEntry) bool { return e.label == m }) {
			extra = append(extra, legendEntry{m, extraColors[len(extra)%len(extraColors)]})
		}
	}
	return append(out, extra...)
}

// Layout of a LengthFigure, per panel.
const (
	maxPanels     = 36
	maxLengthBins = 500
	maxMethods    = 8
	panelWidth    = 2.3 * vg.Inch
	panelHeight   = 1.85 * vg.Inch
	// barSpan is the fraction of a length category its group of bars fills.
	barSpan = 0.8
	// noEOSGap separates the unstopped bar from the lengths, in categories.
	noEOSGap = 1
)

// LengthFigure draws the distribution of output lengths, one panel per
// perturbation bound delta (ascending), and writes it as a PNG to pngPath and
// an SVG to svgPath (an empty path skips that format).
//
// Each panel, titled "δ = 0.05", holds grouped bars of the number of images
// (y) per output length (x), one bar per method. Points at delta 0 are the
// unperturbed reference (for example method "original") and appear in every
// panel. The methods "original", "random" and "pgd" come first, in that
// order, with fixed colorblind-safe colors; other methods follow by name.
// Outputs that never stopped are counted in a final bar labelled "no EOS".
// Panels share both axes and are tiled in one row for up to three deltas,
// else in a near-square grid (2 × 3 for six deltas), under a shared legend
// and the title.
func LengthFigure(points []LengthPoint, title, pngPath, svgPath string) error {
	h, err := lengthHistograms(points)
	if err != nil {
		return fmt.Errorf("length figure %s: %w", figureName(pngPath, svgPath), err)
	}
	return h.draw(title, pngPath, svgPath)
}

// BinnedLengthFigure is LengthFigure for outputs of up to hundreds of
// tokens (translation): stopped lengths are counted in bins of width
// tokens up to over, then in one "> over" bin (paper figures 4 and 5), and
// the y axis is labelled yLabel.
func BinnedLengthFigure(points []LengthPoint, width, over int, yLabel, title, pngPath, svgPath string) error {
	if width < 1 || over < width {
		return fmt.Errorf("length figure %s: bins of %d up to %d", figureName(pngPath, svgPath), width, over)
	}
	top := (over + width - 1) / width // the bin of "> over"
	binned := make([]LengthPoint, len(points))
	for i, p := range points {
		binned[i] = p
		if p.Stopped && p.Length >= 0 {
			binned[i].Length = min(p.Length/width, top)
			if p.Length > over {
				binned[i].Length = top
			}
		}
	}
	// Every bin from 0 to "> over" is drawn, used or not: a fixed axis
	// reads across figures.
	binned = append(binned, LengthPoint{Method: "\x00span", Delta: 0, Length: 0, Stopped: true}, LengthPoint{Method: "\x00span", Delta: 0, Length: top, Stopped: true})
	h, err := lengthHistograms(binned)
	if err != nil {
		return fmt.Errorf("length figure %s: %w", figureName(pngPath, svgPath), err)
	}
	h.dropSpan()
	h.yLabel = yLabel
	h.label = func(b int) string {
		if b == top {
			return fmt.Sprintf(">%d", over)
		}
		return strconv.Itoa(b * width)
	}
	return h.draw(title, pngPath, svgPath)
}

// dropSpan removes the invisible method that fixed a binned figure's axis.
func (h *lengthHist) dropSpan() {
	for m, e := range h.methods {
		if e.label == "\x00span" {
			h.methods = append(h.methods[:m], h.methods[m+1:]...)
			for d := range h.counts {
				h.counts[d] = append(h.counts[d][:m], h.counts[d][m+1:]...)
			}
			break
		}
	}
	h.maxCount = 0
	for d := range h.counts {
		for m := range h.counts[d] {
			for _, c := range h.counts[d][m] {
				h.maxCount = max(h.maxCount, c)
			}
		}
	}
}

// draw renders the histograms.
func (h *lengthHist) draw(title, pngPath, svgPath string) error {
	n := len(h.deltas)
	rows, cols := h.grid()
	w, ht := h.size(title)
	drawFig := func(dc draw.Canvas) {
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		body := drawHeader(dc, title, h.methods)
		plots := make([][]*plot.Plot, rows)
		for r := range plots {
			plots[r] = make([]*plot.Plot, cols)
		}
		for i := range h.deltas {
			plots[i/cols][i%cols] = h.panel(i, i%cols == 0, i+cols >= n, body)
		}
		tiles := draw.Tiles{
			Rows: rows, Cols: cols,
			PadX: vg.Points(12), PadY: vg.Points(10),
			PadLeft: vg.Points(4), PadRight: vg.Points(8), PadBottom: vg.Points(4),
		}
		canvases := plot.Align(plots, tiles, body)
		for r := range plots {
			for c, p := range plots[r] {
				if p != nil {
					p.Draw(canvases[r][c])
				}
			}
		}
	}
	if err := save(w, ht, drawFig, pngPath, svgPath); err != nil {
		return fmt.Errorf("length figure: %w", err)
	}
	return nil
}

// grid returns the number of panel rows and columns: one row for up to three
// panels, else near-square with at least as many columns as rows, since
// figures are wider than tall.
func (h *lengthHist) grid() (rows, cols int) {
	n := len(h.deltas)
	cols = int(math.Ceil(math.Sqrt(float64(n))))
	if n <= 3 {
		cols = n
	}
	return (n + cols - 1) / cols, cols
}

// size returns the width and height of the figure.
func (h *lengthHist) size(title string) (w, ht vg.Length) {
	rows, cols := h.grid()
	w = vg.Length(cols)*panelWidth + 0.3*vg.Inch
	// A one-panel figure of four methods is narrower than its legend
	// row or its title: widen it rather than cut them at the edges.
	w = max(w, headerWidth(title, h.methods))
	return wholePixels(w), wholePixels(headerHeight(title, h.methods) + vg.Length(rows)*panelHeight)
}

// panel builds the plot of panel i. Axis labels are drawn only on the outer
// panels, as the axes are shared.
func (h *lengthHist) panel(i int, leftCol, bottomRow bool, body draw.Canvas) *plot.Plot {
	p := newPlot()
	p.Title.Text = "δ = " + formatDelta(h.deltas[i])
	if leftCol {
		p.Y.Label.Text = "number of images"
		if h.yLabel != "" {
			p.Y.Label.Text = h.yLabel
		}
	}
	if bottomRow {
		p.X.Label.Text = "output length"
	}
	pos, labels := h.categories()
	nm := float64(len(h.methods))
	var bars rects
	for m, meth := range h.methods {
		for c, x := range pos {
			left := x - barSpan/2 + barSpan*float64(m)/nm
			bars = append(bars, rect{left, left + barSpan/nm, 0, float64(h.counts[i][m][c]), meth.fill})
		}
	}
	p.Add(hGrid{})
	if h.unstopped && len(h.lengths) > 0 {
		// Set the unstopped bar apart: it is not a length.
		p.Add(vLine{x: float64(len(h.lengths)) - 0.5 + noEOSGap/2})
	}
	p.Add(bars)
	p.X.Min, p.X.Max = pos[0]-0.5, pos[len(pos)-1]+0.5
	p.Y.Min, p.Y.Max = 0, float64(h.maxCount)*1.08
	p.Y.Tick.Marker = countTicks{}
	// Estimate the width of a category on the page to thin labels that
	// would overlap; the panel's data area is its tile less the y axis.
	perUnit := (panelWidth - vg.Inch/2) / vg.Length(p.X.Max-p.X.Min)
	if h.label != nil {
		// Binned: the lengths are bin numbers and the last bin, "> over",
		// is always labelled.
		p.X.Tick.Marker = fixedTicks(thinLabels(h.lengths, pos, labels, perUnit, p.X.Tick.Label.Font, len(h.lengths)-1))
	} else {
		p.X.Tick.Marker = fixedTicks(thinLabels(h.lengths, pos, labels, perUnit, p.X.Tick.Label.Font))
	}
	return p
}

// categories returns the x position and label of each length category; the
// unstopped category sits a little apart from the lengths.
func (h *lengthHist) categories() ([]float64, []string) {
	var pos []float64
	var labels []string
	for i, l := range h.lengths {
		pos = append(pos, float64(i))
		if h.label != nil {
			labels = append(labels, h.label(l))
		} else {
			labels = append(labels, strconv.Itoa(l))
		}
	}
	if h.unstopped {
		pos = append(pos, float64(len(h.lengths))+noEOSGap)
		labels = append(labels, NoEOSLabel)
	}
	return pos, labels
}

// thinLabels returns a tick per category. Lengths are labelled at multiples
// of the smallest step in 1, 2, 5, 10, 20, 50, … that keeps labels apart on
// the page (perUnit is the page width of one x unit). The categories in keep
// (the unstopped one, which comes last if present, and a binned figure's
// "> over" bin) are always labelled, and length labels that would touch
// theirs are dropped.
func thinLabels(lengths []int, pos []float64, labels []string, perUnit vg.Length, fnt font.Font, keep ...int) []plot.Tick {
	sty := textStyle(fnt.Size)
	sty.Font = fnt
	space := sty.Width("0")
	if len(pos) > len(lengths) {
		keep = append(keep, len(pos)-1)
	}
	var widest vg.Length
	for i, l := range labels[:len(lengths)] {
		if !slices.Contains(keep, i) {
			widest = max(widest, sty.Width(l))
		}
	}
	step := 1
	for i := 0; vg.Length(step)*perUnit < widest+space; i++ {
		step = []int{1, 2, 5}[i%3] * int(math.Pow10(i/3))
		if step > 1e6 {
			break
		}
	}
	ticks := make([]plot.Tick, len(pos))
	for i, x := range pos {
		ticks[i] = plot.Tick{Value: x}
		if slices.Contains(keep, i) || lengths[i]%step == 0 {
			ticks[i].Label = labels[i]
		}
	}
	for _, k := range keep {
		for i := range lengths {
			if slices.Contains(keep, i) || ticks[i].Label == "" {
				continue
			}
			need := (sty.Width(labels[k])+sty.Width(labels[i]))/2 + space
			if vg.Length(math.Abs(pos[k]-pos[i]))*perUnit < need {
				ticks[i].Label = ""
			}
		}
	}
	return ticks
}

// fixedTicks is a plot.Ticker returning the same ticks for any range.
type fixedTicks []plot.Tick

// Ticks implements plot.Ticker.
func (t fixedTicks) Ticks(min, max float64) []plot.Tick { return t }

// figureName names a figure in errors by whichever path was given.
func figureName(pngPath, svgPath string) string {
	if pngPath != "" {
		return pngPath
	}
	return svgPath
}
