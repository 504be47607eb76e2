package safetensors

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead checks that Read never panics, that every rejection wraps
// ErrFormat, that ReadFile's size-bounded reader agrees with Read on every
// input, and that whatever Read accepts re-encodes with Write into a file
// that reads back to the same content and is a fixed point of re-encoding.
func FuzzRead(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "golden.safetensors"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	for _, tt := range malformedInputs {
		f.Add(tt.input)
	}
	f.Add(encode(`{"x":{"dtype":"F16","shape":[1,2],"data_offsets":[0,4]},"y":{"dtype":"I64","shape":[],"data_offsets":[4,12]},"__metadata__":{"a":"b","c":"d"}}`, make([]byte, 12)))
	f.Add(encode(`{"\u00e9":{"dtype":"BF16","shape":[0],"data_offsets":[0,0]},"z":{"dtype":"U8","extra":[1,{}],"shape":[1],"data_offsets":[0,1]}}`, []byte{7}))

	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := Read(bytes.NewReader(in))
		sized, serr := readSized(bytes.NewReader(in), int64(len(in)))
		if (err == nil) != (serr == nil) {
			t.Fatalf("Read and readSized disagree: %v vs %v", err, serr)
		}
		// A size that disagrees with the content is never accepted.
		if _, e := readSized(bytes.NewReader(in), int64(len(in))+1); e == nil {
			t.Fatal("readSized accepted a file one byte longer than its content")
		}
		if len(in) > 0 {
			if _, e := readSized(bytes.NewReader(in[:len(in)-1]), int64(len(in))); e == nil {
				t.Fatal("readSized accepted a file that shrank by one byte")
			}
		}
		if err != nil {
			if !errors.Is(err, ErrFormat) || !errors.Is(serr, ErrFormat) {
				t.Fatalf("error does not wrap ErrFormat: %v; %v", err, serr)
			}
			return
		}
		if !equalFiles(got, sized) {
			t.Fatalf("Read and readSized differ:\n%+v\n%+v", got, sized)
		}
		for i := range got.Tensors {
			x := &got.Tensors[i]
			// Conversions must not panic on anything Read accepted.
			_, _ = x.Float64s()
			if err := x.CheckFinite(); errors.Is(err, ErrFormat) {
				t.Fatalf("accepted tensor %q fails its own check: %v", x.Name, err)
			}
		}
		var buf bytes.Buffer
		if err := Write(&buf, got); err != nil {
			t.Fatalf("Write rejected what Read accepted: %v", err)
		}
		enc := bytes.Clone(buf.Bytes())
		back, err := Read(bytes.NewReader(enc))
		if err != nil {
			t.Fatalf("Read of re-encoded file: %v\n%q", err, enc)
		}
		if !equalFiles(got, back) {
			t.Fatalf("re-encoding changed content:\n got %+v\nback %+v", got, back)
		}
		buf.Reset()
		if err := Write(&buf, back); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), enc) {
			t.Fatalf("second encoding differs:\n%q\n%q", buf.Bytes(), enc)
		}
	})
}
