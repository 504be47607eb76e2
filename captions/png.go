package captions

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"

	"github.com/lenspec/lenspec/internal/fileio"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// WritePreview writes a canvas enlarged by scale with its caption (and,
// if second is not empty, a second line such as a model's output) printed
// under it, as a PNG for people; multimnist.WritePNG writes the plain
// canvas that models read back. The file is replaced atomically.
func WritePreview(path string, pix []uint8, caption, second string, scale int) error {
	if len(pix) != CanvasPixels {
		return fmt.Errorf("captions: write %s: %d pixels, want %d", path, len(pix), CanvasPixels)
	}
	if scale < 1 || scale > 16 {
		return fmt.Errorf("captions: write %s: scale %d outside 1..16", path, scale)
	}
	face := basicfont.Face7x13
	lines := []string{caption}
	if second != "" {
		lines = append(lines, second)
	}
	const pad, lineH = 6, 15
	w := Width * scale
	for _, l := range lines {
		w = max(w, font.MeasureString(face, l).Ceil()+2*pad)
	}
	h := Height*scale + pad + lineH*len(lines) + pad
	img := image.NewGray(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	for y := range Height * scale {
		for x := range Width * scale {
			img.Pix[y*img.Stride+x] = pix[(y/scale)*Width+x/scale]
		}
	}
	d := font.Drawer{Dst: img, Src: image.NewUniform(color.Black), Face: face}
	for i, l := range lines {
		d.Dot = fixed.P(pad, Height*scale+pad+lineH*(i+1)-3)
		d.DrawString(l)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return fmt.Errorf("captions: write %s: %w", path, err)
	}
	if err := fileio.WriteFileAtomic(path, buf.Bytes()); err != nil {
		return fmt.Errorf("captions: %w", err)
	}
	return nil
}
