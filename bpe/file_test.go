package bpe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSaveLoad(t *testing.T) {
	tok := trainSmall(t)
	dir := filepath.Join(t.TempDir(), "new", "dir") // Save creates it
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	// Saving again replaces the files.
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Size() != tok.Size() || !slices.Equal(got.tokens, tok.tokens) || !slices.Equal(got.merges, tok.merges) || got.numAlpha != tok.numAlpha {
		t.Fatal("loaded tokenizer differs from the saved one")
	}
	for _, s := range append(slices.Clone(trickyStrings), smallCorpus...) {
		if a, b := tok.Encode(s), got.Encode(s); !slices.Equal(a, b) {
			t.Errorf("Encode(%q): saved %v, loaded %v", s, a, b)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries, want just the two files (no temporary files)", len(entries))
	}
	m, _ := os.ReadFile(filepath.Join(dir, MergesFile))
	if !strings.HasPrefix(string(m), "#version: 0.2\n") || strings.Count(string(m), "\n") != len(tok.merges)+1 {
		t.Errorf("merges.txt does not have the header and one line per merge")
	}
	v, _ := os.ReadFile(filepath.Join(dir, VocabFile))
	for _, want := range []string{`"<pad>": 0,`, `"<0x0A>": 14,`, `"▁": `} {
		if !strings.Contains(string(v), want) {
			t.Errorf("vocab.json lacks %s", want)
		}
	}
	// A symbolic link to a regular file is followed.
	link := t.TempDir()
	for _, name := range []string{VocabFile, MergesFile} {
		if err := os.Symlink(filepath.Join(dir, name), filepath.Join(link, name)); err != nil {
			t.Skip("no symlinks:", err)
		}
	}
	if _, err := Load(link); err != nil {
		t.Errorf("Load through symlinks: %v", err)
	}
}

// validTokens is a hand-made vocabulary: alphabet a b c ▁ (ids 260-263),
// merges "a b", "ab c", "▁ a" (ids 264-266).
func validTokens() []string {
	return append(baseTokens(), "a", "b", "c", "▁", "ab", "abc", "▁a")
}

const validMerges = "#version: 0.2\na b\nab c\n▁ a\n"

// vocabOf writes tokens as vocab.json with ids by position.
func vocabOf(tokens []string) string {
	var b strings.Builder
	b.WriteString("{")
	for id, tok := range tokens {
		if id > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%s:%d", appendJSONString(nil, tok), id)
	}
	b.WriteString("}")
	return b.String()
}

// replaceToken returns validTokens with the token at id replaced.
func replaceToken(id int, tok string) []string {
	t := validTokens()
	t[id] = tok
	return t
}

func TestLoadValid(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, VocabFile), []byte(vocabOf(validTokens())), 0o644)
	os.WriteFile(filepath.Join(dir, MergesFile), []byte(validMerges), 0o644)
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.EncodePieces("abc cab a"); !slices.Equal(got, []string{"abc", "▁", "c", "ab", "▁a"}) {
		t.Errorf("EncodePieces = %q", got)
	}
	// No final newline is fine too.
	os.WriteFile(filepath.Join(dir, MergesFile), []byte(strings.TrimSuffix(validMerges, "\n")), 0o644)
	if _, err := Load(dir); err != nil {
		t.Error(err)
	}
}

func TestLoadErrors(t *testing.T) {
	valid := vocabOf(validTokens())
	okVocab := valid[:len(valid)-1] // without the closing brace
	tests := []struct {
		name   string
		vocab  string // written as vocab.json unless setup says otherwise
		merges string
		file   string // the file the error must name
		want   string
	}{
		{"vocab not JSON", "{", validMerges, VocabFile, "invalid JSON"},
		{"vocab empty", "", validMerges, VocabFile, "invalid JSON"},
		{"vocab array", "[]", validMerges, VocabFile, "want a JSON object"},
		{"vocab trailing data", valid + "{}", validMerges, VocabFile, "data after the JSON object"},
		{"vocab invalid UTF-8", "{\"\xff\":0}", validMerges, VocabFile, "not valid UTF-8"},
		{"duplicate token", okVocab + `,"a":267}`, validMerges, VocabFile, `token "a" appears twice`},
		{"duplicate id", okVocab + `,"zz":266}`, validMerges, VocabFile, `both have id 266`},
		{"id gap", okVocab + `,"zz":300}`, validMerges, VocabFile, "no gaps"},
		{"negative id", okVocab + `,"zz":-1}`, validMerges, VocabFile, `id of "zz" is -1, not a non-negative integer`},
		{"fraction id", okVocab + `,"zz":267.0}`, validMerges, VocabFile, "not a non-negative integer"},
		{"exponent id", okVocab + `,"zz":2.67e2}`, validMerges, VocabFile, "not a non-negative integer"},
		{"huge id", okVocab + `,"zz":99999999999999999999999}`, validMerges, VocabFile, "not a non-negative integer"},
		{"string id", okVocab + `,"zz":"267"}`, validMerges, VocabFile, "is a string"},
		{"null id", okVocab + `,"zz":null}`, validMerges, VocabFile, "is null"},
		{"object id", okVocab + `,"zz":{}}`, validMerges, VocabFile, "is an object"},
		{"missing special", vocabOf(replaceToken(UnkID, "<unknown>")), validMerges, VocabFile, `id 3 is "<unknown>", want the special token "<unk>"`},
		{"swapped specials", vocabOf(func() []string {
			t := validTokens()
			t[BOSID], t[EOSID] = t[EOSID], t[BOSID]
			return t
		}()), validMerges, VocabFile, `id 1 is "</s>", want the special token "<s>"`},
		{"lowercase byte token", vocabOf(replaceToken(byteBase+10, "<0x0a>")), validMerges, VocabFile, `id 14 is "<0x0a>", want the byte token "<0x0A>"`},
		{"too few tokens", vocabOf(validTokens()[:100]), validMerges, VocabFile, "fewer than the 260 special and byte tokens"},
		{"alphabet not one character", vocabOf(slices.Insert(validTokens(), 264, "xy")), validMerges, VocabFile, `token "xy" (id 264) is neither one character nor the result of a merge`},
		{"alphabet empty token", vocabOf(slices.Insert(validTokens(), 264, "")), validMerges, VocabFile, `token "" (id 264)`},
		{"alphabet newline", vocabOf(replaceToken(262, "\n")[:264]), "#version: 0.2\n", VocabFile, `token "\n" (id 262) is a space, control`},
		{"alphabet space", vocabOf(replaceToken(262, " ")[:264]), "#version: 0.2\n", VocabFile, `token " " (id 262) is a space`},
		{"alphabet line separator", vocabOf(replaceToken(262, "\u2028")[:264]), "#version: 0.2\n", VocabFile, `(id 262) is a space, control or line-separator`},

		{"merges empty", valid, "", MergesFile, `line 1: "": want "#version: 0.2"`},
		{"merges no header", valid, "a b\nab c\n▁ a\n", MergesFile, `line 1: "a b": want "#version: 0.2"`},
		{"merges wrong version", valid, "#version: 0.3\na b\nab c\n▁ a\n", MergesFile, "line 1:"},
		{"three tokens", valid, "#version: 0.2\na b\nab c x\n▁ a\n", MergesFile, `line 3: "ab c x": want two tokens separated by one space`},
		{"one token", valid, "#version: 0.2\na b\nabc\n▁ a\n", MergesFile, `line 3: "abc": want two tokens`},
		{"double space", valid, "#version: 0.2\na  b\nab c\n▁ a\n", MergesFile, `line 2: "a  b": want two tokens`},
		{"empty line", valid, "#version: 0.2\na b\n\n▁ a\n", MergesFile, `line 3: "": want two tokens`},
		{"trailing space", valid, "#version: 0.2\na b \nab c\n▁ a\n", MergesFile, `line 2: "a b ": want two tokens`},
		{"CRLF", valid, "#version: 0.2\r\na b\r\nab c\r\n▁ a\r\n", MergesFile, `line 1: "#version: 0.2\r"`},
		{"part not in vocab", valid, "#version: 0.2\na b\nab x\n▁ a\n", MergesFile, `line 3: "ab x": "x" is not in vocab.json`},
		{"result not in vocab", valid, "#version: 0.2\na b\nab c\n▁ b\n", MergesFile, `line 4: "▁ b": the result "▁b" is not in vocab.json`},
		{"result out of order", valid, "#version: 0.2\na b\n▁ a\nab c\n", MergesFile, `line 3: "▁ a": the result "▁a" has id 266 in vocab.json, want 265`},
		{"byte token in merge", vocabOf(append(validTokens()[:264], "<0x41>b")), "#version: 0.2\n<0x41> b\n", MergesFile, `"<0x41>" is a special or byte token`},
		{"special token in merge", vocabOf(append(validTokens()[:264], "<s>a")), "#version: 0.2\n<s> a\n", MergesFile, `"<s>" is a special or byte token`},
		{"part from later merge", valid, "#version: 0.2\nab c\na b\n▁ a\n", MergesFile, `line 2: "ab c": "ab" (id 264) is made by a later merge`},
		{"duplicate merge", valid, "#version: 0.2\na b\na b\n▁ a\n", MergesFile, `line 3: "a b": the result "ab" has id 264 in vocab.json, want 265`},
		{"too many merges", valid, validMerges + strings.Repeat("a b\n", 10), MergesFile, "13 merges, but vocab.json has only 7 tokens after the byte tokens"},
		{"merges invalid UTF-8", valid, "#version: 0.2\na \xff\nab c\n▁ a\n", MergesFile, `"\xff" is not in vocab.json`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, VocabFile), []byte(tc.vocab), 0o644)
			os.WriteFile(filepath.Join(dir, MergesFile), []byte(tc.merges), 0o644)
			_, err := Load(dir)
			checkLoadError(t, err, filepath.Join(dir, tc.file), tc.want)
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Path != filepath.Join(dir, tc.file) {
				t.Errorf("error is not a *FormatError for the file: %#v", err)
			}
		})
	}
}

// checkLoadError checks that err is one line naming path and containing want.
func checkLoadError(t *testing.T, err error, path, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("Load succeeded, want an error containing %q", want)
	}
	msg := err.Error()
	if !strings.Contains(msg, path) || !strings.Contains(msg, want) {
		t.Errorf("error %q\nwant it to name %s and contain %q", msg, path, want)
	}
	if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "bpe: ") {
		t.Errorf("error %q is not one line starting with \"bpe: \"", msg)
	}
}

func TestLoadFileErrors(t *testing.T) {
	write := func(dir string) {
		os.WriteFile(filepath.Join(dir, VocabFile), []byte(vocabOf(validTokens())), 0o644)
		os.WriteFile(filepath.Join(dir, MergesFile), []byte(validMerges), 0o644)
	}
	tests := []struct {
		name  string
		setup func(dir string) // after the valid files are written
		file  string
		want  string
		is    error
	}{
		{"no vocab.json", func(dir string) { os.Remove(filepath.Join(dir, VocabFile)) }, VocabFile, "no such file", fs.ErrNotExist},
		{"no merges.txt", func(dir string) { os.Remove(filepath.Join(dir, MergesFile)) }, MergesFile, "no such file", fs.ErrNotExist},
		{"vocab.json directory", func(dir string) {
			p := filepath.Join(dir, VocabFile)
			os.Remove(p)
			os.Mkdir(p, 0o755)
		}, VocabFile, "not a regular file (it is a directory)", nil},
		{"merges.txt directory", func(dir string) {
			p := filepath.Join(dir, MergesFile)
			os.Remove(p)
			os.Mkdir(p, 0o755)
		}, MergesFile, "it is a directory", nil},
		{"vocab.json too large", func(dir string) {
			if err := os.Truncate(filepath.Join(dir, VocabFile), maxFileSize+1); err != nil {
				t.Skip(err)
			}
		}, VocabFile, "file too large", nil},
		{"dangling symlink", func(dir string) {
			p := filepath.Join(dir, MergesFile)
			os.Remove(p)
			if err := os.Symlink(filepath.Join(dir, "nowhere"), p); err != nil {
				t.Skip(err)
			}
		}, MergesFile, "no such file", fs.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(dir)
			tc.setup(dir)
			_, err := Load(dir)
			checkLoadError(t, err, filepath.Join(dir, tc.file), tc.want)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v does not wrap %v", err, tc.is)
			}
		})
	}
}

func TestSaveErrors(t *testing.T) {
	tok := trainSmall(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, VocabFile), 0o755); err != nil {
		t.Fatal(err)
	}
	err := tok.Save(dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, VocabFile)) {
		t.Errorf("Save over a directory: err = %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	if err := tok.Save(file); err == nil {
		t.Error("Save into a regular file succeeded")
	}
}
