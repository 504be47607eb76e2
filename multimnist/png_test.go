package multimnist

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		got, err := ReadPNG(p)
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
		if err := WriteFloatPNG(p, clean, Height, Width, 1); err != nil {
			t.Fatal(err)
		}
		got, err := ReadPNG(p)
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
		if err := WriteFloatPNG(p, noisy, Height, Width, 1); err != nil {
			t.Fatal(err)
		}
		got, err := ReadPNG(p)
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
			got, err := ReadPNG(p)
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

func TestReadPNGErrors(t *testing.T) {
	dir := t.TempDir()
	scaled := filepath.Join(dir, "scaled.png")
	if err := WritePNG(scaled, make([]uint8, CanvasPixels), Height, Width, 2); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.png")
	writePNGFile(t, big, image.NewGray(image.Rect(0, 0, 200, 50)))
	transposed := filepath.Join(dir, "transposed.png")
	writePNGFile(t, transposed, image.NewGray(image.Rect(0, 0, Height, Width)))
	notPNG := filepath.Join(dir, "not.png")
	if err := os.WriteFile(notPNG, []byte("GIF89a"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want string
	}{
		{big, "is 200x50, want 112x28"},
		{scaled, "is 224x56, want 112x28"},
		{transposed, "is 28x112, want 112x28"},
		{notPNG, "png"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			_, err := ReadPNG(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path) {
				t.Fatalf("ReadPNG error = %v, want one naming %s containing %q", err, tt.path, tt.want)
			}
		})
	}
	if _, err := ReadPNG(filepath.Join(dir, "missing.png")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadPNG(missing) error = %v, want fs.ErrNotExist", err)
	}
}

func FuzzDecodePNG(f *testing.F) {
	rect := image.Rect(0, 0, Width, Height)
	f.Add(encodePNG(f, image.NewGray(rect)))
	f.Add(encodePNG(f, image.NewRGBA64(rect)))
	f.Add(encodePNG(f, image.NewNRGBA(rect)))
	f.Add(encodePNG(f, image.NewGray(image.Rect(0, 0, 3, 2))))
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := decodePNG(data)
		if err != nil {
			return
		}
		if len(x) != CanvasPixels {
			t.Fatalf("decoded %d values, want %d", len(x), CanvasPixels)
		}
		for i, v := range x {
			p := (v + 1) * 127.5
			if !(v >= -1 && v <= 1) || math.Abs(p-math.Round(p)) > 1e-9 {
				t.Fatalf("value %d is %v, not a normalised byte", i, v)
			}
		}
	})
}
