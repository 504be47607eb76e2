// Package report turns lenspec results into paper-ready figures (PNG and SVG)
// and Markdown tables, with a few summary statistics.
//
// Figures use a fixed, colorblind-safe palette (Okabe and Ito), a serif font
// sized for a printed page, and write the same drawing as a 300 dpi PNG and
// as an SVG.
package report

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// DPI is the resolution of the PNG figures: what print venues ask for.
const DPI = 300

// Font sizes in points, for figures printed at their natural size.
const (
	titleSize  = 11
	labelSize  = 9.5
	tickSize   = 8.5
	legendSize = 9
)

// Okabe–Ito colors, distinguishable under the common color-vision deficiencies.
var (
	okBlack     = color.RGBA{0x00, 0x00, 0x00, 0xff}
	okOrange    = color.RGBA{0xe6, 0x9f, 0x00, 0xff}
	okSkyBlue   = color.RGBA{0x56, 0xb4, 0xe9, 0xff}
	okGreen     = color.RGBA{0x00, 0x9e, 0x73, 0xff}
	okYellow    = color.RGBA{0xf0, 0xe4, 0x42, 0xff}
	okBlue      = color.RGBA{0x00, 0x72, 0xb2, 0xff}
	okVermilion = color.RGBA{0xd5, 0x5e, 0x00, 0xff}
	okPurple    = color.RGBA{0xcc, 0x79, 0xa7, 0xff}
	gray        = color.RGBA{0xa0, 0xa0, 0xa0, 0xff}
	lightGray   = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	edgeColor   = color.RGBA{0x30, 0x30, 0x30, 0xff}
)

func textStyle(size vg.Length) text.Style {
	return text.Style{
		Color:   color.Black,
		Font:    font.From(plot.DefaultFont, size),
		XAlign:  draw.XCenter,
		YAlign:  draw.YTop,
		Handler: plot.DefaultTextHandler,
	}
}

// newPlot returns a plot styled for print: text sized for the page, short
// ticks, no axis padding (bars start on the axis).
func newPlot() *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font = font.From(plot.DefaultFont, labelSize)
	p.Title.Padding = vg.Points(3)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(plot.DefaultFont, labelSize)
		a.Label.Padding = vg.Points(2)
		a.Tick.Label.Font = font.From(plot.DefaultFont, tickSize)
		a.Tick.Length = vg.Points(4)
		a.Padding = 0
	}
	return p
}

// rect is a filled rectangle in data coordinates.
type rect struct {
	x0, x1, y0, y1 float64
	fill           color.Color
}

// rects is a plotter of rectangles whose widths are in data units, so bar
// widths follow the axis rather than being fixed lengths on the page.
type rects []rect

// Plot implements plot.Plotter.
func (rs rects) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	edge := draw.LineStyle{Color: edgeColor, Width: vg.Points(0.4)}
	for _, r := range rs {
		if r.y1 <= r.y0 {
			continue
		}
		pts := []vg.Point{
			{X: trX(r.x0), Y: trY(r.y0)},
			{X: trX(r.x1), Y: trY(r.y0)},
			{X: trX(r.x1), Y: trY(r.y1)},
			{X: trX(r.x0), Y: trY(r.y1)},
		}
		c.FillPolygon(r.fill, c.ClipPolygonXY(pts))
		c.StrokeLines(edge, c.ClipLinesXY(append(pts, pts[0]))...)
	}
}

// DataRange implements plot.DataRanger.
func (rs rects) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, r := range rs {
		xmin, xmax = math.Min(xmin, r.x0), math.Max(xmax, r.x1)
		ymin, ymax = math.Min(ymin, r.y0), math.Max(ymax, r.y1)
	}
	return xmin, xmax, ymin, ymax
}

// hGrid draws horizontal lines at the major ticks of the y axis, behind the
// bars, as a reading aid.
type hGrid struct{}

// Plot implements plot.Plotter.
func (hGrid) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	sty := draw.LineStyle{Color: lightGray, Width: vg.Points(0.5)}
	for _, t := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if t.IsMinor() || t.Value <= p.Y.Min || t.Value > p.Y.Max {
			continue
		}
		y := trY(t.Value)
		c.StrokeLine2(sty, c.Min.X, y, c.Max.X, y)
	}
}

// vLine draws a dashed vertical separator at x.
type vLine struct{ x float64 }

// Plot implements plot.Plotter.
func (l vLine) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	sty := draw.LineStyle{Color: gray, Width: vg.Points(0.6), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
	c.StrokeLine2(sty, trX(l.x), c.Min.Y, trX(l.x), c.Max.Y)
}

// countTicks labels a count axis with integers only: half an image is not a
// count. It falls back to gonum's default placement for large ranges.
type countTicks struct{}

// Ticks implements plot.Ticker.
func (countTicks) Ticks(min, max float64) []plot.Tick {
	if max-min <= 6 {
		var ticks []plot.Tick
		for v := math.Ceil(min); v <= max; v++ {
			ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
		}
		return ticks
	}
	var ticks []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(min, max) {
		if t.Value != math.Trunc(t.Value) {
			continue
		}
		if t.Label != "" {
			t.Label = strconv.FormatFloat(t.Value, 'f', 0, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// fractionTicks labels a [0, 1] axis at every 0.2.
type fractionTicks struct{}

// Ticks implements plot.Ticker.
func (fractionTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for i := 0; i <= 10; i++ {
		v := float64(i) / 10
		if v < min-1e-9 || v > max+1e-9 {
			continue
		}
		t := plot.Tick{Value: v}
		if i%2 == 0 {
			t.Label = strconv.FormatFloat(v, 'f', 1, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// legendEntry is one swatch and its label.
type legendEntry struct {
	label string
	fill  color.Color
}

// legendWidth is the width a horizontal legend needs.
func legendWidth(entries []legendEntry) vg.Length {
	sty := textStyle(legendSize)
	sw := sty.Height("M")
	gap := sty.Width("M")
	var w vg.Length
	for i, e := range entries {
		if i > 0 {
			w += 1.5 * gap
		}
		w += sw + 0.4*gap + sty.Width(e.label)
	}
	return w
}

// drawLegend draws the entries in one row, centred horizontally in c, with
// the top of the row at top. It returns the height of the row. A figure-level
// legend above the panels never covers data, unlike gonum's in-plot legend.
func drawLegend(c draw.Canvas, top vg.Length, entries []legendEntry) vg.Length {
	sty := textStyle(legendSize)
	sty.XAlign = draw.XLeft
	sty.YAlign = draw.YCenter
	sw := sty.Height("M")
	gap := sty.Width("M")
	x := c.Center().X - legendWidth(entries)/2
	yc := top - sw/2
	edge := draw.LineStyle{Color: edgeColor, Width: vg.Points(0.4)}
	for _, e := range entries {
		pts := []vg.Point{
			{X: x, Y: yc - sw/2}, {X: x + sw, Y: yc - sw/2},
			{X: x + sw, Y: yc + sw/2}, {X: x, Y: yc + sw/2},
		}
		c.FillPolygon(e.fill, pts)
		c.StrokeLines(edge, append(pts, pts[0]))
		x += sw + 0.4*gap
		c.FillText(sty, vg.Point{X: x, Y: yc}, e.label)
		x += sty.Width(e.label) + 1.5*gap
	}
	return sw
}

// drawHeader draws the figure title (if any) and the legend at the top of c
// and returns the canvas left below them.
func drawHeader(c draw.Canvas, title string, entries []legendEntry) draw.Canvas {
	pad := vg.Points(4)
	top := c.Max.Y - pad
	if title != "" {
		sty := textStyle(titleSize)
		c.FillText(sty, vg.Point{X: c.Center().X, Y: top}, title)
		top -= sty.Height(title) + vg.Points(3)
	}
	if len(entries) > 0 {
		top -= drawLegend(c, top, entries) + vg.Points(2)
	}
	top -= pad
	c.Max.Y = top
	return c
}

// headerWidth is the least width that shows drawHeader's title and legend
// whole: a figure narrower than its title or legend row cuts them at the
// edges, so each figure's size is widened to it.
func headerWidth(title string, entries []legendEntry) vg.Length {
	w := legendWidth(entries)
	if title != "" {
		w = max(w, textStyle(titleSize).Width(title))
	}
	return w + vg.Points(16)
}

// headerHeight is the height drawHeader uses.
func headerHeight(title string, entries []legendEntry) vg.Length {
	h := vg.Points(8)
	if title != "" {
		h += textStyle(titleSize).Height(title) + vg.Points(3)
	}
	if len(entries) > 0 {
		h += textStyle(legendSize).Height("M") + vg.Points(2)
	}
	return h
}

// save draws the figure of the given size as a PNG and as an SVG. An empty
// path skips that format; both empty is an error.
func save(w, h vg.Length, drawFig func(draw.Canvas), pngPath, svgPath string) (err error) {
	if pngPath == "" && svgPath == "" {
		return errors.New("no output path given")
	}
	// gonum/plot panics on some degenerate inputs (empty tick ranges and
	// the like); inputs are validated before drawing, but a figure must
	// still not take the program down.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("draw figure: %v", r)
		}
	}()
	if pngPath != "" {
		c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI))}
		drawFig(draw.New(c))
		if err := writeFile(pngPath, c); err != nil {
			return err
		}
	}
	if svgPath != "" {
		c := vgsvg.New(w, h)
		drawFig(draw.New(c))
		if err := writeFile(svgPath, c); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes through a temporary file in the same directory and
// renames it into place, so a failed write never leaves a truncated figure
// where a good one was.
func writeFile(path string, wt interface {
	WriteTo(w io.Writer) (int64, error)
}) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := wt.WriteTo(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// wholePixels rounds a figure dimension to a whole number of PNG pixels, so
// the PNG is exactly the figure's size.
func wholePixels(l vg.Length) vg.Length {
	return vg.Length(math.Round(float64(l/vg.Inch)*DPI)) * vg.Inch / DPI
}

// formatDelta writes a perturbation bound as the shortest decimal that
// round-trips, which is how it was most likely typed.
func formatDelta(d float64) string {
	return strconv.FormatFloat(d, 'g', -1, 64)
}
