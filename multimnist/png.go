package multimnist

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"

	"github.com/lenspec/lenspec/internal/fileio"
)

// maxPNGSide bounds each side of a written PNG, so a mistaken scale fails
// with an error instead of allocating gigabytes.
const maxPNGSide = 1 << 15

// maxPNGFile caps the size of a PNG file ReadPNG reads. An enlarged canvas
// takes a few kilobytes; the cap only stops a wrong path (a disk image, a
// video) from being read into memory.
const maxPNGFile = 64 << 20

// maxPNGPixels caps the pixels of an image ReadPNG decodes, checked from the
// header before decoding, because a few bytes of PNG can declare an image
// of gigabytes. It allows canvases enlarged 36 times.
const maxPNGPixels = 1 << 22

// WritePNG writes pix, an h×w row-major grayscale image, as an 8-bit
// grayscale PNG enlarged by the integer factor scale (each pixel becomes a
// scale×scale block) so that people can look at it. ReadPNG reads such an
// enlarged image back at its original size. The file is replaced atomically
// (fileio.WriteFileAtomic), so a failed write leaves no partial PNG.
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
	if err := fileio.WriteFileAtomic(path, buf.Bytes()); err != nil {
		return fmt.Errorf("multimnist: %w", err)
	}
	return nil
}

// checkRange reports whether [lo, hi] can be mapped to and from pixel
// bytes: both ends finite, lo below hi, and their difference finite.
func checkRange(lo, hi float64) error {
	if !(lo < hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsInf(hi-lo, 0) {
		return fmt.Errorf("bad value range [%v, %v]: want finite lo < hi", lo, hi)
	}
	return nil
}

// toByte maps v in [lo, hi] linearly to the nearest pixel byte, clamping
// values outside the range; NaN maps to 0, the background.
func toByte(v, lo, hi float64) uint8 {
	p := math.Round((v - lo) / (hi - lo) * 255)
	switch {
	case !(p > 0): // also NaN
		return 0
	case p > 255:
		return 255
	}
	return uint8(p)
}

// byteLevels returns the value of each pixel byte mapped linearly from
// 0..255 to [lo, hi]. The expression is the one NormalizeRange uses, so a
// PNG and the data set give a model bit-identical numbers (0 gives lo; 255
// gives hi up to rounding).
func byteLevels(lo, hi float64) *[256]float64 {
	var t [256]float64
	for p := range t {
		t[p] = lo + float64(p)/255*(hi-lo)
	}
	return &t
}

// WriteFloatPNG writes x, an h×w row-major image of values in [lo, hi], as
// WritePNG does, mapping [lo, hi] linearly to 0..255 with rounding and
// clamping (NaN becomes 0). It is the inverse of ReadPNG with the same range
// up to rounding, exact for values that are byte levels, and is meant for
// viewing perturbed or adversarial inputs: lo and hi are the model's input
// range, such as [-1, 1] or [0, 1].
func WriteFloatPNG[T float32 | float64](path string, x []T, h, w, scale int, lo, hi float64) error {
	if err := checkRange(lo, hi); err != nil {
		return fmt.Errorf("multimnist: write %s: %w", path, err)
	}
	pix := make([]uint8, len(x))
	for i, v := range x {
		pix[i] = toByte(float64(v), lo, hi)
	}
	return WritePNG(path, pix, h, w, scale)
}

// ReadPNG reads a PNG holding an h×w image and returns its h·w values,
// row-major, with pixel bytes 0..255 mapped linearly to [lo, hi], the
// model's input range (byte p gives lo + p/255·(hi − lo), as NormalizeRange
// computes it), ready to feed to a model.
//
// The image may also be an integer multiple k·w × k·h of the wanted size
// provided every k×k block is uniform, as WritePNG's enlargement (nearest
// neighbour) produces; each block gives one value. Any other size, or a
// block that is not uniform, is an error naming the path, the size found and
// the size wanted.
//
// Any colour model is accepted. Colour is converted to 8-bit gray with
// image/color's GrayModel: luma 0.299 R + 0.587 G + 0.114 B of the
// alpha-premultiplied components, so transparency fades to black; 16-bit
// samples are reduced to 8 bits. Blocks are compared after that conversion.
//
// Anything but a regular file, or a file over 64 MiB, is refused before it
// is read (see fileio.ReadRegular).
func ReadPNG(path string, h, w int, lo, hi float64) ([]float64, error) {
	if h <= 0 || w <= 0 {
		return nil, fmt.Errorf("multimnist: read %s: bad wanted size %dx%d", path, w, h)
	}
	if err := checkRange(lo, hi); err != nil {
		return nil, fmt.Errorf("multimnist: read %s: %w", path, err)
	}
	data, err := fileio.ReadRegular(path, maxPNGFile)
	if err != nil {
		return nil, fmt.Errorf("multimnist: %w", err)
	}
	x, err := decodePNG(data, h, w, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("multimnist: read %s: %w", path, err)
	}
	return x, nil
}

// decodePNG is ReadPNG on the bytes of a file, for h, w positive and a
// range checkRange accepts. It checks the size from the header before
// decoding, so an image of the wrong size, or an enormous one, is rejected
// without decompressing it.
func decodePNG(data []byte, h, w int, lo, hi float64) ([]float64, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	k, err := scaleOf(cfg.Width, cfg.Height, w, h)
	if err != nil {
		return nil, err
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	if b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return nil, fmt.Errorf("image is %dx%d, but its header says %dx%d", b.Dx(), b.Dy(), cfg.Width, cfg.Height)
	}
	gray := toGray(img)
	levels := byteLevels(lo, hi)
	x := make([]float64, h*w)
	W := w * k
	for r := range h {
		for c := range w {
			v := gray[r*k*W+c*k]
			for y := r * k; y < (r+1)*k; y++ {
				for _, u := range gray[y*W+c*k:][:k] {
					if u != v {
						return nil, fmt.Errorf("image is %dx%d, %d times the wanted %dx%d, but its %dx%d block at row %d, column %d is not uniform as in an enlarged image",
							W, h*k, k, w, h, k, k, r, c)
					}
				}
			}
			x[r*w+c] = levels[v]
		}
	}
	return x, nil
}

// scaleOf returns k if a W×H image is k times a w×h one, for an integer k
// that keeps the image within maxPNGPixels.
func scaleOf(W, H, w, h int) (int, error) {
	if W%w != 0 || H%h != 0 || W/w != H/h || W == 0 {
		return 0, fmt.Errorf("image is %dx%d, want %dx%d or an integer multiple of it", W, H, w, h)
	}
	// A division rather than W*H, which could overflow.
	if W > maxPNGPixels/H {
		return 0, fmt.Errorf("image is %dx%d, %d times %dx%d, more than %d pixels", W, H, W/w, w, h, maxPNGPixels)
	}
	return W / w, nil
}

// toGray returns img's pixels as 8-bit gray, row-major from its top-left
// corner, converting other models with color.GrayModel.
func toGray(img image.Image) []uint8 {
	b := img.Bounds()
	W, H := b.Dx(), b.Dy()
	out := make([]uint8, W*H)
	if g, ok := img.(*image.Gray); ok {
		for y := range H {
			copy(out[y*W:][:W], g.Pix[g.PixOffset(b.Min.X, b.Min.Y+y):][:W])
		}
		return out
	}
	for y := range H {
		for x := range W {
			out[y*W+x] = color.GrayModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.Gray).Y
		}
	}
	return out
}

// Preview is a canvas written as a PNG file, with its index and label.
type Preview struct {
	Index int    `json:"index"`
	Label []int  `json:"label"`
	PNG   string `json:"png"`
}

// WritePreviews writes the first count canvases of ds (all of them if it
// has fewer), enlarged scale times, to dir (created) as
// NAME-IIIII.png, NAME the split's name and IIIII the canvas's index.
func WritePreviews(ds *Dataset, dir, name string, count, scale int) ([]Preview, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []Preview
	for i := 0; i < min(count, ds.N); i++ {
		p := filepath.Join(dir, fmt.Sprintf("%s-%05d.png", name, i))
		if err := WritePNG(p, ds.Canvas(i), Height, Width, scale); err != nil {
			return nil, err
		}
		out = append(out, Preview{i, ds.Labels[i], p})
	}
	return out, nil
}
