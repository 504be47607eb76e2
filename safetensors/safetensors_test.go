package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lenspec/lenspec/internal/fileio"
)

// encode frames a header the way the reference writer does: 8-byte length,
// header padded with spaces to a multiple of 8, then data.
func encode(header string, data []byte) []byte {
	for len(header)%8 != 0 {
		header += " "
	}
	return frame(header, data)
}

// frame lays out a header verbatim, without padding.
func frame(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

// equalFiles compares content irrespective of tensor order.
func equalFiles(a, b *File) bool {
	if (a.Metadata == nil) != (b.Metadata == nil) || len(a.Metadata) != len(b.Metadata) {
		return false
	}
	for k, v := range a.Metadata {
		if w, ok := b.Metadata[k]; !ok || w != v {
			return false
		}
	}
	if len(a.Tensors) != len(b.Tensors) {
		return false
	}
	for i := range a.Tensors {
		ta := &a.Tensors[i]
		tb, ok := b.Tensor(ta.Name)
		if !ok || ta.DType != tb.DType || !slices.Equal(ta.Shape, tb.Shape) || !bytes.Equal(ta.Data, tb.Data) {
			return false
		}
	}
	return true
}

func mustWrite(t *testing.T, f *File) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, f); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	i32 := Tensor{Name: "ids", DType: Int32, Shape: []int{2}, Data: []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}}
	tests := []struct {
		name string
		file *File
	}{
		{"empty", &File{}},
		{"metadata only", &File{Metadata: map[string]string{"format": "pt", "b": "x"}}},
		{"empty metadata", &File{Metadata: map[string]string{}}},
		{"mixed", &File{
			Metadata: map[string]string{"format": "pt", "note": "ünïcødé \"q\" <&>"},
			Tensors: []Tensor{
				F32("w", []int{2, 3}, []float32{1, -2, 3.5, float32(math.NaN()), float32(math.Inf(-1)), 6}),
				F64("b", []int{2}, []float64{math.Pi, -1e300}),
				F32("scalar", []int{}, []float32{42}),
				F32("empty", []int{0}, nil),
				F64("empty2d", []int{0, 3}, nil),
				i32,
			},
		}},
		{"odd names", &File{Tensors: []Tensor{
			F32("a\"b\\c\n\x01\x7f", []int{1}, []float32{1}),
			F32("", []int{1}, []float32{2}),
			F32("日本", []int{1}, []float32{3}),
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustWrite(t, tt.file)
			got, err := Read(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if !equalFiles(got, tt.file) {
				t.Fatalf("round trip changed the file:\ngot  %+v\nwant %+v", got, tt.file)
			}
			// Writing what was read must give identical bytes.
			if again := mustWrite(t, got); !bytes.Equal(again, b) {
				t.Fatalf("re-encoding differs:\n%q\n%q", again, b)
			}
		})
	}

	f, err := Read(bytes.NewReader(mustWrite(t, tests[3].file)))
	if err != nil {
		t.Fatal(err)
	}
	w, _ := f.Tensor("w")
	got32, err := w.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if got32[0] != 1 || got32[2] != 3.5 || !math.IsNaN(float64(got32[3])) || !math.IsInf(float64(got32[4]), -1) {
		t.Errorf("w = %v", got32)
	}
	bt, _ := f.Tensor("b")
	got64, err := bt.Float64s()
	if err != nil || !slices.Equal(got64, []float64{math.Pi, -1e300}) {
		t.Errorf("b = %v, %v", got64, err)
	}
	s, _ := f.Tensor("scalar")
	if v, err := s.Float32s(); err != nil || !slices.Equal(v, []float32{42}) || len(s.Shape) != 0 {
		t.Errorf("scalar = %v %v, %v", v, s.Shape, err)
	}
	e, _ := f.Tensor("empty2d")
	if v, err := e.Float64s(); err != nil || len(v) != 0 || !slices.Equal(e.Shape, []int{0, 3}) {
		t.Errorf("empty2d = %v %v, %v", v, e.Shape, err)
	}
	if _, ok := f.Tensor("missing"); ok {
		t.Error("Tensor(missing) found something")
	}
	// F64 is written before F32. Read orders by offset, and the empty F64
	// and F32 tensors both sit at offset 16, so their names break the tie.
	var names []string
	for _, t := range f.Tensors {
		names = append(names, t.Name)
	}
	if want := []string{"b", "empty", "empty2d", "scalar", "w", "ids"}; !slices.Equal(names, want) {
		t.Errorf("file order %q, want %q", names, want)
	}
}

// TestDataIsolated checks that appending to one tensor's Data cannot clobber
// the bytes of the next tensor in the shared buffer.
func TestDataIsolated(t *testing.T) {
	f, err := Read(bytes.NewReader(mustWrite(t, &File{Tensors: []Tensor{
		F32("a", []int{1}, []float32{1}), F32("b", []int{1}, []float32{2}),
	}})))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.Tensor("a")
	_ = append(a.Data, 9, 9, 9, 9)
	b, _ := f.Tensor("b")
	if v, _ := b.Float32s(); v[0] != 2 {
		t.Errorf("b = %v after appending to a", v)
	}
}

// goldenHeader is the header the reference writer produces for the golden
// file: __metadata__ first, tensors by name (all F32), compact JSON, padded
// with one space from 143 to 144 bytes.
const goldenHeader = `{"__metadata__":{"format":"pt"},` +
	`"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},` +
	`"b":{"dtype":"F32","shape":[3],"data_offsets":[16,28]}}` + " "

// TestGolden checks byte-for-byte agreement with the reference layout.
//
// testdata/golden.safetensors was made once with python3 (json and struct
// only), following the reference writer's steps:
//
//	header = {"__metadata__": {"format": "pt"},
//	          "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
//	          "b": {"dtype": "F32", "shape": [3], "data_offsets": [16, 28]}}
//	h = json.dumps(header, separators=(",", ":")).encode()
//	h += b" " * ((8 - len(h) % 8) % 8)
//	data = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0) + struct.pack("<3f", 0.5, -1.5, 1e-3)
//	open("testdata/golden.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + data)
func TestGolden(t *testing.T) {
	if len(goldenHeader) != 144 {
		t.Fatalf("golden header is %d bytes", len(goldenHeader))
	}
	want := []byte{144, 0, 0, 0, 0, 0, 0, 0}
	want = append(want, goldenHeader...)
	for _, v := range []float32{1, 2, 3, 4, 0.5, -1.5, 1e-3} {
		want = binary.LittleEndian.AppendUint32(want, math.Float32bits(v))
	}
	disk, err := os.ReadFile(filepath.Join("testdata", "golden.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(disk, want) {
		t.Fatalf("testdata/golden.safetensors differs from the hand-built bytes")
	}

	// Tensor order in the File must not matter.
	f := &File{
		Metadata: map[string]string{"format": "pt"},
		Tensors: []Tensor{
			F32("b", []int{3}, []float32{0.5, -1.5, 1e-3}),
			F32("a", []int{2, 2}, []float32{1, 2, 3, 4}),
		},
	}
	if got := mustWrite(t, f); !bytes.Equal(got, want) {
		t.Errorf("Write:\n got %q\nwant %q", got, want)
	}

	g, err := ReadFile(filepath.Join("testdata", "golden.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if g.Metadata["format"] != "pt" || len(g.Metadata) != 1 || len(g.Tensors) != 2 {
		t.Fatalf("read %+v", g)
	}
	if g.Tensors[0].Name != "a" || g.Tensors[1].Name != "b" {
		t.Errorf("order %q, %q", g.Tensors[0].Name, g.Tensors[1].Name)
	}
	a, _ := g.Tensor("a")
	if v, err := a.Float32s(); err != nil || !slices.Equal(v, []float32{1, 2, 3, 4}) || !slices.Equal(a.Shape, []int{2, 2}) {
		t.Errorf("a = %v %v, %v", v, a.Shape, err)
	}
	b, _ := g.Tensor("b")
	if v, err := b.Float64s(); err != nil || !slices.Equal(v, []float64{0.5, -1.5, float64(float32(1e-3))}) {
		t.Errorf("b = %v, %v", v, err)
	}
}

// TestWriteLayout pins headers for layouts the reference writer documents in
// its own tests, and the dtype ordering.
func TestWriteLayout(t *testing.T) {
	six := []float32{0, 1, 2, 3, 4, 5}
	raw := func(name string, d DType, n int) Tensor {
		return Tensor{Name: name, DType: d, Shape: []int{n}, Data: make([]byte, n*d.Size())}
	}
	tests := []struct {
		name   string
		file   *File
		header string // unpadded
		pad    int
	}{
		{"empty", &File{}, `{}`, 6},
		{"metadata only", &File{Metadata: map[string]string{"framework": "pt"}},
			`{"__metadata__":{"framework":"pt"}}`, 5},
		{"already aligned", &File{Tensors: []Tensor{F32("attn.0", []int{1, 2, 3}, six)}},
			`{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}`, 0},
		{"padded", &File{Tensors: []Tensor{F32("attn0", []int{1, 1, 2, 3}, six)}},
			`{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}`, 7},
		{"metadata sorted", &File{Metadata: map[string]string{"z": "1", "a": "2"}},
			`{"__metadata__":{"a":"2","z":"1"}}`, 6},
		{"dtype order", &File{Tensors: []Tensor{
			raw("a", Float16, 1), raw("b", Float32, 1), raw("c", Float64, 1),
			raw("d", Uint8, 1), raw("e", Int64, 1), raw("f", Bool, 1), raw("g", BFloat16, 1),
		}},
			`{"e":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},` +
				`"c":{"dtype":"F64","shape":[1],"data_offsets":[8,16]},` +
				`"b":{"dtype":"F32","shape":[1],"data_offsets":[16,20]},` +
				`"g":{"dtype":"BF16","shape":[1],"data_offsets":[20,22]},` +
				`"a":{"dtype":"F16","shape":[1],"data_offsets":[22,24]},` +
				`"d":{"dtype":"U8","shape":[1],"data_offsets":[24,25]},` +
				`"f":{"dtype":"BOOL","shape":[1],"data_offsets":[25,26]}}`, 0},
		{"escapes", &File{Tensors: []Tensor{F32("q\"\\\b\f\n\r\t\x00\x1f\x7f<&>é", []int{}, []float32{1})}},
			`{"q\"\\\b\f\n\r\t\u0000\u001f` + "\x7f<&>é" + `":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustWrite(t, tt.file)
			h := tt.header + strings.Repeat(" ", tt.pad)
			if len(h)%8 != 0 {
				t.Fatalf("bad test: header length %d", len(h))
			}
			n := binary.LittleEndian.Uint64(got)
			if n != uint64(len(h)) || string(got[8:8+n]) != h {
				t.Errorf("header\n got %q (%d)\nwant %q (%d)", got[8:8+min(n, uint64(len(got)-8))], n, h, len(h))
			}
			if _, err := Read(bytes.NewReader(got)); err != nil {
				t.Errorf("Read: %v", err)
			}
		})
	}
}

func TestReadValid(t *testing.T) {
	f32 := func(vs ...float32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return b
	}
	tests := []struct {
		name   string
		input  []byte
		meta   map[string]string
		tensor string // name of a tensor whose float32 values are checked
		values []float32
		order  []string
	}{
		{name: "empty object", input: frame(`{}`, nil)},
		{name: "trailing whitespace", input: frame("{} \t\r\n  ", nil)},
		{name: "metadata null", input: encode(`{"__metadata__":null}`, nil)},
		{name: "metadata empty", input: encode(`{"__metadata__":{}}`, nil), meta: map[string]string{}},
		{name: "spaces inside", input: encode(`{ "x" : { "shape" : [ 1 ] , "data_offsets" : [ 0 , 4 ] , "dtype" : "F32" } }`, f32(7)),
			tensor: "x", values: []float32{7}},
		{name: "offsets out of key order", input: encode(`{"late":{"dtype":"F32","shape":[],"data_offsets":[4,8]},`+
			`"early":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, f32(1, 2)),
			tensor: "late", values: []float32{2}, order: []string{"early", "late"}},
		{name: "unknown field ignored", input: encode(`{"x":{"dtype":"F32","extra":{"a":[1,{"b":null}]},"shape":[1],"data_offsets":[0,4]}}`, f32(3)),
			tensor: "x", values: []float32{3}},
		{name: "escaped name", input: encode(`{"\u00e9\n":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32(5)),
			tensor: "é\n", values: []float32{5}},
		{name: "metadata after tensors", input: encode(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"__metadata__":{"k":"v"}}`, f32(1)),
			meta: map[string]string{"k": "v"}, tensor: "x", values: []float32{1}},
		{name: "zero-size tensors between others", input: encode(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},`+
			`"z":{"dtype":"F64","shape":[0],"data_offsets":[4,4]},"m":{"dtype":"I8","shape":[2,0],"data_offsets":[4,4]},`+
			`"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32(1, 2)),
			tensor: "b", values: []float32{2}, order: []string{"a", "m", "z", "b"}},
		{name: "huge dim times zero", input: encode(`{"x":{"dtype":"U8","shape":[0,9223372036854775807],"data_offsets":[0,0]}}`, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Read(bytes.NewReader(tt.input))
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if (tt.meta == nil) != (f.Metadata == nil) || len(tt.meta) != len(f.Metadata) {
				t.Errorf("metadata %#v, want %#v", f.Metadata, tt.meta)
			}
			for k, v := range tt.meta {
				if f.Metadata[k] != v {
					t.Errorf("metadata[%q] = %q, want %q", k, f.Metadata[k], v)
				}
			}
			if tt.tensor != "" {
				x, ok := f.Tensor(tt.tensor)
				if !ok {
					t.Fatalf("no tensor %q", tt.tensor)
				}
				if v, err := x.Float32s(); err != nil || !slices.Equal(v, tt.values) {
					t.Errorf("%s = %v, %v; want %v", tt.tensor, v, err, tt.values)
				}
			}
			if tt.order != nil {
				var names []string
				for _, x := range f.Tensors {
					names = append(names, x.Name)
				}
				if !slices.Equal(names, tt.order) {
					t.Errorf("order %q, want %q", names, tt.order)
				}
			}
		})
	}
}

// malformedInputs is shared with the fuzz seed corpus.
var malformedInputs = []struct {
	name  string
	input []byte
	want  string
}{
	{"empty", nil, "too short"},
	{"seven bytes", []byte{1, 0, 0, 0, 0, 0, 0}, "too short"},
	{"header over 100MB", binary.LittleEndian.AppendUint64(nil, 100_000_001), "exceeds the limit"},
	{"header length max uint64", binary.LittleEndian.AppendUint64(nil, math.MaxUint64), "exceeds the limit"},
	{"header past end of file", append(binary.LittleEndian.AppendUint64(nil, 16), "{}"...), "exceeds the 2 bytes"},
	{"zero-length header", frame("", nil), "does not start with '{'"},
	{"invalid UTF-8", frame("{\"\xff\":1}", nil), "not valid UTF-8"},
	{"leading space", frame(` {}`, nil), "does not start with '{'"},
	{"array", frame(`[]`, nil), "does not start with '{'"},
	{"string", frame(`"x"`, nil), "does not start with '{'"},
	{"unterminated", frame(`{"a":`, nil), "not valid JSON"},
	{"bare brace", frame(`{`, nil), "not valid JSON"},
	{"trailing comma", frame(`{"__metadata__":{},}`, nil), "not valid JSON"},
	{"second object", frame(`{} {}`, nil), "after the JSON object"},
	{"trailing garbage", frame(`{}x`, nil), "not valid JSON"},
	{"NUL padding", frame("{}\x00\x00", nil), "not valid JSON"},
	{"duplicate tensor", frame(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}`, nil), `duplicate key "a"`},
	{"duplicate metadata", frame(`{"__metadata__":{},"__metadata__":{}}`, nil), `duplicate key "__metadata__"`},
	{"duplicate metadata key", frame(`{"__metadata__":{"k":"1","k":"2"}}`, nil), `duplicate key "k"`},
	{"duplicate field", frame(`{"a":{"dtype":"U8","dtype":"U8","shape":[0],"data_offsets":[0,0]}}`, nil), `duplicate field "dtype"`},
	{"entry not object", frame(`{"a":[1]}`, nil), "entry is not an object"},
	{"entry null", frame(`{"a":null}`, nil), "entry is not an object"},
	{"missing dtype", frame(`{"a":{"shape":[0],"data_offsets":[0,0]}}`, nil), `missing field "dtype"`},
	{"missing shape", frame(`{"a":{"dtype":"U8","data_offsets":[0,0]}}`, nil), `missing field "shape"`},
	{"missing offsets", frame(`{"a":{"dtype":"U8","shape":[0]}}`, nil), `missing field "data_offsets"`},
	{"unknown dtype", frame(`{"a":{"dtype":"F128","shape":[0],"data_offsets":[0,0]}}`, nil), `unknown dtype "F128"`},
	{"lowercase dtype", frame(`{"a":{"dtype":"f32","shape":[0],"data_offsets":[0,0]}}`, nil), `unknown dtype "f32"`},
	{"dtype not string", frame(`{"a":{"dtype":4,"shape":[0],"data_offsets":[0,0]}}`, nil), "dtype is not a string"},
	{"negative dim", frame(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, nil), "shape: element 0: -1 is not a non-negative"},
	{"fractional dim", frame(`{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}`, nil), "shape: element 0: 1.0"},
	{"exponent dim", frame(`{"a":{"dtype":"U8","shape":[1e0],"data_offsets":[0,1]}}`, nil), "shape: element 0: 1e0"},
	{"dim over uint64", frame(`{"a":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,0]}}`, nil), "not a non-negative 64-bit integer"},
	{"dim over int", frame(`{"a":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]}}`, nil), "too large"},
	{"string dim", frame(`{"a":{"dtype":"U8","shape":["1"],"data_offsets":[0,1]}}`, nil), "shape: element 0 is not a number"},
	{"shape not array", frame(`{"a":{"dtype":"U8","shape":1,"data_offsets":[0,1]}}`, nil), "shape: not an array"},
	{"offsets one", frame(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0]}}`, nil), "data_offsets: want [begin, end], got 1"},
	{"offsets three", frame(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0,0]}}`, nil), "got 3"},
	{"offsets negative", frame(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[-1,0]}}`, nil), "data_offsets: element 0"},
	{"offsets object", frame(`{"a":{"dtype":"U8","shape":[0],"data_offsets":{}}}`, nil), "data_offsets: not an array"},
	{"begin after end", encode(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[2,1]}}`, []byte{0, 0}), "begin after they end"},
	{"size mismatch", encode(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)), "span 4 bytes, but shape [2] of F32 needs 8"},
	{"scalar needs one element", encode(`{"a":{"dtype":"F64","shape":[],"data_offsets":[0,0]}}`, nil), "needs 8"},
	{"overflow", encode(`{"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil), "overflows"},
	{"overflow before zero", encode(`{"a":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}`, nil), "overflows"},
	{"overflow by dtype size", encode(`{"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]}}`, nil), "overflows"},
	{"gap at start", encode(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, []byte{0, 0}), "leave a gap after offset 0"},
	{"gap between", encode(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}}`, []byte{0, 0, 0}), `tensor "b": data_offsets [2,3] leave a gap after offset 1`},
	{"overlap", encode(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, []byte{0, 0, 0}), "overlap the previous tensor ending at 2"},
	{"same range twice", encode(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, []byte{0, 0}), "overlap"},
	{"buffer too long", encode(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{0, 0}), "tensors cover 1 bytes, but the data buffer has 2"},
	{"data without tensors", frame(`{}`, []byte{0}), "tensors cover 0 bytes, but the data buffer has 1"},
	{"buffer too short", encode(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, []byte{0, 0}), "run past the 2-byte data buffer"},
	{"metadata value number", frame(`{"__metadata__":{"k":1}}`, nil), `value for key "k" is not a string`},
	{"metadata value null", frame(`{"__metadata__":{"k":null}}`, nil), `value for key "k" is not a string`},
	{"metadata value object", frame(`{"__metadata__":{"k":{}}}`, nil), `value for key "k" is not a string`},
	{"metadata not object", frame(`{"__metadata__":"pt"}`, nil), "__metadata__ is not an object"},
	{"metadata is tensor", frame(`{"__metadata__":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}`, nil), "is not a string"},
}

func TestReadMalformed(t *testing.T) {
	for _, tt := range malformedInputs {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Read(bytes.NewReader(tt.input))
			if err == nil {
				t.Fatalf("Read accepted %q: %+v", tt.input, f)
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("error %q does not wrap ErrFormat", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestWriteInvalid(t *testing.T) {
	ok := F32("ok", []int{1}, []float32{1})
	tests := []struct {
		name string
		file *File
		want string
	}{
		{"nil file", nil, "nil File"},
		{"short data", &File{Tensors: []Tensor{F32("a", []int{2, 2}, []float32{1, 2, 3})}}, `tensor "a": 12 data bytes, but shape [2 2] of F32 needs 16`},
		{"long data", &File{Tensors: []Tensor{F64("a", []int{}, []float64{1, 2})}}, "16 data bytes, but shape [] of F64 needs 8"},
		{"negative dim", &File{Tensors: []Tensor{F32("a", []int{-1}, nil)}}, "negative dimension"},
		{"overflow", &File{Tensors: []Tensor{F32("a", []int{1 << 40, 1 << 40}, nil)}}, "overflows"},
		{"unknown dtype", &File{Tensors: []Tensor{{Name: "a", DType: "F128", Shape: []int{0}}}}, `unknown dtype "F128"`},
		{"empty dtype", &File{Tensors: []Tensor{{Name: "a", Shape: []int{0}}}}, `unknown dtype ""`},
		{"duplicate name", &File{Tensors: []Tensor{ok, ok}}, `duplicate tensor name "ok"`},
		{"reserved name", &File{Tensors: []Tensor{F32("__metadata__", []int{1}, []float32{1})}}, "reserved"},
		{"invalid UTF-8 name", &File{Tensors: []Tensor{F32("\xff", []int{1}, []float32{1})}}, "not valid UTF-8"},
		{"invalid UTF-8 metadata", &File{Metadata: map[string]string{"k": "\xfe"}}, "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Write(&buf, tt.file)
			if err == nil {
				t.Fatal("Write accepted an invalid file")
			}
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want ErrFormat containing %q", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("Write wrote %d bytes before failing", buf.Len())
			}
		})
	}
}

func TestFileIO(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	f := &File{Metadata: map[string]string{"k": "v"}, Tensors: []Tensor{F32("w", []int{2}, []float32{1, 2})}}
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	// Overwrite, which must replace the file atomically.
	f.Tensors = append(f.Tensors, F64("x", []int{1}, []float64{3}))
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !equalFiles(got, f) {
		t.Errorf("ReadFile = %+v, want %+v", got, f)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v", st.Mode(), err)
	}

	bad := &File{Tensors: []Tensor{F32("a", []int{2}, nil)}}
	if err := WriteFile(path, bad); err == nil || !strings.Contains(err.Error(), path) || !errors.Is(err, ErrFormat) {
		t.Errorf("WriteFile(bad) = %v", err)
	}
	missingDir := filepath.Join(dir, "nope", "m.safetensors")
	if err := WriteFile(missingDir, f); err == nil || !strings.Contains(err.Error(), missingDir) {
		t.Errorf("WriteFile(missing dir) = %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("directory holds %v, want only m.safetensors (%v)", entries, err)
	}
	if again, err := ReadFile(path); err != nil || !equalFiles(again, f) {
		t.Errorf("failed WriteFile damaged the existing file: %v", err)
	}

	if _, err := ReadFile(missingDir); err == nil || !strings.Contains(err.Error(), missingDir) {
		t.Errorf("ReadFile(missing) = %v", err)
	}
	corrupt := filepath.Join(dir, "corrupt.safetensors")
	if err := os.WriteFile(corrupt, frame(`{"a":1}`, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(corrupt); err == nil || !strings.Contains(err.Error(), corrupt) || !errors.Is(err, ErrFormat) {
		t.Errorf("ReadFile(corrupt) = %v", err)
	}
}

func TestConversions(t *testing.T) {
	u16 := func(vs ...uint16) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint16(b, v)
		}
		return b
	}
	inf := math.Inf(1)
	tests := []struct {
		name string
		t    Tensor
		want []float64 // exact float64 values; NaN compares by IsNaN
	}{
		{"F16", Tensor{DType: Float16, Shape: []int{9}, Data: u16(0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x7c00, 0xfc00, 0x3555, 0x0400)},
			[]float64{1, -2, 65504, math.Ldexp(1, -24), math.Copysign(0, -1), inf, -inf, 0.333251953125, math.Ldexp(1, -14)}},
		{"F16 NaN", Tensor{DType: Float16, Shape: []int{1}, Data: u16(0x7e00)}, []float64{math.NaN()}},
		{"BF16", Tensor{DType: BFloat16, Shape: []int{4}, Data: u16(0x3f80, 0xc040, 0x7f80, 0x0001)},
			[]float64{1, -3, inf, math.Ldexp(1, -133)}},
		{"F8_E5M2", Tensor{DType: Float8E5M2, Shape: []int{4}, Data: []byte{0x3c, 0xc0, 0x7c, 0x01}},
			[]float64{1, -2, inf, math.Ldexp(1, -16)}},
		{"F8_E4M3", Tensor{DType: Float8E4M3, Shape: []int{6}, Data: []byte{0x38, 0xc0, 0x7e, 0x01, 0x08, 0x7f}},
			[]float64{1, -2, 448, math.Ldexp(1, -9), math.Ldexp(1, -6), math.NaN()}},
		{"F64", F64("", []int{2}, []float64{0.1, -1e-300}), []float64{0.1, -1e-300}},
	}
	same := func(a, b float64) bool {
		return a == b && math.Signbit(a) == math.Signbit(b) || math.IsNaN(a) && math.IsNaN(b)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.t.Float64s()
			if err != nil {
				t.Fatal(err)
			}
			got32, err := tt.t.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) || len(got32) != len(tt.want) {
				t.Fatalf("got %v and %v, want %v", got, got32, tt.want)
			}
			for i, w := range tt.want {
				if !same(got[i], w) {
					t.Errorf("Float64s[%d] = %v, want %v", i, got[i], w)
				}
				if !same(float64(got32[i]), float64(float32(w))) {
					t.Errorf("Float32s[%d] = %v, want %v", i, got32[i], float32(w))
				}
			}
		})
	}

	big := F64("big", []int{1}, []float64{1e300})
	if v, err := big.Float32s(); err != nil || !math.IsInf(float64(v[0]), 1) {
		t.Errorf("F64 1e300 as float32 = %v, %v", v, err)
	}
	for _, d := range []DType{Int32, Uint8, Bool, Int64} {
		x := Tensor{Name: "x", DType: d, Shape: []int{1}, Data: make([]byte, d.Size())}
		if _, err := x.Float32s(); err == nil || !strings.Contains(err.Error(), "cannot convert "+string(d)) {
			t.Errorf("%s Float32s error = %v", d, err)
		}
		if _, err := x.Float64s(); err == nil || !strings.Contains(err.Error(), "cannot convert") {
			t.Errorf("%s Float64s error = %v", d, err)
		}
	}
	short := Tensor{Name: "s", DType: Float32, Shape: []int{2}, Data: make([]byte, 7)}
	if _, err := short.Float32s(); !errors.Is(err, ErrFormat) {
		t.Errorf("short Float32s error = %v", err)
	}
	if _, err := short.Float64s(); !errors.Is(err, ErrFormat) {
		t.Errorf("short Float64s error = %v", err)
	}
	bogus := Tensor{Name: "s", DType: "X", Shape: []int{0}}
	if _, err := bogus.Float64s(); !errors.Is(err, ErrFormat) {
		t.Errorf("unknown dtype Float64s error = %v", err)
	}
}

func TestNumElements(t *testing.T) {
	tests := []struct {
		shape []int
		want  int
		err   bool
	}{
		{nil, 1, false},
		{[]int{0}, 0, false},
		{[]int{2, 3, 4}, 24, false},
		{[]int{2, -1}, 0, true},
		{[]int{1 << 32, 1 << 32}, 0, true},
	}
	for _, tt := range tests {
		x := Tensor{Shape: tt.shape}
		got, err := x.NumElements()
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("NumElements(%v) = %d, %v", tt.shape, got, err)
		}
	}
}

func TestCheckFinite(t *testing.T) {
	tests := []struct {
		name string
		t    Tensor
		want string // "" for no error
	}{
		{"finite F32", F32("a", []int{3}, []float32{1, -1e38, 0}), ""},
		{"NaN F32", F32("a", []int{4}, []float32{1, 2, float32(math.NaN()), float32(math.Inf(1))}), `tensor "a": element 2 is NaN`},
		{"Inf F64", F64("b", []int{2}, []float64{0, math.Inf(-1)}), "element 1 is -Inf"},
		{"Inf F16", Tensor{Name: "h", DType: Float16, Shape: []int{2}, Data: []byte{0, 0x3c, 0, 0x7c}}, "element 1 is +Inf"},
		{"NaN BF16", Tensor{Name: "h", DType: BFloat16, Shape: []int{1}, Data: []byte{0xc1, 0x7f}}, "element 0 is NaN"},
		{"NaN F8_E4M3", Tensor{Name: "h", DType: Float8E4M3, Shape: []int{2}, Data: []byte{0x7e, 0xff}}, "element 1 is NaN"},
		{"int", Tensor{Name: "i", DType: Int32, Shape: []int{1}, Data: []byte{0, 0, 0xc0, 0x7f}}, ""},
		{"empty", F32("e", []int{0}, nil), ""},
		{"malformed", Tensor{Name: "m", DType: Float32, Shape: []int{1}}, "needs 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.t.CheckFinite()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("CheckFinite = %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("CheckFinite = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestHelpersCopy(t *testing.T) {
	shape := []int{2}
	data := []float32{1, 2}
	x := F32("x", shape, data)
	shape[0], data[0] = 5, 9
	if x.Shape[0] != 2 {
		t.Error("F32 aliases its shape argument")
	}
	if v, _ := x.Float32s(); v[0] != 1 {
		t.Error("F32 aliases its data argument")
	}
	if x.DType.Size() != 4 || DType("nope").Size() != 0 {
		t.Error("Size")
	}
}

// TestAllDTypesOrder pins the data order for every dtype to the descending
// order of the reference's Dtype enum.
func TestAllDTypesOrder(t *testing.T) {
	want := []DType{Uint64, Int64, Float64, Float32, Uint32, Int32, BFloat16, Float16,
		Uint16, Int16, Float8E4M3, Float8E5M2, Int8, Uint8, Bool}
	f := &File{}
	for i := len(want) - 1; i >= 0; i-- {
		d := want[i]
		data := bytes.Repeat([]byte{byte(i)}, d.Size())
		f.Tensors = append(f.Tensors, Tensor{Name: string(d), DType: d, Shape: []int{}, Data: data})
	}
	got, err := Read(bytes.NewReader(mustWrite(t, f)))
	if err != nil {
		t.Fatal(err)
	}
	var order []DType
	for _, x := range got.Tensors {
		order = append(order, x.DType)
		if x.Name != string(x.DType) {
			t.Errorf("tensor %q has dtype %s", x.Name, x.DType)
		}
	}
	if !slices.Equal(order, want) {
		t.Errorf("data order %v, want %v", order, want)
	}
	if !equalFiles(got, f) {
		t.Error("round trip changed the file")
	}
}

// failWriter fails once more than n bytes have been written.
type failWriter struct{ n int }

var errFull = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errFull
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteError(t *testing.T) {
	f := &File{Tensors: []Tensor{F32("a", []int{2}, []float32{1, 2})}}
	size := len(mustWrite(t, f))
	for n := 0; n < size; n++ {
		err := Write(&failWriter{n: n}, f)
		if !errors.Is(err, errFull) || errors.Is(err, ErrFormat) {
			t.Errorf("limit %d: Write = %v", n, err)
		}
	}
	if err := Write(&failWriter{n: size}, f); err != nil {
		t.Errorf("Write with room = %v", err)
	}
}

// TestReadFileSpecial checks that ReadFile refuses what is not a regular
// file at once: /dev/zero never ends and a FIFO without a writer blocks.
func TestReadFileSpecial(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.safetensors")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/dev/zero", fifo, dir} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(p); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, fileio.ErrNotRegular) || !strings.Contains(err.Error(), p) {
				t.Errorf("ReadFile(%s) = %v, want fileio.ErrNotRegular naming the path", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadFile(%s) blocked", p)
		}
	}
}

// TestReadFileSize checks that a file whose size disagrees with what its
// header declares is refused with both sizes, and that a huge file is
// refused from its size alone rather than read.
func TestReadFileSize(t *testing.T) {
	dir := t.TempDir()
	good := mustWrite(t, &File{Tensors: []Tensor{F32("w", []int{2}, []float32{1, 2})}})
	n := len(good) // 8 + 64 header + 8 data
	tests := []struct {
		name string
		size int64 // the file is good, cut or extended (with zeros) to size
		want string
	}{
		{"truncated", int64(n - 1), fmt.Sprintf("file is %d bytes, but its header declares %d (8 + %d header + 8 data): truncated", n-1, n, n-16)},
		{"trailing byte", int64(n + 1), fmt.Sprintf("file is %d bytes, but its header declares %d (8 + %d header + 8 data): trailing bytes", n+1, n, n-16)},
		{"10 GB", 10 << 30, fmt.Sprintf("file is %d bytes, but its header declares %d", int64(10<<30), n)},
		{"header cut", 10, "header length"},
		{"length cut", 5, "5 bytes is too short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name+".safetensors")
			if err := os.WriteFile(p, good[:min(int64(n), tt.size)], 0o644); err != nil {
				t.Fatal(err)
			}
			// Truncate extends sparsely: the 10 GB file takes no disk space.
			if err := os.Truncate(p, tt.size); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFile(p)
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadFile = %v, want ErrFormat naming %s containing %q", err, p, tt.want)
			}
		})
	}
	// A data size beyond any file, from a corrupt offset, is refused too.
	huge := encode(`{"a":{"dtype":"U8","shape":[9223372036854775807],"data_offsets":[0,9223372036854775807]},`+
		`"b":{"dtype":"U8","shape":[9223372036854775807],"data_offsets":[9223372036854775807,18446744073709551614]}}`, nil)
	p := filepath.Join(dir, "huge.safetensors")
	if err := os.WriteFile(p, huge, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), "declares more than 2^64") {
		t.Fatalf("ReadFile(huge offsets) = %v", err)
	}
}

// TestInt32RoundTrip: token ids written as I32 read back exactly (the
// extremes included), and a float tensor is not read as ids.
func TestInt32RoundTrip(t *testing.T) {
	ids := []int32{0, 1, -1, 2147483647, -2147483648, 42}
	var buf bytes.Buffer
	if err := Write(&buf, &File{Tensors: []Tensor{I32("ids", []int{2, 3}, ids), F32("x", []int{1}, []float32{1})}}); err != nil {
		t.Fatal(err)
	}
	f, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	tt, _ := f.Tensor("ids")
	got, err := tt.Int32s()
	if err != nil || !slices.Equal(got, ids) {
		t.Fatalf("read back %v, %v", got, err)
	}
	x, _ := f.Tensor("x")
	if _, err := x.Int32s(); err == nil {
		t.Fatal("an F32 tensor was read as int32")
	}
}
