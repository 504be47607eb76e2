package multimnist

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
)

// maxPNGSide bounds each side of a written PNG, so a mistaken scale fails
// with an error instead of allocating gigabytes.
const maxPNGSide = 1 << 15

// WritePNG writes pix, an h×w row-major grayscale image, as an 8-bit
// grayscale PNG enlarged by the integer factor scale (each pixel becomes a
// scale×scale block) so that people can look at it.
func WritePNG(path string, pix []uint8, h, w, scale int) error {
	if h <= 0 || w <= 0 || scale <= 0 {
		return fmt.Errorf("multimnist: write %s: bad shape %dx%d or scale %d", path, h, w, scale)
	}
	if h > maxPNGSide/scale || w > maxPNGSide/scale {
		return fmt.Errorf("multimnist: write %s: %dx%d scaled by %d exceeds %d pixels a side", path, h, w, scale, maxPNGSide)
	}
	if len(pix) != h*w {
		return fmt.Errorf("multimnist: write %s: %d pixels, want %d for %dx%d", path, len(pix), h*w, h, w)
	}
	img := image.NewGray(image.Rect(0, 0, w*scale, h*scale))
	for y := range h * scale {
		row := img.Pix[y*img.Stride:][:w*scale]
		src := pix[(y/scale)*w:][:w]
		for x := range row {
			row[x] = src[x/scale]
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return fmt.Errorf("multimnist: write %s: %w", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("multimnist: %w", err)
	}
	return nil
}

// denormalize maps a value in [-1, 1] to the nearest pixel byte, clamping
// values outside the range; NaN maps to 0, the background.
func denormalize(v float64) uint8 {
	p := math.Round((v + 1) * 127.5)
	switch {
	case !(p > 0): // also NaN
		return 0
	case p > 255:
		return 255
	}
	return uint8(p)
}

// WriteFloatPNG writes x, an h×w row-major image of normalised values, as
// WritePNG does, mapping [-1, 1] to [0, 255] with rounding and clamping
// (NaN becomes 0). It is the inverse of the normalisation up to rounding,
// and is meant for viewing perturbed or adversarial inputs.
func WriteFloatPNG[T float32 | float64](path string, x []T, h, w, scale int) error {
	pix := make([]uint8, len(x))
	for i, v := range x {
		pix[i] = denormalize(float64(v))
	}
	return WritePNG(path, pix, h, w, scale)
}

// ReadPNG reads a PNG of exactly Width×Height pixels in any color model,
// converts it to 8-bit gray (alpha is composited onto black) and returns its
// normalised values in [-1, 1], row-major, ready to feed to a model.
func ReadPNG(path string) ([]float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("multimnist: %w", err)
	}
	x, err := decodePNG(data)
	if err != nil {
		return nil, fmt.Errorf("multimnist: read %s: %w", path, err)
	}
	return x, nil
}

// decodePNG is ReadPNG on the bytes of a file. It checks the size from the
// header before decoding, so an oversized image is rejected without
// decompressing it.
func decodePNG(data []byte) ([]float64, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if cfg.Width != Width || cfg.Height != Height {
		return nil, fmt.Errorf("image is %dx%d, want %dx%d", cfg.Width, cfg.Height, Width, Height)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	if b.Dx() != Width || b.Dy() != Height {
		return nil, fmt.Errorf("image is %dx%d, want %dx%d", b.Dx(), b.Dy(), Width, Height)
	}
	x := make([]float64, CanvasPixels)
	for y := range Height {
		for c := range Width {
			g := color.GrayModel.Convert(img.At(b.Min.X+c, b.Min.Y+y)).(color.Gray)
			x[y*Width+c] = normalize(g.Y)
		}
	}
	return x, nil
}
