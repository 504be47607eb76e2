package bpe

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func FuzzEncodeDecode(f *testing.F) {
	texts := slices.Clone(smallCorpus)
	for _, s := range trickyStrings {
		texts = append(texts, s, s) // so that odd characters enter the alphabet
	}
	tok, err := Train(texts, TrainOptions{VocabSize: smallVocab})
	if err != nil {
		f.Fatal(err)
	}
	ref := newRefEncoder(tok)
	for _, s := range trickyStrings {
		f.Add(s)
	}
	f.Add("Die Kommission muss handeln,\tbevor es zu spät ist.\n")
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		for _, id := range ids {
			if id < byteBase || id >= tok.Size() {
				t.Fatalf("Encode(%q) emits id %d", s, id)
			}
		}
		got, err := tok.Decode(ids)
		if err != nil {
			t.Fatal(err)
		}
		if got != s {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
		// The reference is quadratic in the word length; mergeShort and
		// mergeLong are compared on long words in TestEncodeMatchesReference.
		if len(s) > 300 {
			return
		}
		if pcs, want := tok.EncodePieces(s), ref.encode(s); !slices.Equal(pcs, want) {
			t.Fatalf("EncodePieces(%q) = %q, reference %q", s, pcs, want)
		}
	})
}

func FuzzLoad(f *testing.F) {
	// A vocab starting with "@" stands for the 260 fixed special and byte
	// entries followed by the rest. Mutations then concentrate on the
	// alphabet and merges, and inputs stay small: the fuzzer minimizes
	// every new input, which for kilobyte inputs would eat the whole
	// fuzzing time.
	base := vocabOf(baseTokens())
	base = base[:len(base)-1] + ","
	f.Add(`@"a":260,"b":261,"▁":262,"ab":263,"▁ab":264}`, "#version: 0.2\na b\n▁ ab\n")
	f.Add(`@"a":260,"b":261,"c":262,"▁":263,"ab":264,"abc":265,"▁a":266}`, validMerges)
	f.Add(`@"x":260,"y":261,"xy":262,"xyx":263,"xyxy":264}`, "#version: 0.2\nx y\nxy x\nxy xy\n")
	f.Add(`@"ä":260,"ß":261}`, "#version: 0.2\n")
	f.Add(`@"a":260,"b":261,"ab":262}`, "#version: 0.2\nab c\n")
	f.Add(`@"a":260,"b":261,"ab":262}`, "#version: 0.2\r\na b\r\n")
	f.Add(`@"a":260,"a":261}`, "#version: 0.2\n")
	f.Add(`@"a":1e3}`, "#version: 0.2\n")
	f.Add(`@"\n":260}`, "#version: 0.2\n")
	f.Add(`@"<0x41>b":260}`, "#version: 0.2\n<0x41> b\n")
	f.Add(`{"<pad>":0,"<s>":1,"</s>":2,"<unk>":3}`, "#version: 0.2\n")
	f.Add("{}", "")
	f.Add("", "#version: 0.2")
	const vpath, mpath = "dir/vocab.json", "dir/merges.txt"
	probes := []string{"", " a b  abc\t▁\xff", "xyxyxyx ä ß", "<s>"}
	f.Fuzz(func(t *testing.T, vocab, merges string) {
		if rest, ok := strings.CutPrefix(vocab, "@"); ok {
			vocab = base + rest
		}
		tok, err := parse(vpath, []byte(vocab), mpath, []byte(merges))
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || (fe.Path != vpath && fe.Path != mpath) {
				t.Fatalf("error %v is not a *FormatError naming a file", err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, fe.Path) {
				t.Fatalf("error %q is not one line naming the file", msg)
			}
			return
		}
		// Whatever loads is a lossless tokenizer that saves and loads
		// back unchanged, and encodes as the reference does.
		again, err := parse(vpath, tok.vocabJSON(), mpath, tok.mergesText())
		if err != nil {
			t.Fatalf("reloading a saved tokenizer: %v", err)
		}
		if !slices.Equal(again.tokens, tok.tokens) || !slices.Equal(again.merges, tok.merges) {
			t.Fatal("saved and reloaded tokenizer differs")
		}
		ref := newRefEncoder(tok)
		texts := append(probes, merges)
		if len(vocab) < len(base)+200 {
			texts = append(texts, vocab[len(base)-1:])
		}
		for _, s := range texts {
			if got, err := tok.Decode(tok.Encode(s)); err != nil || got != s {
				t.Fatalf("round trip of %q gave %q, %v", s, got, err)
			}
			if len(s) > 300 {
				continue // the reference is slow
			}
			if got, want := tok.EncodePieces(s), ref.encode(s); !slices.Equal(got, want) {
				t.Fatalf("EncodePieces(%q) = %q, reference %q", s, got, want)
			}
		}
	})
}
