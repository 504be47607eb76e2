package report

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// BoundPoint is a worst-case length search over an image set at one
// radius: per image, the longest output a replayed input of the set
// produces (Lower) and the largest length proven impossible to exceed
// (Upper, −1 when no K̂ tried was proven).
type BoundPoint struct {
	Delta        float64
	Lower, Upper []int
}

// BoundStats are the curve's values at one radius.
type BoundStats struct {
	Delta             float64
	Images, Certified int
	Proven            int // images with an upper bound
	// MedianUpper and MaxUpper are over all images, one with no proven
	// bound counting as unbounded: NaN when that is where they fall (the
	// maximum as soon as one image has none, the median once half have).
	MedianUpper, MaxUpper float64
	MedianLower, MaxLower float64
}

// Bound computes the statistics of p: medians and maxima of the proven and
// the witnessed lengths.
func Bound(p BoundPoint) (BoundStats, error) {
	if len(p.Lower) == 0 || len(p.Lower) != len(p.Upper) {
		return BoundStats{}, fmt.Errorf("delta %v: %d lower and %d upper lengths", p.Delta, len(p.Lower), len(p.Upper))
	}
	if math.IsNaN(p.Delta) || math.IsInf(p.Delta, 0) || p.Delta < 0 {
		return BoundStats{}, fmt.Errorf("delta %v is not a finite non-negative number", p.Delta)
	}
	s := BoundStats{Delta: p.Delta, Images: len(p.Lower), MedianUpper: math.NaN(), MaxUpper: math.NaN()}
	var lo, up []float64
	for i, l := range p.Lower {
		u := p.Upper[i]
		if l < 0 || u < -1 || (u >= 0 && u < l) {
			return BoundStats{}, fmt.Errorf("delta %v image %d: lower %d, upper %d", p.Delta, i, l, u)
		}
		lo = append(lo, float64(l))
		v := math.Inf(1) // no proven bound: unbounded
		if u >= 0 {
			v = float64(u)
			s.Proven++
			if u == l {
				s.Certified++
			}
		}
		up = append(up, v)
	}
	s.MedianLower, s.MaxLower = Quantile(lo, 0.5), slices.Max(lo)
	finite := func(v float64) float64 {
		if math.IsInf(v, 0) {
			return math.NaN()
		}
		return v
	}
	s.MedianUpper, s.MaxUpper = finite(Quantile(up, 0.5)), finite(slices.Max(up))
	return s, nil
}

// boundEntries are the figure's four curves: proven (solid colours) and
// witnessed (lighter), median and maximum.
var boundEntries = []legendEntry{
	{"max proven", okVermilion},
	{"median proven", okBlue},
	{"max witnessed", okOrange},
	{"median witnessed", okSkyBlue},
}

// BoundFigure draws the certified worst-case length curves: per δ (equally
// spaced, labelled), the median and maximum proven upper bound and
// witnessed length over the image set. An image with no proven bound
// counts as unbounded, so a proven curve has no point (and a gap) where
// its statistic is unbounded: a maximum over the images that happen to be
// proven would understate the worst case. It returns the curves'
// statistics (Bound of each point), sorted by δ.
func BoundFigure(points []BoundPoint, title, pngPath, svgPath string) ([]BoundStats, error) {
	if len(points) == 0 {
		return nil, errors.New("no bound points")
	}
	var stats []BoundStats
	for _, p := range points {
		s, err := Bound(p)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(stats, func(o BoundStats) bool { return o.Delta == s.Delta }) {
			return nil, fmt.Errorf("delta %v appears twice", s.Delta)
		}
		stats = append(stats, s)
	}
	slices.SortFunc(stats, func(a, b BoundStats) int { return cmp.Compare(a.Delta, b.Delta) })
	curves := [][]float64{{}, {}, {}, {}}
	top := 0.0
	for _, s := range stats {
		for i, v := range []float64{s.MaxUpper, s.MedianUpper, s.MaxLower, s.MedianLower} {
			curves[i] = append(curves[i], v)
			if !math.IsNaN(v) {
				top = math.Max(top, v)
			}
		}
	}
	w, h := boundSize(len(stats), title)
	return stats, save(w, h, func(c draw.Canvas) {
		body := drawHeader(c, title, boundEntries)
		p := newPlot()
		p.X.Label.Text = "δ (L∞ radius)"
		p.Y.Label.Text = "output length (tokens)"
		p.X.Min, p.X.Max = -0.5, float64(len(stats))-0.5
		p.Y.Min, p.Y.Max = 0, math.Ceil(top)+1
		var ticks []plot.Tick
		for i, s := range stats {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: formatDelta(s.Delta)})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.Y.Tick.Marker = countTicks{}
		p.Add(hGrid{})
		for i, e := range boundEntries {
			for _, xy := range segments(curves[i]) {
				l, pts, err := plotter.NewLinePoints(xy)
				if err != nil {
					continue
				}
				l.Color = e.fill
				l.Width = vg.Points(1.5)
				if i >= 2 {
					l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
				}
				pts.Color = e.fill
				pts.Shape = draw.CircleGlyph{}
				pts.Radius = vg.Points(2.2)
				p.Add(l, pts)
			}
		}
		p.Draw(body)
	}, pngPath, svgPath)
}

// segments splits a curve (one value per radius, NaN: no point) into its
// runs of points, so that no line is drawn across a radius without one.
func segments(curve []float64) []plotter.XYs {
	var out []plotter.XYs
	var run plotter.XYs
	for k, v := range curve {
		if math.IsNaN(v) {
			if len(run) > 0 {
				out, run = append(out, run), nil
			}
			continue
		}
		run = append(run, plotter.XY{X: float64(k), Y: v})
	}
	if len(run) > 0 {
		out = append(out, run)
	}
	return out
}

// boundSize is the figure's size for n radii.
func boundSize(n int, title string) (w, h vg.Length) {
	w = vg.Points(math.Max(260, 60+45*float64(n)))
	w = max(w, headerWidth(title, boundEntries))
	return wholePixels(w), wholePixels(vg.Points(200) + headerHeight(title, boundEntries))
}
