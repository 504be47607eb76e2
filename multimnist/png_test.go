package multimnist

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lenspec/lenspec/internal/fileio"
)

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writePNGFile(t *testing.T, path string, img image.Image) {
	t.Helper()
	if err := os.WriteFile(path, encodePNG(t, img), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWritePNGScale(t *testing.T) {
	const h, w, scale = 2, 3, 3
	pix := []uint8{0, 10, 20, 30, 40, 255}
	p := filepath.Join(t.TempDir(), "x.png")
	if err := WritePNG(p, pix, h, w, scale); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := img.(*image.Gray)
	if !ok {
		t.Fatalf("decoded %T, want an 8-bit grayscale *image.Gray", img)
	}
	if b := g.Bounds(); b.Dx() != w*scale || b.Dy() != h*scale {
		t.Fatalf("image is %dx%d, want %dx%d", b.Dx(), b.Dy(), w*scale, h*scale)
	}
	for y := range h * scale {
		for x := range w * scale {
			if got, want := g.GrayAt(x, y).Y, pix[(y/scale)*w+x/scale]; got != want {
				t.Fatalf("pixel (%d,%d) = %d, want %d", x, y, got, want)
			}
		}
	}
}

func TestWritePNGErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name        string
		pix         []uint8
		h, w, scale int
		want        string
	}{
		{"length mismatch", make([]uint8, 5), 2, 3, 1, "5 pixels, want 6"},
		{"zero height", nil, 0, 3, 1, "bad shape"},
		{"zero scale", make([]uint8, 6), 2, 3, 0, "bad shape"},
		{"huge scale", make([]uint8, 6), 2, 3, 1 << 20, "exceeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name+".png")
			err := WritePNG(p, tt.pix, tt.h, tt.w, tt.scale)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("WritePNG error = %v, want one naming %s containing %q", err, p, tt.want)
			}
			if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("failed WritePNG left %s behind", p)
			}
		})
	}
	if err := WritePNG(filepath.Join(dir, "no", "such", "dir.png"), make([]uint8, 6), 2, 3, 1); err == nil {
		t.Error("WritePNG into a missing directory succeeded")
	}
}

func TestPNGRoundTrip(t *testing.T) {
	d, err := Generate(syntheticSet(10, 1), 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	noisy := make([]float64, CanvasPixels)
	for i := range noisy {
		noisy[i] = r.Float64()*2.4 - 1.2 // includes values to clamp
	}
	noisy[0], noisy[1] = math.NaN(), math.Inf(1)
	clean := make([]float32, CanvasPixels)
	Normalize(clean, d, []int{3})

	t.Run("bytes", func(t *testing.T) {
		p := filepath.Join(dir, "bytes.png")
		if err := WritePNG(p, d.Canvas(3), Height, Width, 1); err != nil {
			t.Fatal(err)
		}
		got, err := ReadPNG(p, Height, Width, -1, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if want := float64(clean[i]); math.Abs(v-want) > 1e-6 {
				t.Fatalf("pixel %d: read %v, want %v", i, v, want)
			}
		}
	})
	t.Run("float32", func(t *testing.T) {
		p := filepath.Join(dir, "clean.png")
		if err := WriteFloatPNG(p, clean, Height, Width, 1, -1, 1); err != nil {
			t.Fatal(err)
		}
		got, err := ReadPNG(p, Height, Width, -1, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if want := float64(clean[i]); math.Abs(v-want) > 1e-6 {
				t.Fatalf("pixel %d: read %v, want %v", i, v, want)
			}
		}
	})
	t.Run("float64 with clamping", func(t *testing.T) {
		p := filepath.Join(dir, "noisy.png")
		if err := WriteFloatPNG(p, noisy, Height, Width, 1, -1, 1); err != nil {
			t.Fatal(err)
		}
		got, err := ReadPNG(p, Height, Width, -1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != -1 || got[1] != 1 {
			t.Errorf("NaN read back as %v and +Inf as %v, want -1 and 1", got[0], got[1])
		}
		for i := 2; i < len(got); i++ {
			want := max(-1, min(1, noisy[i]))
			if math.Abs(got[i]-want) > 0.5/127.5+1e-12 {
				t.Fatalf("pixel %d: wrote %v, read %v, want within 1/255 of %v", i, noisy[i], got[i], want)
			}
		}
	})
}

func TestReadPNGColorModels(t *testing.T) {
	dir := t.TempDir()
	rect := image.Rect(0, 0, Width, Height)
	rgba := image.NewRGBA(rect)
	gray16 := image.NewGray16(rect)
	pal := image.NewPaletted(rect, color.Palette{color.Gray{0}, color.Gray{51}, color.Gray{255}})
	want := make([]float64, CanvasPixels)
	for y := range Height {
		for x := range Width {
			v := uint8((x*7 + y*3) % 256)
			rgba.SetRGBA(x, y, color.RGBA{v, v, v, 255})
			gray16.SetGray16(x, y, color.Gray16{uint16(v) * 0x101})
			want[y*Width+x] = float64(v)/127.5 - 1
		}
	}
	for y := range Height {
		for x := range Width {
			pal.SetColorIndex(x, y, uint8(x%3))
		}
	}
	tests := []struct {
		name string
		img  image.Image
		want func(i int) float64
	}{
		{"rgba", rgba, func(i int) float64 { return want[i] }},
		{"gray16", gray16, func(i int) float64 { return want[i] }},
		{"paletted", pal, func(i int) float64 { return []float64{-1, 51/127.5 - 1, 1}[(i%Width)%3] }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name+".png")
			writePNGFile(t, p, tt.img)
			got, err := ReadPNG(p, Height, Width, -1, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != CanvasPixels {
				t.Fatalf("ReadPNG returned %d values, want %d", len(got), CanvasPixels)
			}
			for i, v := range got {
				if w := tt.want(i); math.Abs(v-w) > 1e-9 {
					t.Fatalf("pixel %d: %v, want %v", i, v, w)
				}
			}
		})
	}
}

// levelsOf returns random h×w pixel bytes and the values ReadPNG gives for
// them in [lo, hi]: inputs that are exact byte levels.
func levelsOf(r *rand.Rand, h, w int, lo, hi float64) ([]uint8, []float64) {
	pix := make([]uint8, h*w)
	x := make([]float64, h*w)
	levels := byteLevels(lo, hi)
	for i := range pix {
		pix[i] = uint8(r.IntN(256))
		x[i] = levels[pix[i]]
	}
	pix[0], pix[len(pix)-1] = 0, 255 // both ends of the range
	x[0], x[len(x)-1] = levels[0], levels[255]
	return pix, x
}

// TestPNGRangeRoundTrip checks that WriteFloatPNG and ReadPNG with the same
// range are inverse on byte levels, for enlarged images too, and that the
// levels are exactly what the range says.
func TestPNGRangeRoundTrip(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	ranges := [][2]float64{{-1, 1}, {0, 1}, {0.1, 0.3}, {-255, 0}, {0, 255}}
	shapes := [][2]int{{Height, Width}, {5, 7}, {1, 1}}
	for _, rg := range ranges {
		lo, hi := rg[0], rg[1]
		for _, sh := range shapes {
			h, w := sh[0], sh[1]
			pix, x := levelsOf(r, h, w, lo, hi)
			for _, scale := range []int{1, 4} {
				p := filepath.Join(dir, "x.png")
				if err := WriteFloatPNG(p, x, h, w, scale, lo, hi); err != nil {
					t.Fatal(err)
				}
				got, err := ReadPNG(p, h, w, lo, hi)
				if err != nil {
					t.Fatalf("[%v, %v] %dx%d scale %d: %v", lo, hi, w, h, scale, err)
				}
				if len(got) != h*w {
					t.Fatalf("ReadPNG returned %d values, want %d", len(got), h*w)
				}
				for i := range got {
					if got[i] != x[i] {
						t.Fatalf("[%v, %v] %dx%d scale %d: value %d wrote %v, read %v", lo, hi, w, h, scale, i, x[i], got[i])
					}
				}
				// The bytes on disk are the pixels, whatever the range.
				if err := WritePNG(p, pix, h, w, scale); err != nil {
					t.Fatal(err)
				}
				if again, err := ReadPNG(p, h, w, lo, hi); err != nil || !slices.Equal(again, got) {
					t.Fatalf("WritePNG of the same pixels read back differently: %v", err)
				}
			}
		}
	}
	levels := byteLevels(0, 1)
	if levels[0] != 0 || levels[51] != 0.2 || levels[255] != 1 {
		t.Errorf("[0, 1] levels 0, 51, 255 are %v, %v, %v", levels[0], levels[51], levels[255])
	}
	levels = byteLevels(-1, 1)
	for p := range 256 {
		if want := float64(p)/127.5 - 1; levels[p] != want {
			t.Fatalf("[-1, 1] level %d is %v, want p/127.5 - 1 = %v as Normalize", p, levels[p], want)
		}
	}
}

// TestWriteFloatPNGRange checks the mapping, rounding and clamping of
// WriteFloatPNG for a range other than [-1, 1].
func TestWriteFloatPNGRange(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.png")
	x := []float32{0, 1, 0.5, -3, 7, float32(math.NaN()), 0.2}
	if err := WriteFloatPNG(p, x, 1, len(x), 1, 0, 1); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(mustRead(t, p)))
	if err != nil {
		t.Fatal(err)
	}
	want := []uint8{0, 255, 128, 0, 255, 0, 51}
	for i, b := range want {
		if got := img.(*image.Gray).GrayAt(i, 0).Y; got != b {
			t.Errorf("%v wrote byte %d, want %d", x[i], got, b)
		}
	}
	for _, rg := range [][2]float64{{1, 1}, {1, 0}, {math.NaN(), 1}, {0, math.Inf(1)}, {-math.MaxFloat64, math.MaxFloat64}} {
		err := WriteFloatPNG(p, x, 1, len(x), 1, rg[0], rg[1])
		if err == nil || !strings.Contains(err.Error(), "bad value range") || !strings.Contains(err.Error(), p) {
			t.Errorf("WriteFloatPNG range %v = %v, want a bad-range error naming %s", rg, err, p)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadPNGScaled checks that an enlarged image is read at the wanted
// size, as `lenspec data multimnist` writes them 4 times larger.
func TestReadPNGScaled(t *testing.T) {
	d, err := Generate(syntheticSet(10, 1), 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	want := make([]float64, CanvasPixels)
	Normalize(want, d, []int{2})
	for _, scale := range []int{1, 2, 4, 7} {
		p := filepath.Join(dir, "canvas.png")
		if err := WritePNG(p, d.Canvas(2), Height, Width, scale); err != nil {
			t.Fatal(err)
		}
		got, err := ReadPNG(p, Height, Width, -1, 1)
		if err != nil {
			t.Fatalf("scale %d: %v", scale, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("scale %d: values differ from Normalize", scale)
		}
	}
	// An RGBA enlargement is compared after conversion to gray.
	rgba := image.NewRGBA(image.Rect(0, 0, 3*4, 2*4))
	for y := range 8 {
		for x := range 12 {
			v := uint8(40 * (y/4*3 + x/4))
			rgba.SetRGBA(x, y, color.RGBA{v, v, v, 255})
		}
	}
	p := filepath.Join(dir, "rgba.png")
	writePNGFile(t, p, rgba)
	got, err := ReadPNG(p, 2, 3, 0, 255)
	if err != nil || !slices.Equal(got, []float64{0, 40, 80, 120, 160, 200}) {
		t.Errorf("ReadPNG(rgba 4x) = %v, %v", got, err)
	}
}

func TestReadPNGErrors(t *testing.T) {
	dir := t.TempDir()
	scaledBy2 := filepath.Join(dir, "scaled.png")
	if err := WritePNG(scaledBy2, make([]uint8, CanvasPixels), Height, Width, 2); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.png")
	writePNGFile(t, big, image.NewGray(image.Rect(0, 0, 200, 50)))
	transposed := filepath.Join(dir, "transposed.png")
	writePNGFile(t, transposed, image.NewGray(image.Rect(0, 0, Height, Width)))
	stretched := filepath.Join(dir, "stretched.png")
	writePNGFile(t, stretched, image.NewGray(image.Rect(0, 0, 2*Width, Height)))
	enormous := filepath.Join(dir, "enormous.png")
	writePNGFile(t, enormous, image.NewGray(image.Rect(0, 0, 40*Width, 40*Height)))
	// An enlargement with one pixel changed in the block at row 1, column 2.
	speck := image.NewGray(image.Rect(0, 0, 4*Width, 4*Height))
	speck.SetGray(4*2+3, 4*1+1, color.Gray{9})
	specked := filepath.Join(dir, "specked.png")
	writePNGFile(t, specked, speck)
	notPNG := filepath.Join(dir, "not.png")
	if err := os.WriteFile(notPNG, []byte("GIF89a"), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.png")
	if err := os.WriteFile(huge, encodePNG(t, image.NewGray(image.Rect(0, 0, Width, Height))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 65<<20); err != nil { // sparse
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.png")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path   string
		h, w   int
		lo, hi float64
		want   string
		is     error
	}{
		{big, Height, Width, -1, 1, "image is 200x50, want 112x28 or an integer multiple of it", nil},
		{scaledBy2, Height / 2, Width, -1, 1, "image is 224x56, want 112x14 or an integer multiple of it", nil},
		{transposed, Height, Width, -1, 1, "image is 28x112, want 112x28", nil},
		{stretched, Height, Width, -1, 1, "image is 224x28, want 112x28", nil},
		{enormous, Height, Width, -1, 1, "image is 4480x1120, 40 times 112x28, more than 4194304 pixels", nil},
		{specked, Height, Width, -1, 1, "image is 448x112, 4 times the wanted 112x28, but its 4x4 block at row 1, column 2 is not uniform", nil},
		{notPNG, Height, Width, -1, 1, "png", nil},
		{huge, Height, Width, -1, 1, "file too large", fileio.ErrTooLarge},
		{fifo, Height, Width, -1, 1, "not a regular file (it is a FIFO)", fileio.ErrNotRegular},
		{dir, Height, Width, -1, 1, "not a regular file (it is a directory)", fileio.ErrNotRegular},
		{big, 0, Width, -1, 1, "bad wanted size 112x0", nil},
		{big, Height, Width, 1, -1, "bad value range [1, -1]", nil},
		{big, Height, Width, math.NaN(), 1, "bad value range [NaN, 1]", nil},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := ReadPNG(tt.path, tt.h, tt.w, tt.lo, tt.hi); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("ReadPNG(%s) blocked", tt.path)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path) {
				t.Fatalf("ReadPNG error = %v, want one naming %s containing %q", err, tt.path, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("ReadPNG error = %v, want it to wrap %v", err, tt.is)
			}
		})
	}
	if _, err := ReadPNG(filepath.Join(dir, "missing.png"), Height, Width, -1, 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadPNG(missing) error = %v, want fs.ErrNotExist", err)
	}
}

// FuzzDecodePNG checks that decodePNG never panics on any bytes and wanted
// size, returns h·w byte levels of the range when it accepts, and gives the
// same values again for its output written at scale 1.
func FuzzDecodePNG(f *testing.F) {
	rect := image.Rect(0, 0, Width, Height)
	f.Add(encodePNG(f, image.NewGray(rect)), uint8(Height), uint8(Width), false)
	f.Add(encodePNG(f, image.NewRGBA64(rect)), uint8(Height), uint8(Width), true)
	f.Add(encodePNG(f, image.NewNRGBA(rect)), uint8(Height), uint8(Width), false)
	f.Add(encodePNG(f, image.NewGray(image.Rect(0, 0, 3, 2))), uint8(2), uint8(3), true)
	f.Add(encodePNG(f, image.NewGray(image.Rect(0, 0, 4*Width, 4*Height))), uint8(Height), uint8(Width), false)
	speck := image.NewGray(image.Rect(0, 0, 12, 8))
	speck.SetGray(5, 5, color.Gray{200})
	f.Add(encodePNG(f, speck), uint8(2), uint8(3), true)
	f.Add(encodePNG(f, speck), uint8(8), uint8(12), false)
	f.Add([]byte("\x89PNG\r\n\x1a\n"), uint8(1), uint8(1), false)
	f.Fuzz(func(t *testing.T, data []byte, h8, w8 uint8, unit bool) {
		h, w := int(h8)+1, int(w8)+1
		lo, hi := -1.0, 1.0
		if unit {
			lo, hi = 0, 1
		}
		x, err := decodePNG(data, h, w, lo, hi)
		if err != nil {
			return
		}
		if len(x) != h*w {
			t.Fatalf("decoded %d values, want %d", len(x), h*w)
		}
		levels := byteLevels(lo, hi)
		pix := make([]uint8, len(x))
		for i, v := range x {
			p := math.Round((v - lo) / (hi - lo) * 255)
			if !(p >= 0 && p <= 255) || levels[int(p)] != v {
				t.Fatalf("value %d is %v, not a byte level of [%v, %v]", i, v, lo, hi)
			}
			pix[i] = uint8(p)
		}
		img := image.NewGray(image.Rect(0, 0, w, h))
		copy(img.Pix, pix)
		again, err := decodePNG(encodePNG(t, img), h, w, lo, hi)
		if err != nil || !slices.Equal(again, x) {
			t.Fatalf("re-decoding the pixels gave %v, %v", again, err)
		}
	})
}

// TestWritePreviews: the first canvases are written as enlarged PNGs
// named by split and index, which read back as the canvases, with their
// labels; asking for more than there are writes them all.
func TestWritePreviews(t *testing.T) {
	ds, err := Generate(syntheticSet(10, 1), 3, 7)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	items, err := WritePreviews(ds, dir, "test", 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 {
		t.Fatalf("%d previews of 3 canvases", len(items))
	}
	for i, it := range items {
		if it.Index != i || it.PNG != filepath.Join(dir, fmt.Sprintf("test-%05d.png", i)) || !slices.Equal(it.Label, ds.Labels[i]) {
			t.Errorf("preview %d: %+v", i, it)
		}
		x, err := ReadPNG(it.PNG, Height, Width, 0, 255)
		if err != nil {
			t.Fatal(err)
		}
		for j, p := range ds.Canvas(i) {
			if math.Abs(x[j]-float64(p)) > 1e-9 {
				t.Fatalf("preview %d pixel %d: %v, want %d", i, j, x[j], p)
			}
		}
	}
}
