// Package mnist reads the MNIST handwritten digit database in its original
// IDX format, and fetches, imports and verifies a pinned copy of it.
//
// The four IDX files may be stored raw or gzip-compressed; compression is
// detected from the content, not the file name, so a mislabelled file still
// decodes. A file is accepted only if its header, dimensions, size and label
// values are all consistent, so a Set returned by this package can be indexed
// without further checks.
package mnist

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/lenspec/lenspec/internal/fileio"
)

// Image geometry of every MNIST digit.
const (
	Rows   = 28
	Cols   = 28
	Pixels = Rows * Cols // bytes per image
)

// Number of distinct labels; labels are 0..NumClasses-1.
const NumClasses = 10

// IDX magic numbers: two zero bytes, the element type (0x08 = unsigned byte)
// and the number of dimensions.
const (
	ImagesMagic = 0x00000803
	LabelsMagic = 0x00000801
)

const (
	imagesHeaderLen = 16 // magic, count, rows, cols
	labelsHeaderLen = 8  // magic, count
)

// Set is one split of MNIST.
type Set struct {
	// N is the number of examples.
	N int
	// Images holds N images of Rows×Cols bytes each, row-major, one byte
	// per pixel with 0 as background and 255 as full ink.
	Images []uint8
	// Labels holds the N digit classes, each in 0..9.
	Labels []uint8
}

// Image returns the Pixels bytes of image i, aliasing s.Images.
func (s *Set) Image(i int) []uint8 {
	return s.Images[i*Pixels : (i+1)*Pixels]
}

// Validate reports whether s is internally consistent: N non-negative, the
// slice lengths matching N and every label in 0..9. Sets built by hand (for
// example synthetic ones in tests) should be checked before use.
func (s *Set) Validate() error {
	switch {
	case s == nil:
		return errors.New("mnist: nil set")
	case s.N < 0:
		return fmt.Errorf("mnist: set has negative size %d", s.N)
	case len(s.Images) != s.N*Pixels:
		return fmt.Errorf("mnist: set has %d image bytes, want %d for %d images", len(s.Images), s.N*Pixels, s.N)
	case len(s.Labels) != s.N:
		return fmt.Errorf("mnist: set has %d labels, want %d", len(s.Labels), s.N)
	}
	for i, l := range s.Labels {
		if l >= NumClasses {
			return fmt.Errorf("mnist: label %d at index %d out of range 0..%d", l, i, NumClasses-1)
		}
	}
	return nil
}

// gzipMagic starts every gzip stream; IDX files start with two zero bytes,
// so the two cannot be confused.
var gzipMagic = []byte{0x1f, 0x8b}

// decompress returns a reader of the uncompressed content of r, which may be
// raw or gzip-compressed.
func decompress(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(len(gzipMagic))
	if err != nil && err != io.EOF {
		return nil, err
	}
	if !bytes.Equal(head, gzipMagic) {
		return br, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return zr, nil
}

// readBody reads exactly want bytes from r and then requires end of input.
// It reads through a limit rather than allocating want bytes up front, so a
// header claiming billions of items cannot force a huge allocation before
// the truncation is noticed.
func readBody(r io.Reader, want int64, what string) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, want+1))
	if err != nil {
		return nil, err
	}
	switch n := int64(len(body)); {
	case n < want:
		return nil, fmt.Errorf("truncated: %d bytes of %s, want %d", n, what, want)
	case n > want:
		return nil, fmt.Errorf("trailing data after %d bytes of %s", want, what)
	}
	return body, nil
}

// readMagic reads the 4-byte IDX magic number and checks it first, so that
// passing the wrong kind of file is reported as such even when the file is
// also too short for the expected header.
func readMagic(r io.Reader, want uint32, kind string) error {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return fmt.Errorf("truncated header: %w", err)
	}
	if got := binary.BigEndian.Uint32(b[:]); got != want {
		return fmt.Errorf("bad magic 0x%08x, want 0x%08x (%s)", got, want, kind)
	}
	return nil
}

// DecodeImages decodes an IDX3 unsigned-byte image file of 28×28 images from
// r, which may be gzip-compressed. It returns the number of images and their
// pixels, row-major.
func DecodeImages(r io.Reader) (n int, images []uint8, err error) {
	r, err = decompress(r)
	if err != nil {
		return 0, nil, err
	}
	if err := readMagic(r, ImagesMagic, "IDX3 unsigned-byte images"); err != nil {
		return 0, nil, err
	}
	var hdr [imagesHeaderLen - 4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, fmt.Errorf("truncated header: %w", err)
	}
	count := binary.BigEndian.Uint32(hdr[0:])
	rows := binary.BigEndian.Uint32(hdr[4:])
	cols := binary.BigEndian.Uint32(hdr[8:])
	if rows != Rows || cols != Cols {
		return 0, nil, fmt.Errorf("images are %dx%d, want %dx%d", rows, cols, Rows, Cols)
	}
	body, err := readBody(r, int64(count)*Pixels, fmt.Sprintf("pixels for %d images", count))
	if err != nil {
		return 0, nil, err
	}
	return int(count), body, nil
}

// DecodeLabels decodes an IDX1 unsigned-byte label file from r, which may be
// gzip-compressed, and checks every label is a digit 0..9.
func DecodeLabels(r io.Reader) ([]uint8, error) {
	r, err := decompress(r)
	if err != nil {
		return nil, err
	}
	if err := readMagic(r, LabelsMagic, "IDX1 unsigned-byte labels"); err != nil {
		return nil, err
	}
	var hdr [labelsHeaderLen - 4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("truncated header: %w", err)
	}
	count := binary.BigEndian.Uint32(hdr[0:])
	labels, err := readBody(r, int64(count), fmt.Sprintf("labels for %d items", count))
	if err != nil {
		return nil, err
	}
	for i, l := range labels {
		if l >= NumClasses {
			return nil, fmt.Errorf("label %d at index %d out of range 0..%d", l, i, NumClasses-1)
		}
	}
	return labels, nil
}

// ReadImages reads an IDX3 image file, raw or gzip-compressed. Anything but
// a regular file is refused (see fileio.Open), so a FIFO cannot block it.
func ReadImages(path string) (n int, images []uint8, err error) {
	f, err := fileio.Open(path)
	if err != nil {
		return 0, nil, fmt.Errorf("mnist: %w", err)
	}
	defer f.Close()
	n, images, err = DecodeImages(f)
	if err != nil {
		return 0, nil, fmt.Errorf("mnist: read %s: %w", path, err)
	}
	return n, images, nil
}

// ReadLabels reads an IDX1 label file, raw or gzip-compressed. Anything but
// a regular file is refused, as by ReadImages.
func ReadLabels(path string) ([]uint8, error) {
	f, err := fileio.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mnist: %w", err)
	}
	defer f.Close()
	labels, err := DecodeLabels(f)
	if err != nil {
		return nil, fmt.Errorf("mnist: read %s: %w", path, err)
	}
	return labels, nil
}

// ReadSet reads a split from an image file and a label file and checks that
// they hold the same number of examples.
func ReadSet(imagesPath, labelsPath string) (*Set, error) {
	n, images, err := ReadImages(imagesPath)
	if err != nil {
		return nil, err
	}
	labels, err := ReadLabels(labelsPath)
	if err != nil {
		return nil, err
	}
	if len(labels) != n {
		return nil, fmt.Errorf("mnist: %s holds %d images but %s holds %d labels", imagesPath, n, labelsPath, len(labels))
	}
	return &Set{N: n, Images: images, Labels: labels}, nil
}
