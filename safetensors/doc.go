// Package safetensors reads and writes the safetensors tensor file format as
// produced by the reference Python/Rust safetensors library.
//
// # Format
//
// A file is an 8-byte little-endian unsigned length N, then N bytes of UTF-8
// JSON (the header), then the data buffer holding every tensor's elements as
// little-endian bytes in row-major order. The header is an object mapping each
// tensor name to
//
//	{"dtype": "F32", "shape": [2, 2], "data_offsets": [begin, end]}
//
// where the offsets are relative to the start of the data buffer. The
// optional key "__metadata__" maps to an object of string values.
//
// # Validation
//
// Read applies the reference reader's checks, and a few stricter ones, and
// wraps [ErrFormat] in every error it reports for bad input:
//
//   - the file holds at least the 8-byte length, and N is at most 100,000,000
//     and at most the number of bytes that follow;
//   - the header is valid UTF-8, starts with '{', and is one JSON object
//     followed only by whitespace (the reference writer pads with spaces);
//   - no key appears twice, at any level (encoding/json would keep the last);
//   - every tensor entry is an object with "dtype", "shape" and
//     "data_offsets"; unknown extra fields are ignored, as by the reference;
//   - the dtype is one of BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16,
//     I32, U32, F32, F64, I64, U64;
//   - shape and data_offsets hold non-negative integers without fraction or
//     exponent, and data_offsets is exactly [begin, end] with begin ≤ end;
//   - end-begin equals product(shape) × dtype size, computed with overflow
//     checks, so a scalar (shape []) has one element and shape [0] none;
//   - sorted by offset, the tensors tile the data buffer exactly: the first
//     begins at 0, each begins where the previous ends, and the last ends at
//     the end of the file;
//   - "__metadata__" is an object whose values are all strings (or null, which
//     the reference treats as absent).
//
// ReadFile applies the same checks to a file, refuses anything but a regular
// file, and compares the file's size with what the header declares before
// reading the data, so it never reads more than a valid file would hold.
//
// A file whose "__metadata__" holds ChecksumKey is sealed: Read and
// ReadFile also check that the file's sha256, taken with that entry's 64
// hex digits replaced by ASCII zeros, is the value recorded, and refuse a
// file that is not (an error wrapping ErrChecksum and ErrFormat), or whose
// metadata has a key one byte off ChecksumKey (a damaged seal).
// WriteSealed writes such files; files without the key read as before.
//
// Values are stored faithfully: NaN and infinities are not an error here.
// [Tensor.CheckFinite] is there for callers that load model weights.
//
// # Writing
//
// Write reproduces the reference writer byte for byte: "__metadata__" comes
// first, then the tensors ordered by descending dtype rank in the reference's
// Dtype enum (which puts wider types first, so every tensor is aligned to its
// element size) and then by name; the data is laid out in the same order
// without gaps, and the header is padded with spaces to a multiple of 8
// bytes. Strings are escaped as serde_json does. The reference writes metadata
// keys in hash-map order; this package sorts them, so files with more than one
// metadata key are equivalent but not necessarily byte-identical.
package safetensors
