package mnist

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// encodeImages returns an IDX3 image file with the given header fields and
// body, which need not be consistent so malformed files can be built.
func encodeImages(magic, count, rows, cols uint32, body []byte) []byte {
	b := make([]byte, imagesHeaderLen, imagesHeaderLen+len(body))
	binary.BigEndian.PutUint32(b[0:], magic)
	binary.BigEndian.PutUint32(b[4:], count)
	binary.BigEndian.PutUint32(b[8:], rows)
	binary.BigEndian.PutUint32(b[12:], cols)
	return append(b, body...)
}

// encodeLabels returns an IDX1 label file with the given header fields.
func encodeLabels(magic, count uint32, labels []byte) []byte {
	b := make([]byte, labelsHeaderLen, labelsHeaderLen+len(labels))
	binary.BigEndian.PutUint32(b[0:], magic)
	binary.BigEndian.PutUint32(b[4:], count)
	return append(b, labels...)
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// randomSet returns a set of n examples with random pixels and labels.
func randomSet(n int, seed uint64) *Set {
	r := rand.New(rand.NewPCG(seed, 1))
	s := &Set{N: n, Images: make([]uint8, n*Pixels), Labels: make([]uint8, n)}
	for i := range s.Images {
		s.Images[i] = uint8(r.IntN(256))
	}
	for i := range s.Labels {
		s.Labels[i] = uint8(r.IntN(NumClasses))
	}
	return s
}

func setImagesFile(s *Set) []byte {
	return encodeImages(ImagesMagic, uint32(s.N), Rows, Cols, s.Images)
}

func setLabelsFile(s *Set) []byte {
	return encodeLabels(LabelsMagic, uint32(s.N), s.Labels)
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeSplit writes s as the named image and label files in dir, gzipped
// (with a .gz suffix) if gz is set.
func writeSplit(t testing.TB, dir, imagesName, labelsName string, s *Set, gz bool) {
	t.Helper()
	img, lab := setImagesFile(s), setLabelsFile(s)
	if gz {
		img, lab = gzipBytes(t, img), gzipBytes(t, lab)
		imagesName += ".gz"
		labelsName += ".gz"
	}
	writeFile(t, filepath.Join(dir, imagesName), img)
	writeFile(t, filepath.Join(dir, labelsName), lab)
}

func TestDecodeRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 5} {
		for _, gz := range []bool{false, true} {
			s := randomSet(n, uint64(n))
			img, lab := setImagesFile(s), setLabelsFile(s)
			if gz {
				img, lab = gzipBytes(t, img), gzipBytes(t, lab)
			}
			gotN, images, err := DecodeImages(bytes.NewReader(img))
			if err != nil {
				t.Fatalf("n=%d gz=%v: DecodeImages: %v", n, gz, err)
			}
			if gotN != n || !bytes.Equal(images, s.Images) {
				t.Errorf("n=%d gz=%v: DecodeImages gave %d images, want %d with the written pixels", n, gz, gotN, n)
			}
			labels, err := DecodeLabels(bytes.NewReader(lab))
			if err != nil {
				t.Fatalf("n=%d gz=%v: DecodeLabels: %v", n, gz, err)
			}
			if !bytes.Equal(labels, s.Labels) {
				t.Errorf("n=%d gz=%v: DecodeLabels = %v, want %v", n, gz, labels, s.Labels)
			}
		}
	}
}

func TestDecodeImagesMalformed(t *testing.T) {
	two := make([]byte, 2*Pixels)
	valid := encodeImages(ImagesMagic, 2, Rows, Cols, two)
	corruptGzip := gzipBytes(t, valid)
	corruptGzip = corruptGzip[:len(corruptGzip)-10]
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "truncated header"},
		{"short header", valid[:10], "truncated header"},
		{"bad magic", encodeImages(LabelsMagic, 2, Rows, Cols, two), "bad magic 0x00000801, want 0x00000803"},
		{"int magic", encodeImages(0x00000c03, 2, Rows, Cols, two), "bad magic"},
		{"wrong rows", encodeImages(ImagesMagic, 2, 27, Cols, two), "images are 27x28, want 28x28"},
		{"wrong cols", encodeImages(ImagesMagic, 2, Rows, 32, two), "images are 28x32, want 28x28"},
		{"truncated body", valid[:len(valid)-1], "truncated: 1567 bytes of pixels for 2 images, want 1568"},
		{"trailing data", append(bytes.Clone(valid), 0), "trailing data"},
		{"count too large", encodeImages(ImagesMagic, 3, Rows, Cols, two), "truncated"},
		{"count too small", encodeImages(ImagesMagic, 1, Rows, Cols, two), "trailing data"},
		{"huge count", encodeImages(ImagesMagic, 0xffffffff, Rows, Cols, two), "truncated"},
		{"corrupt gzip", corruptGzip, "unexpected EOF"},
		{"gzip header only", []byte{0x1f, 0x8b}, "gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := DecodeImages(bytes.NewReader(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DecodeImages error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestDecodeLabelsMalformed(t *testing.T) {
	valid := encodeLabels(LabelsMagic, 3, []byte{0, 9, 4})
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "truncated header"},
		{"short header", valid[:7], "truncated header"},
		{"bad magic", encodeLabels(ImagesMagic, 3, []byte{0, 9, 4}), "bad magic 0x00000803, want 0x00000801"},
		{"truncated", valid[:len(valid)-1], "truncated: 2 bytes of labels for 3 items, want 3"},
		{"trailing", append(bytes.Clone(valid), 1), "trailing data"},
		{"label out of range", encodeLabels(LabelsMagic, 3, []byte{0, 9, 10}), "label 10 at index 2 out of range 0..9"},
		{"label 255", encodeLabels(LabelsMagic, 1, []byte{255}), "label 255 at index 0"},
		{"gzip out of range", gzipBytes(t, encodeLabels(LabelsMagic, 1, []byte{12})), "label 12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeLabels(bytes.NewReader(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DecodeLabels error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestReadErrorsNameFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bad-idx")
	writeFile(t, p, encodeLabels(LabelsMagic, 1, []byte{11}))
	if _, _, err := ReadImages(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "bad magic") {
		t.Errorf("ReadImages error = %v, want one naming %s and the bad magic", err, p)
	}
	if _, err := ReadLabels(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "label 11") {
		t.Errorf("ReadLabels error = %v, want one naming %s and the label", err, p)
	}
	missing := filepath.Join(dir, "missing")
	if _, err := ReadLabels(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadLabels(missing) error = %v, want fs.ErrNotExist", err)
	}
}

func TestLoad(t *testing.T) {
	train, test := randomSet(7, 1), randomSet(3, 2)
	for _, gz := range []bool{false, true} {
		dir := t.TempDir()
		writeSplit(t, dir, TrainImagesFile, TrainLabelsFile, train, gz)
		writeSplit(t, dir, TestImagesFile, TestLabelsFile, test, !gz)
		gotTrain, gotTest, err := Load(dir)
		if err != nil {
			t.Fatalf("gz=%v: Load: %v", gz, err)
		}
		for _, c := range []struct{ got, want *Set }{{gotTrain, train}, {gotTest, test}} {
			if c.got.N != c.want.N || !bytes.Equal(c.got.Images, c.want.Images) || !bytes.Equal(c.got.Labels, c.want.Labels) {
				t.Errorf("gz=%v: Load gave a set of %d, want the %d written", gz, c.got.N, c.want.N)
			}
			if err := c.got.Validate(); err != nil {
				t.Errorf("gz=%v: loaded set invalid: %v", gz, err)
			}
		}
		if got, want := gotTrain.Image(6), train.Images[6*Pixels:]; !bytes.Equal(got, want) {
			t.Errorf("gz=%v: Image(6) differs from the written image", gz)
		}
	}
}

func TestLoadPrefersRaw(t *testing.T) {
	dir := t.TempDir()
	raw, gz := randomSet(2, 1), randomSet(4, 2)
	for _, s := range []struct {
		set *Set
		gz  bool
	}{{raw, false}, {gz, true}} {
		writeSplit(t, dir, TrainImagesFile, TrainLabelsFile, s.set, s.gz)
		writeSplit(t, dir, TestImagesFile, TestLabelsFile, s.set, s.gz)
	}
	train, test, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 2 || test.N != 2 {
		t.Errorf("Load read %d/%d examples, want the raw files' 2/2", train.N, test.N)
	}
}

func TestLoadErrors(t *testing.T) {
	s3, s2 := randomSet(3, 1), randomSet(2, 2)
	t.Run("count mismatch", func(t *testing.T) {
		dir := t.TempDir()
		writeSplit(t, dir, TrainImagesFile, TrainLabelsFile, s3, false)
		writeSplit(t, dir, TestImagesFile, TestLabelsFile, s3, false)
		writeFile(t, filepath.Join(dir, TestLabelsFile), setLabelsFile(s2))
		_, _, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), "holds 3 images but") || !strings.Contains(err.Error(), filepath.Join(dir, TestLabelsFile)+" holds 2 labels") {
			t.Fatalf("Load error = %v, want a count mismatch naming both files", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		dir := t.TempDir()
		writeSplit(t, dir, TrainImagesFile, TrainLabelsFile, s3, false)
		_, _, err := Load(dir)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), TestImagesFile) {
			t.Fatalf("Load error = %v, want fs.ErrNotExist naming %s", err, TestImagesFile)
		}
	})
	t.Run("malformed file", func(t *testing.T) {
		dir := t.TempDir()
		writeSplit(t, dir, TrainImagesFile, TrainLabelsFile, s3, true)
		writeSplit(t, dir, TestImagesFile, TestLabelsFile, s3, false)
		p := filepath.Join(dir, TrainLabelsFile+".gz")
		writeFile(t, p, gzipBytes(t, encodeLabels(LabelsMagic, 3, []byte{1, 2, 99})))
		_, _, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "label 99") {
			t.Fatalf("Load error = %v, want one naming %s and label 99", err, p)
		}
	})
	t.Run("directory in place of file", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, TrainImagesFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("Load error = %v, want 'not a regular file'", err)
		}
	})
}

func TestSetValidate(t *testing.T) {
	good := randomSet(2, 1)
	tests := []struct {
		name string
		set  *Set
		want string // empty for valid
	}{
		{"valid", good, ""},
		{"empty", &Set{}, ""},
		{"nil", nil, "nil set"},
		{"negative", &Set{N: -1}, "negative"},
		{"short images", &Set{N: 2, Images: good.Images[:Pixels], Labels: good.Labels}, "image bytes"},
		{"short labels", &Set{N: 2, Images: good.Images, Labels: good.Labels[:1]}, "1 labels, want 2"},
		{"bad label", &Set{N: 2, Images: good.Images, Labels: []uint8{3, 10}}, "label 10 at index 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.set.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func FuzzDecodeImages(f *testing.F) {
	one := encodeImages(ImagesMagic, 1, Rows, Cols, randomSet(1, 3).Images)
	f.Add(one)
	f.Add(gzipBytes(f, one))
	f.Add(encodeImages(ImagesMagic, 0, Rows, Cols, nil))
	f.Add(encodeImages(ImagesMagic, 0xffffffff, Rows, Cols, nil))
	f.Add(one[:20])
	f.Add([]byte{0x1f, 0x8b, 8, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		n, images, err := DecodeImages(bytes.NewReader(data))
		if err != nil {
			return
		}
		if n < 0 || len(images) != n*Pixels {
			t.Fatalf("DecodeImages gave n=%d with %d pixel bytes", n, len(images))
		}
		if !bytes.HasPrefix(data, gzipMagic) {
			if re := encodeImages(ImagesMagic, uint32(n), Rows, Cols, images); !bytes.Equal(re, data) {
				t.Fatalf("accepted raw input does not re-encode to itself")
			}
		}
	})
}

func FuzzDecodeLabels(f *testing.F) {
	three := encodeLabels(LabelsMagic, 3, []byte{5, 0, 9})
	f.Add(three)
	f.Add(gzipBytes(f, three))
	f.Add(encodeLabels(LabelsMagic, 1, []byte{10}))
	f.Add(encodeLabels(LabelsMagic, 0xffffffff, nil))
	f.Add(three[:5])
	f.Fuzz(func(t *testing.T, data []byte) {
		labels, err := DecodeLabels(bytes.NewReader(data))
		if err != nil {
			return
		}
		for i, l := range labels {
			if l >= NumClasses {
				t.Fatalf("accepted label %d at index %d", l, i)
			}
		}
		if !bytes.HasPrefix(data, gzipMagic) {
			if re := encodeLabels(LabelsMagic, uint32(len(labels)), labels); !bytes.Equal(re, data) {
				t.Fatalf("accepted raw input does not re-encode to itself")
			}
		}
	})
}
