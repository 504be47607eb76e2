package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// VerdictCount is the number of samples per verification verdict at one
// perturbation bound.
type VerdictCount struct {
	Delta                       float64
	Robust, Vulnerable, Unknown int
}

// maxVerdictBars bounds the figure's width to something printable.
const maxVerdictBars = 100

// verdictProps holds the proportions of one stacked bar.
type verdictProps struct {
	delta                       float64
	robust, vulnerable, unknown float64
	n                           int
}

// verdictEntries gives the verdicts' colors, bottom of the stack first:
// blue and vermilion from Okabe–Ito, gray for the undecided rest.
var verdictEntries = []legendEntry{
	{"robust", okBlue},
	{"vulnerable", okVermilion},
	{"unknown", gray},
}

// proportions validates counts, sorts them by delta and divides each by its
// total so the three proportions of a bar sum to 1.
func proportions(counts []VerdictCount) ([]verdictProps, error) {
	if len(counts) == 0 {
		return nil, errors.New("no verdict counts")
	}
	if len(counts) > maxVerdictBars {
		return nil, fmt.Errorf("%d deltas, at most %d bars fit in one figure", len(counts), maxVerdictBars)
	}
	out := make([]verdictProps, 0, len(counts))
	for _, c := range counts {
		if math.IsNaN(c.Delta) || math.IsInf(c.Delta, 0) || c.Delta < 0 {
			return nil, fmt.Errorf("delta %v is not a finite non-negative number", c.Delta)
		}
		if c.Robust < 0 || c.Vulnerable < 0 || c.Unknown < 0 {
			return nil, fmt.Errorf("delta %v: negative count", c.Delta)
		}
		n := c.Robust + c.Vulnerable + c.Unknown
		if n == 0 {
			return nil, fmt.Errorf("delta %v: no samples", c.Delta)
		}
		if slices.ContainsFunc(out, func(p verdictProps) bool { return p.delta == c.Delta }) {
			return nil, fmt.Errorf("delta %v appears twice", c.Delta)
		}
		fn := float64(n)
		out = append(out, verdictProps{
			delta:      c.Delta,
			robust:     float64(c.Robust) / fn,
			vulnerable: float64(c.Vulnerable) / fn,
			unknown:    float64(c.Unknown) / fn,
			n:          n,
		})
	}
	slices.SortFunc(out, func(a, b verdictProps) int {
		switch {
		case a.delta < b.delta:
			return -1
		case a.delta > b.delta:
			return 1
		}
		return 0
	})
	return out, nil
}

// VerdictFigure draws the verification verdicts as one stacked bar per
// perturbation bound delta, in ascending order and labelled with the delta
// values, and writes it as a PNG to pngPath and an SVG to svgPath (an empty
// path skips that format). Each bar shows the proportion of samples proved
// robust (blue, bottom), shown vulnerable (vermilion) and left unknown (gray,
// top). Every delta must have at least one sample and appear once.
func VerdictFigure(counts []VerdictCount, title, pngPath, svgPath string) error {
	props, err := proportions(counts)
	if err != nil {
		return fmt.Errorf("verdict figure %s: %w", figureName(pngPath, svgPath), err)
	}
	w, h := verdictSize(len(props), title)
	drawFig := func(dc draw.Canvas) {
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		body := drawHeader(dc, title, verdictEntries)
		body = draw.Crop(body, vg.Points(4), -vg.Points(8), vg.Points(4), 0)
		verdictPlot(props).Draw(body)
	}
	if err := save(w, h, drawFig, pngPath, svgPath); err != nil {
		return fmt.Errorf("verdict figure: %w", err)
	}
	return nil
}

// verdictSize returns the size of a VerdictFigure with n bars: a
// single-column figure, widened when many bars need room for their labels
// or the title for its width.
func verdictSize(n int, title string) (w, h vg.Length) {
	return wholePixels(max(3.4*vg.Inch, vg.Length(n)*0.42*vg.Inch+0.8*vg.Inch, headerWidth(title, verdictEntries))),
		wholePixels(2.4*vg.Inch + headerHeight(title, verdictEntries))
}

// verdictPlot draws the stacked bars, bottom to top in verdictEntries order.
func verdictPlot(props []verdictProps) *plot.Plot {
	p := newPlot()
	p.X.Label.Text = "perturbation bound δ"
	p.Y.Label.Text = "proportion of samples"
	const width = 0.7
	var bars rects
	ticks := make(fixedTicks, len(props))
	for i, v := range props {
		x := float64(i)
		y := 0.0
		for j, frac := range []float64{v.robust, v.vulnerable, v.unknown} {
			bars = append(bars, rect{x - width/2, x + width/2, y, y + frac, verdictEntries[j].fill})
			y += frac
		}
		ticks[i] = plot.Tick{Value: x, Label: formatDelta(v.delta)}
	}
	p.Add(hGrid{}, bars)
	p.X.Min, p.X.Max = -0.6, float64(len(props)-1)+0.6
	p.Y.Min, p.Y.Max = 0, 1
	p.X.Tick.Marker = ticks
	p.Y.Tick.Marker = fractionTicks{}
	return p
}
